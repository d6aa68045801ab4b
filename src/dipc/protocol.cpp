// Dissociated IPC wire formats.
#include "ferry/dipc/protocol.hpp"

#include <bit>
#include <cstring>
#include <string>

#include "ferry/core/hex.hpp"

namespace ferry::dipc {

namespace {

// Little-endian on the wire: one load or store where the host is too (GCC does not merge a
// byte-by-byte loop into one).
uint64_t Load64(const uint8_t* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

void Store64(uint8_t* p, uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, sizeof v);
}

// The bytes as a std::span to index; a negative size (a caller's bug) reads as no bytes.
std::span<const uint8_t> Indexable(ByteSpan b) {
  return {b.data, b.size > 0 ? static_cast<size_t>(b.size) : 0};
}

}  // namespace

Result<MetadataMessage> ParseMetadataMessage(ByteSpan input) {
  const std::span<const uint8_t> bytes = Indexable(input);
  if (bytes.size() < kMetadataHeaderSize) {
    return Status::Invalid("a metadata message of " + std::to_string(bytes.size()) +
                           " bytes is shorter than its 5-byte header");
  }
  MetadataMessage m;
  m.sequence = static_cast<uint32_t>(bytes[1]) | static_cast<uint32_t>(bytes[2]) << 8 |
               static_cast<uint32_t>(bytes[3]) << 16 | static_cast<uint32_t>(bytes[4]) << 24;
  switch (bytes[0]) {
    case 0:
      m.type = MetadataType::kEndOfStream;
      if (bytes.size() != kMetadataHeaderSize) {
        return Status::Invalid("the end-of-stream message (sequence " + std::to_string(m.sequence) +
                               ") has " + std::to_string(bytes.size()) +
                               " bytes; it must have exactly 5");
      }
      return m;
    case 1:
      m.type = MetadataType::kIpcMessage;
      if (bytes.size() == kMetadataHeaderSize) {
        return Status::Invalid("metadata message " + std::to_string(m.sequence) +
                               " carries no flatbuffer");
      }
      m.flatbuffer = bytes.subspan(kMetadataHeaderSize);
      return m;
    case 0xFF:
      m.type = MetadataType::kFerryError;
      m.flatbuffer = bytes.subspan(kMetadataHeaderSize);
      return m;
    default:
      return Status::Invalid("metadata message " + std::to_string(m.sequence) +
                             " has unknown type " + std::to_string(bytes[0]) +
                             " (0 = end of stream, 1 = IPC message)");
  }
}

void EncodeMetadataHeader(MetadataType type, uint32_t sequence, uint8_t out[kMetadataHeaderSize]) {
  out[0] = static_cast<uint8_t>(type);
  for (int i = 0; i < 4; ++i) out[1 + i] = static_cast<uint8_t>(sequence >> (8 * i));
}

Result<WantTag> ParseWantTag(uint64_t base, uint64_t tag) {
  const uint64_t low = tag - base;
  const uint64_t channel = tag & 0xF;
  if ((tag & ~uint64_t{0xFFFFFFFF}) != base || low >= (uint64_t{kMaxRegions} << 4) ||
      channel > static_cast<uint64_t>(Channel::kData)) {
    return Status::Invalid("tag " + Hex(tag) + " is not a want_data tag of this server (" +
                           Hex(base) + " plus region and channel)");
  }
  return WantTag{static_cast<uint32_t>(low >> 4), static_cast<Channel>(channel)};
}

Result<BodyTag> ParseBodyTag(uint64_t tag) {
  if ((tag & kReservedMask) != 0) {
    return Status::Invalid("body tag " + Hex(tag) + " sets reserved bits 32-55");
  }
  const auto type = static_cast<uint8_t>(tag >> kBodyTypeShift);
  if (type > 1) {
    return Status::Invalid("body tag " + Hex(tag) + " has unknown body type " +
                           std::to_string(type) + " (0 = packed, 1 = buffer list)");
  }
  return BodyTag{static_cast<BodyType>(type), static_cast<uint32_t>(tag & kSequenceMask)};
}

Result<BufferList> ParseBufferList(ByteSpan input) {
  BufferList out;
  FERRY_RETURN_NOT_OK(ParseBufferList(input, &out));
  return out;
}

Status ParseBufferList(ByteSpan input, BufferList* list) {
  BufferList& out = *list;
  out.total_size = 0;
  out.buffers.clear();
  const std::span<const uint8_t> bytes = Indexable(input);
  if (bytes.size() < 16 || bytes.size() % 16 != 0) {
    return Status::Invalid("a buffer-list body of " + std::to_string(bytes.size()) +
                           " bytes is not 16 + 16 x count bytes");
  }
  out.total_size = Load64(bytes.data());
  const uint64_t count = Load64(bytes.data() + 8);
  const uint64_t present = (bytes.size() - 16) / 16;
  if (count != present) {
    return Status::Invalid("the buffer-list body declares " + std::to_string(count) +
                           " buffers but holds " + std::to_string(present));
  }
  out.buffers.resize(static_cast<size_t>(count));
  uint64_t sum = 0;
  for (uint64_t i = 0; i < count; ++i) {
    BufferRef& b = out.buffers[static_cast<size_t>(i)];
    b.address = Load64(bytes.data() + 16 + 16 * i);
    b.length = Load64(bytes.data() + 24 + 16 * i);
    if (__builtin_add_overflow(sum, b.length, &sum)) {
      return Status::Invalid("the buffer-list lengths overflow at buffer " + std::to_string(i));
    }
  }
  if (sum != out.total_size) {
    return Status::Invalid("the buffer-list lengths sum to " + std::to_string(sum) +
                           " but the declared total is " + std::to_string(out.total_size));
  }
  return Status::OK();
}

std::vector<uint8_t> EncodeBufferList(std::span<const BufferRef> buffers) {
  std::vector<uint8_t> out;
  EncodeBufferList(buffers, &out);
  return out;
}

void EncodeBufferList(std::span<const BufferRef> buffers, std::vector<uint8_t>* into) {
  std::vector<uint8_t>& out = *into;
  out.resize(16 + 16 * buffers.size());
  uint64_t total = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    total += buffers[i].length;
    Store64(out.data() + 16 + 16 * i, buffers[i].address);
    Store64(out.data() + 24 + 16 * i, buffers[i].length);
  }
  Store64(out.data(), total);
  Store64(out.data() + 8, buffers.size());
}

