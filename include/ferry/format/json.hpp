// Arrays to and from a plain JSON rendering of their values.
//
// The rendering, per type: null -> null; bool -> true/false; integers, dates (days or ms), times,
// timestamps and durations (in their unit) -> JSON integers; half/float/double -> numbers (NaN and
// infinities as the strings "NaN", "Infinity", "-Infinity"); decimals -> strings with the scale
// applied ("-12.345"); string types -> JSON strings; binary, large, view and fixed-size binary ->
// lowercase hex strings; interval months -> integer; day-time -> [days, ms]; month-day-nano ->
// [months, days, nanoseconds]; lists of every kind -> arrays; struct -> object by field name
// (fields in order); map -> array of [key, value]; union -> [type_id, value]; dictionary and
// run-end encoded -> the decoded values; extension -> its storage's rendering.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/format/array_view.hpp"

namespace ferry {

/// Build an array of `schema`'s type from a JSON array of values in the rendering above, using
/// ferry's builders. The result owns freshly allocated buffers. Errors name the element path.
FERRY_EXPORT Result<UniqueArray> ArrayFromJson(const ArrowSchema* schema, std::string_view json);

/// Render every element of a host-accessible view as a JSON array (the rendering above). Reads
/// every element; the view should have passed full validation.
FERRY_EXPORT Result<std::string> ArrayToJson(const ArrayView& view);

/// Take ownership of `*stream` (marked released), read it to the end and render each batch with
/// ArrayToJson, one string per batch. Holds one batch at a time; fails with the stream's error or
/// the first batch that cannot be rendered, naming its index.
FERRY_EXPORT Result<std::vector<std::string>> StreamToJson(ArrowArrayStream* stream);

}  // namespace ferry
