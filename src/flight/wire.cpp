// FlightData's framing by hand: header and small pieces in one copied slice, large body pieces
// lent to gRPC as slices over the batch's memory.
#include "flight/wire.hpp"

#include <grpcpp/support/slice.h>

#include <cstring>
#include <vector>

#include "ferry/device/device.hpp"
#include "flight/grpc_order.hpp"

namespace ferry::flight::internal {

namespace {

constexpr uint32_t kLengthDelimited = 2;

void PutTag(std::string* out, uint32_t field, uint32_t wire_type) {
  PutVarint(out, (static_cast<uint64_t>(field) << 3) | wire_type);
}

// Called by gRPC, on one of its threads, when the last reference to a lent slice goes: drops the
// keep-alive, which Lend handed off.
void ReleaseKeepAlive(void* holder) {
  GrpcTakeBack(holder);
  delete static_cast<std::shared_ptr<const void>*>(holder);
}

// Collects the slices of one message: copied bytes accumulate in `pending` and become one slice
// when a lent slice follows or the message ends.
class SliceList {
 public:
  std::string& pending() { return pending_; }
  void Lend(const void* data, int64_t size, const std::shared_ptr<const void>& keep_alive) {
    Flush();
    auto* holder = new std::shared_ptr<const void>(keep_alive);
    GrpcHandOff(holder);
    // gRPC's API takes a mutable pointer; it never writes through a slice it was lent.
    slices_.emplace_back(const_cast<void*>(data), static_cast<size_t>(size), ReleaseKeepAlive,
                         holder);
  }
  grpc::ByteBuffer Finish() {
    Flush();
    return grpc::ByteBuffer(slices_.data(), slices_.size());
  }

 private:
  void Flush() {
    if (pending_.empty()) return;
    slices_.emplace_back(pending_);
    pending_.clear();
  }
  std::string pending_;
  std::vector<grpc::Slice> slices_;
};

// Reads protobuf fields across gRPC's slices without gathering them.
class Cursor {
 public:
  explicit Cursor(const std::vector<grpc::Slice>& slices) : slices_(slices) {
    for (const grpc::Slice& s : slices_) total_ += static_cast<int64_t>(s.size());
  }
  int64_t offset() const { return offset_; }
  int64_t remaining() const { return total_ - offset_; }
  bool done() const { return offset_ >= total_; }

  Result<uint64_t> Varint(const char* what) {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (done()) return Truncated(what);
      const uint8_t byte = Byte();
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return Status::Invalid("FlightData: the varint of " + std::string(what) + " at byte " +
                           std::to_string(offset_) + " runs past 10 bytes");
  }

  // The next `size` bytes as pieces of the slices (no copy).
  Result<std::vector<std::pair<const grpc::Slice*, ByteSpan>>> Take(int64_t size,
                                                                    const char* what) {
    if (size > remaining()) {
      return Status::Invalid("FlightData: " + std::string(what) + " at byte " +
                             std::to_string(offset_) + " says " + std::to_string(size) +
                             " bytes but " + std::to_string(remaining()) + " remain");
    }
    std::vector<std::pair<const grpc::Slice*, ByteSpan>> pieces;
    while (size > 0) {
      const grpc::Slice& s = slices_[slice_];
      const int64_t n = std::min<int64_t>(size, static_cast<int64_t>(s.size()) - in_slice_);
      pieces.emplace_back(&s, ByteSpan{s.begin() + in_slice_, n});
      Advance(n);
      size -= n;
    }
    return pieces;
  }

  Status Skip(int64_t size, const char* what) { return Take(size, what).status(); }

 private:
  uint8_t Byte() {
    const uint8_t b = slices_[slice_].begin()[in_slice_];
    Advance(1);
    return b;
  }
  void Advance(int64_t n) {
    offset_ += n;
    in_slice_ += n;
    while (slice_ < slices_.size() && in_slice_ >= static_cast<int64_t>(slices_[slice_].size())) {
      in_slice_ -= static_cast<int64_t>(slices_[slice_].size());
      ++slice_;
    }
  }
  Status Truncated(const char* what) const {
    return Status::Invalid("FlightData: the message ends inside the varint of " +
                           std::string(what) + " at byte " + std::to_string(offset_));
  }

