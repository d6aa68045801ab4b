// Fuzz the builders through ArrayFromJson. The first byte picks a schema; the rest is JSON. Any
// array the builders accept must pass full validation and render back without error.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "ferry/format/array.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"

namespace {

std::vector<ferry::Field> Schemas() {
  using ferry::Field;
  auto f = [](const char* format) { return Field::Make(format, "x"); };
  Field item = Field::Make("i", "item");
  Field entries = Field::Make("+s", "entries", {Field::Make("u", "key").WithFlags(0), f("l")});
  return {f("n"),
          f("b"),
          f("c"),
          f("S"),
          f("i"),
          f("L"),
          f("e"),
          f("g"),
          f("d:9,2,32"),
          f("d:38,5"),
          f("d:76,-2,256"),
          f("w:3"),
          f("z"),
          f("U"),
          f("vz"),
          f("vu"),
          f("tdD"),
          f("tsn:UTC"),
          f("tiD"),
          f("tin"),
          Field::Make("+l", "x", {item}),
          Field::Make("+vL", "x", {item}),
          Field::Make("+w:2", "x", {item}),
          Field::Make("+s", "x", {f("i"), Field::Make("u", "y")}),
          Field::Make("+m", "x", {entries.WithFlags(0)}),
          Field::Make("+us:1,4", "x", {f("i"), Field::Make("u", "y")}),
          Field::Make("+ud:0,9", "x", {f("g"), Field::Make("vu", "y")}),
          Field::Make("+r", "x", {Field::Make("s", "run_ends").WithFlags(0), f("u")}),
          Field::Dictionary("x", "c", f("u")),
          Field::Dictionary("x", "L", f("d:5,1"))};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<ferry::Field> schemas = Schemas();
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