Status ParseFreeData(ByteSpan input, std::vector<uint64_t>* out) {
  const std::span<const uint8_t> bytes = Indexable(input);
  if (bytes.empty() || bytes.size() % 8 != 0) {
    return Status::Invalid("a free_data body of " + std::to_string(bytes.size()) +
                           " bytes is not one or more uint64 addresses");
  }
  out->resize(bytes.size() / 8);
  for (size_t i = 0; i < out->size(); ++i) (*out)[i] = Load64(bytes.data() + 8 * i);
  return Status::OK();
}

Result<std::vector<uint64_t>> ParseFreeData(ByteSpan input) {
  std::vector<uint64_t> out;
  FERRY_RETURN_NOT_OK(ParseFreeData(input, &out));
  return out;
}

std::vector<uint8_t> EncodeFreeData(std::span<const uint64_t> addresses) {
  std::vector<uint8_t> out;
  EncodeFreeData(addresses, &out);
  return out;
}

void EncodeFreeData(std::span<const uint64_t> addresses, std::vector<uint8_t>* into) {
  std::vector<uint8_t>& out = *into;
  out.resize(8 * addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) Store64(out.data() + 8 * i, addresses[i]);
}

Result<uint64_t> ParseCredit(ByteSpan input) {
  const std::span<const uint8_t> bytes = Indexable(input);
  if (bytes.size() != 8) {
    return Status::Invalid("a credit body of " + std::to_string(bytes.size()) +
                           " bytes is not one uint64 count");
  }
  return Load64(bytes.data());
}

std::array<uint8_t, 8> EncodeCredit(uint64_t count) {
  std::array<uint8_t, 8> out{};
  Store64(out.data(), count);
  return out;
}

Result<BodyType> ParseBodyType(std::string_view name) {
  if (name == "packed") return BodyType::kPacked;
  if (name == "list" || name == "buffer_list") return BodyType::kBufferList;
  std::string message = "unknown body type \"";
  message.append(name);
  message += "\" (packed, list or buffer_list)";
  return Status::Invalid(message);
}

}  // namespace ferry::dipc
