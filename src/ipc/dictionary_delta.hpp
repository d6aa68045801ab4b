// A dictionary and its delta (a DictionaryBatch with isDelta set) joined into one array.
#pragma once

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"

namespace ferry::ipc::internal {

/// One new host array of `schema`'s type holding `dictionary`'s values and then `delta`'s, as
/// consumers see a dictionary: contiguous. Both are read, not kept. Fixed-width, boolean,
/// binary and string values (of either offset width) are joined buffer by buffer, each byte
/// copied once; other value types through the JSON rendering, at several times that cost. A
/// string or binary dictionary whose bytes would pass its 32-bit offsets is refused, naming
/// both sizes.
Result<UniqueArray> JoinDelta(const ArrowSchema* schema, const ArrowArray* dictionary,
                              const ArrowArray* delta);

}  // namespace ferry::ipc::internal
