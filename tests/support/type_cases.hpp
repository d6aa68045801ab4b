// The type cases shared by the conformance suites: every Arrow type ferry supports, each with
// a generator of JSON values and how its nulls render.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "ferry/format/schema.hpp"

namespace ferry::testing {

using Json = nlohmann::json;
/// Generates the value of element `i` (deterministic for a seeded engine).
using Gen = std::function<Json(std::mt19937_64&, int64_t)>;

/// One type case: a type ferry supports, named, with its generator.
struct TypeCase {
  std::string name;
  Field field;
  Gen gen;
  /// How a null element of this type renders (unions render [first id, null]).
  Json null_value = nullptr;
};

/// Every type case (built once).
const std::vector<TypeCase>& TypeCases();

/// Values for `total` elements of `tc` (every fifth, from the third, null when `nulls`), as
/// ArrayFromJson takes them, plus how ArrayToJson renders them.
struct GeneratedValues {
  Json values;
  Json rendered;
};
GeneratedValues GenerateValues(const TypeCase& tc, uint64_t seed, int64_t total, bool nulls);

}  // namespace ferry::testing