  const std::vector<grpc::Slice>& slices_;
  int64_t total_ = 0;
  int64_t offset_ = 0;
  size_t slice_ = 0;
  int64_t in_slice_ = 0;
};

// One copy of a body that arrived in several slices, into memory of the CPU device: blocks of
// 4 MiB and more are mapped with transparent huge pages and nothing is zeroed first, so a 64 MiB
// body costs its copy and a few dozen page faults rather than 16,384.
Result<SharedBytes> GatherBody(const std::vector<std::pair<const grpc::Slice*, ByteSpan>>& pieces) {
  int64_t total = 0;
  for (const auto& p : pieces) total += p.second.size;
  Device* cpu = CpuDevice();
  FERRY_ASSIGN_OR_RAISE(void* memory, cpu->Allocate(total, nullptr));
  auto* out = static_cast<uint8_t*>(memory);
  int64_t at = 0;
  for (const auto& p : pieces) {
    std::memcpy(out + at, p.second.data, static_cast<size_t>(p.second.size));
    at += p.second.size;
  }
  std::shared_ptr<const void> owner(
      out, [cpu, total](const void* block) { cpu->Free(const_cast<void*>(block), total); });
  return SharedBytes{out, total, std::move(owner)};
}

std::string Gather(const std::vector<std::pair<const grpc::Slice*, ByteSpan>>& pieces) {
  std::string out;
  for (const auto& [slice, span] : pieces) {
    out.append(reinterpret_cast<const char*>(span.data), static_cast<size_t>(span.size));
  }
  return out;
}

}  // namespace

void PutVarint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

grpc::ByteBuffer EncodeFlightData(const ipc::EncodedMessage& message,
                                  const std::shared_ptr<const void>& keep_alive,
                                  const std::string& descriptor) {
  SliceList slices;
  std::string& head = slices.pending();
  if (!descriptor.empty()) {
    PutTag(&head, kDescriptorField, kLengthDelimited);
    PutVarint(&head, descriptor.size());
    head += descriptor;
  }
  PutTag(&head, kDataHeaderField, kLengthDelimited);
  PutVarint(&head, static_cast<uint64_t>(message.metadata.size));
  head.append(reinterpret_cast<const char*>(message.metadata.data),
              static_cast<size_t>(message.metadata.size));
  if (message.has_body && message.body_length > 0) {
    PutTag(&head, kDataBodyField, kLengthDelimited);
    PutVarint(&head, static_cast<uint64_t>(message.body_length));
    for (const ByteSpan& piece : message.body) {
      if (piece.size <= 0) continue;
      if (!message.in_place || piece.size < kSmallPiece) {
        slices.pending().append(reinterpret_cast<const char*>(piece.data),
                                static_cast<size_t>(piece.size));
      } else {
        slices.Lend(piece.data, piece.size, keep_alive);
      }
    }
  }
  return slices.Finish();
}

Result<FlightDataView> DecodeFlightData(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok())
    return Status::Invalid("FlightData: gRPC gave an unreadable buffer");
  Cursor in(slices);
  FlightDataView out;
  out.wire_bytes = in.remaining();
  while (!in.done()) {
    const int64_t at = in.offset();
    FERRY_ASSIGN_OR_RAISE(uint64_t key, in.Varint("a field's key"));
    const auto field = static_cast<uint32_t>(key >> 3);
    const auto wire_type = static_cast<uint32_t>(key & 7);
    if (wire_type == 0) {
      FERRY_RETURN_NOT_OK(in.Varint("a varint field").status());
      continue;
    }
    if (wire_type == 1 || wire_type == 5) {
      FERRY_RETURN_NOT_OK(in.Skip(wire_type == 1 ? 8 : 4, "a fixed-size field"));
      continue;
    }
    if (wire_type != kLengthDelimited) {
      return Status::Invalid("FlightData: field " + std::to_string(field) + " at byte " +
                             std::to_string(at) + " has wire type " + std::to_string(wire_type) +
                             ", which proto3 messages do not use");
    }
    FERRY_ASSIGN_OR_RAISE(uint64_t length, in.Varint("a length"));
    if (length > static_cast<uint64_t>(in.remaining())) {
      return Status::Invalid("FlightData: field " + std::to_string(field) + " at byte " +
                             std::to_string(at) + " says " + std::to_string(length) +
                             " bytes but " + std::to_string(in.remaining()) + " remain");
    }
    const char* name = field == kDataBodyField     ? "data_body"
                       : field == kDataHeaderField ? "data_header"
                                                   : "a field";
    FERRY_ASSIGN_OR_RAISE(auto pieces, in.Take(static_cast<int64_t>(length), name));
    switch (field) {
      case kDescriptorField:
        out.descriptor = Gather(pieces);
        out.has_descriptor = true;
        break;
      case kDataHeaderField:
        out.header = Gather(pieces);
        break;
      case kAppMetadataField:
        out.app_metadata = Gather(pieces);
        break;
      case kDataBodyField:
        if (pieces.size() == 1) {
          // In gRPC's own receive buffer: the slice's reference keeps it alive. The pointer is
          // taken again from the copy, since a small slice holds its bytes inline.
          auto owner = std::make_shared<grpc::Slice>(*pieces[0].first);
          const int64_t offset =
              static_cast<const uint8_t*>(pieces[0].second.data) - pieces[0].first->begin();
          out.body = SharedBytes{owner->begin() + offset, pieces[0].second.size, owner};
        } else if (pieces.empty()) {
          out.body = SharedBytes{};
        } else {
          FERRY_ASSIGN_OR_RAISE(out.body, GatherBody(pieces));
        }
        break;
      default:
        break;  // a field of a later Flight version: skipped, as protobuf does
    }
  }
  return out;
}

}  // namespace ferry::flight::internal
