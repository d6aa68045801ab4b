// libFuzzer target for the Dissociated IPC decoders: metadata messages, body tags, buffer lists,
// free_data bodies and URIs. Properties: no crash, and whatever decodes re-encodes to the same
// bytes (URIs: parse, print, parse gives an equal URI).
#include <cstring>
#include <string_view>

#include "ferry/dipc/protocol.hpp"
#include "ferry/dipc/uri.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ferry::dipc;
  const std::span<const uint8_t> bytes(data, size);

  if (auto m = ParseMetadataMessage(bytes); m.ok()) {
    uint8_t header[kMetadataHeaderSize];
    EncodeMetadataHeader(m->type, m->sequence, header);
    if (std::memcmp(header, data, kMetadataHeaderSize) != 0) __builtin_trap();
  }
  if (size >= 8) {
    uint64_t tag = 0;
    std::memcpy(&tag, data, 8);
    if (auto t = ParseBodyTag(tag); t.ok() && MakeBodyTag(t->type, t->sequence) != tag) {
      __builtin_trap();
    }
  }
  if (auto list = ParseBufferList(bytes); list.ok()) {
    const std::vector<uint8_t> again = EncodeBufferList(list->buffers);
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) __builtin_trap();
  }
  if (auto addresses = ParseFreeData(bytes); addresses.ok()) {
    const std::vector<uint8_t> again = EncodeFreeData(*addresses);
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) __builtin_trap();
  }
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto uri = Uri::Parse(text); uri.ok()) {
    auto again = Uri::Parse(uri->ToString());
    if (!again.ok() || !(*again == *uri)) __builtin_trap();
  }
  return 0;
}
