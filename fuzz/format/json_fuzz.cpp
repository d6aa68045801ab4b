// Fuzz the builders through ArrayFromJson. The first byte picks a schema; the rest is JSON. Any
// array the builders accept must pass full validation and render back without error.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "ferry/format/array.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "fuzzed_array.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<ferry::Field> schemas = ferry::fuzz::Schemas();
  if (size < 1) return 0;
  const ferry::Field& field = schemas[data[0] % schemas.size()];
  auto schema = field.Export();
  if (!schema.ok()) std::abort();
  std::string_view json(reinterpret_cast<const char*>(data + 1), size - 1);
  auto array = ferry::ArrayFromJson(schema->get(), json);
  if (!array.ok()) return 0;
  auto imported =
      ferry::Array::Import(std::move(schema).ValueOrDie(), std::move(array).ValueOrDie());
  if (!imported.ok()) std::abort();
  if (!imported->Validate(ferry::ValidationLevel::kFull).ok()) std::abort();
  if (!ferry::ArrayToJson(imported->view()).ok()) std::abort();
  return 0;
}
