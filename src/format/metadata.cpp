// The C data interface's metadata encoding.
#include "ferry/format/metadata.hpp"

#include <cstdint>
#include <cstring>

namespace ferry {

namespace {

int32_t ReadInt32(const char* p) {
  int32_t v = 0;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

void WriteInt32(std::string* out, int32_t v) {
  char bytes[sizeof(v)];
  std::memcpy(bytes, &v, sizeof(v));
  out->append(bytes, sizeof(v));
}

}  // namespace

Result<MetadataView> DecodeMetadata(const char* metadata) {
  MetadataView pairs;
  if (metadata == nullptr) return pairs;
  const char* p = metadata;
  int32_t n = ReadInt32(p);
  p += 4;
  if (n < 0) return Status::Invalid("metadata: negative pair count " + std::to_string(n));
  pairs.reserve(static_cast<size_t>(n < 1024 ? n : 1024));
  for (int32_t i = 0; i < n; ++i) {
    int32_t key_len = ReadInt32(p);
    p += 4;
    if (key_len < 0) {
      return Status::Invalid("metadata: pair " + std::to_string(i) + " has a negative key length");
    }
    std::string_view key(p, static_cast<size_t>(key_len));
    p += key_len;
    int32_t value_len = ReadInt32(p);
    p += 4;
    if (value_len < 0) {
      return Status::Invalid("metadata: pair " + std::to_string(i) +
                             " has a negative value length");
    }
    std::string_view value(p, static_cast<size_t>(value_len));
    p += value_len;
    pairs.emplace_back(key, value);
  }
  return pairs;
}

std::string EncodeMetadata(const Metadata& pairs) {
  std::string out;
  WriteInt32(&out, static_cast<int32_t>(pairs.size()));
  for (const auto& [key, value] : pairs) {
    WriteInt32(&out, static_cast<int32_t>(key.size()));
    out += key;
    WriteInt32(&out, static_cast<int32_t>(value.size()));
    out += value;
  }
  return out;
}

Result<std::optional<std::string_view>> MetadataGet(const char* metadata, std::string_view key) {
  FERRY_ASSIGN_OR_RAISE(MetadataView pairs, DecodeMetadata(metadata));
  for (const auto& [k, v] : pairs) {
    if (k == key) return std::optional<std::string_view>(v);
  }
  return std::optional<std::string_view>();
}

}  // namespace ferry
