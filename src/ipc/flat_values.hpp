// Flat value types (fixed-width, boolean, binary and string) read value by value: how a
// dictionary's delta is joined, and how a writer tells a dictionary from the one it sent.
#pragma once

#include <cstdint>
#include <optional>

#include "ferry/abi/arrow_c_abi.h"

namespace ferry::ipc::internal {

/// How a flat value type lies: binary or string values (`large`: 64-bit offsets), or
/// fixed-width values of `bits` bits each (1: booleans).
struct FlatValues {
  bool binary = false;
  bool large = false;
  int64_t bits = 0;
};

/// `schema`'s values as FlatValues; empty for any other type (nested, views, dictionaries,
/// unions, run-end encoded, or a format that does not parse).
std::optional<FlatValues> FlatValuesOf(const ArrowSchema* schema);

/// Whether rows [0, length) of `a` and `b` (arrays of one flat type, each that long at least)
/// hold the same values: the same rows null, and equal bytes in each valid row (what lies under a
/// null is not read). O(length), no allocation.
bool SameFlatValues(const FlatValues& type, const ArrowArray* a, const ArrowArray* b,
                    int64_t length);

/// A hash of rows [0, length) of `a` as values: arrays for which SameFlatValues holds hash alike,
/// whatever their offsets, buffers and the bytes under their nulls. O(length).
uint64_t FlatValuesHash(const FlatValues& type, const ArrowArray* a, int64_t length);

}  // namespace ferry::ipc::internal
