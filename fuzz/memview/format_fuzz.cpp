// Fuzz pack-template parsing and item decoding: never crash, never read past item_size, and every
// member lies inside the item.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "ferry/memview/format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto desc = ferry::memview::ParseItemFormat(text);
  if (!desc.ok()) return 0;
  for (const auto& c : desc->components) {
    if (c.offset < 0 || c.size <= 0 || c.repeat < 0 ||
        c.offset + c.size * c.repeat > desc->item_size) {
      std::abort();
    }
  }
  if (desc->item_size > (1 << 20)) return 0;
  // Exactly item_size bytes, so ASan flags any read past the item.
  auto item = std::make_unique<uint8_t[]>(static_cast<size_t>(desc->item_size) + 1);
  (void)ferry::memview::DecodeItem(*desc, item.get());
  return 0;
}
