// Helpers shared by device_array_view.cpp (sizes) and device_array_view_copy.cpp (copies): which
// nodes carry offsets, and batched reads of small values from device memory.
#pragma once

#include <cstdint>
#include <vector>

#include "ferry/device/device.hpp"
#include "ferry/format/array_view.hpp"

namespace ferry::internal {

/// Whether `v` has an offsets buffer (strings, binaries, lists, maps; not list views).
bool HasOffsets(const ArrayView& v);
/// The width of `v`'s offsets in bytes (4 or 8).
int OffsetWidth(const ArrayView& v);

/// One small read of an offset value from device memory.
struct Read {
  const uint8_t* ptr;
  int width;
  int64_t* out;
};

/// Read every value with one device-to-host copy and one wait (none for host memory): the
/// values are first gathered on the device into one scratch block, then copied to the host at
/// once. Counts the wait in `*round_trips`.
Status ReadValues(Device& device, const std::vector<Read>& reads, void* stream,
                  int64_t* round_trips);

}  // namespace ferry::internal
