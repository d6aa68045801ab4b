// Concatenate: the rows of several arrays of one type as one array, every Arrow type.
#pragma once

#include <span>
#include <string_view>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"

namespace ferry {

/// The rows of `parts` (host arrays of `schema`'s type), one after the other, as one new array
/// of that type in memory of its own: each byte copied once, bit for bit (NaN payloads and the
/// bytes of decimals and intervals included), offsets rebased. The parts are read, not kept.
/// Every type: flat, views, lists of every kind, structs, maps, unions, run-end encoded and
/// dictionary-encoded (parts sharing one dictionary array keep it; otherwise the dictionaries
/// are joined and each part's indices moved past those before). Each part is validated at the
/// default level first, and every offset read beyond that is checked. Fails naming the part
/// (by `part_names[i]` where given, else "part i") and the node: a bad part, an index type too
/// narrow for the joined dictionary, or 32-bit offsets, sizes or run ends past their range.
FERRY_EXPORT Result<UniqueArray> Concatenate(const ArrowSchema* schema,
                                             std::span<const ArrowArray* const> parts,
                                             std::span<const std::string_view> part_names = {});

}  // namespace ferry
