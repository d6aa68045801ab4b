// Fuzz format-string parsing: never crash, and whatever parses must print and re-parse to the
// same description.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ferry/format/schema_view.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = ferry::ParseFormat(text);
  if (!parsed.ok()) return 0;
  auto printed = ferry::FormatToString(*parsed);
  if (!printed.ok()) std::abort();
  auto again = ferry::ParseFormat(*printed);
  if (!again.ok()) std::abort();
  const ferry::FormatInfo& a = *parsed;
  const ferry::FormatInfo& b = *again;
  if (a.type != b.type || a.fixed_size != b.fixed_size ||
      a.decimal_bitwidth != b.decimal_bitwidth || a.decimal_precision != b.decimal_precision ||
      a.decimal_scale != b.decimal_scale || a.time_unit != b.time_unit ||
      a.timezone != b.timezone || a.union_type_ids != b.union_type_ids) {
    std::abort();
  }
  return 0;
}
