// ferry's pairs over UCX: the bytes of a metadata message and its body in one tagged message.
#include "transport/ucx/pair.hpp"

#include <cstring>
#include <string>

#include "ferry/core/hex.hpp"

namespace ferry::transport::internal::ucx {

Result<std::shared_ptr<std::vector<uint8_t>>> PairHead(std::span<const ByteSpan> pieces) {
  uint64_t metadata_bytes = 0;
  for (const ByteSpan& p : pieces) {
    if (p.size < 0 || (p.size > 0 && p.data == nullptr)) {
      return Status::Invalid("a metadata piece is NULL or has a negative size");
    }
    metadata_bytes += static_cast<uint64_t>(p.size);
  }
  if (metadata_bytes > UINT32_MAX) {
    return Status::Invalid("a metadata message of " + std::to_string(metadata_bytes) +
                           " bytes does not fit a pair's 32-bit length");
  }
  auto head = std::make_shared<std::vector<uint8_t>>(PairBodyOffset(metadata_bytes), 0);
  for (size_t i = 0; i < 4; ++i) (*head)[i] = static_cast<uint8_t>(metadata_bytes >> (8 * i));
  size_t at = kPairHeaderBytes;
  for (const ByteSpan& p : pieces) {
    if (p.size == 0) continue;
    std::memcpy(head->data() + at, p.data, static_cast<size_t>(p.size));
    at += static_cast<size_t>(p.size);
  }
  return head;
}

Result<PairParts> SplitPair(uint64_t tag, const SharedBytes& bytes, int64_t max_metadata_bytes) {
  const auto size = static_cast<uint64_t>(bytes.size);
  if (size < kPairHeaderBytes) {
    return Status::Invalid("the pair tagged " + Hex(tag) + " is " + std::to_string(size) +
                           " bytes, shorter than its " + std::to_string(kPairHeaderBytes) +
                           "-byte header");
  }
  uint64_t metadata_bytes = 0;
  for (size_t i = 0; i < 4; ++i) metadata_bytes |= uint64_t{bytes.data[i]} << (8 * i);
  if (metadata_bytes > static_cast<uint64_t>(max_metadata_bytes)) {
    return Status::Invalid("the pair tagged " + Hex(tag) + " announces a metadata message of " +
                           std::to_string(metadata_bytes) + " bytes, over the limit of " +
                           std::to_string(max_metadata_bytes) + " bytes");
  }
  const uint64_t body_at = PairBodyOffset(metadata_bytes);
  if (body_at > size) {
    return Status::Invalid("the pair tagged " + Hex(tag) + " is " + std::to_string(size) +
                           " bytes, too short for the " + std::to_string(metadata_bytes) +
                           "-byte metadata message its header announces (its body would start "
                           "at byte " +
                           std::to_string(body_at) + ")");
  }
  PairParts parts;
  parts.metadata =
      SharedBytes{bytes.data + kPairHeaderBytes, static_cast<int64_t>(metadata_bytes), bytes.owner};
  parts.body = SharedBytes{bytes.data + body_at, static_cast<int64_t>(size - body_at), bytes.owner};
  return parts;
}

}  // namespace ferry::transport::internal::ucx
