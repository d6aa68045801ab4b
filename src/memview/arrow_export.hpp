// Shared pieces of the Arrow exporters: the value view of an array view, and the Arrow export
// of a memory view, used by the CPU (arrow.cpp) and device (device_array.cpp) entry points.
#pragma once

#include <functional>

#include "ferry/abi/unique.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/memview/arrow.hpp"

namespace ferry::memview::internal {

/// Decides whether an array (or the values child, `what` says which) may be exported.
using NullCheck = std::function<Status(const ArrayView& v, const char* what)>;

/// The view of `v`'s values (1-D, 2-D fixed-size list or N-D tensor), computed from the array
/// view's pointers without dereferencing them; owner, device and flags are the caller's.
Result<MemoryView> ViewOfValues(const ArrayView& v, const NullCheck& check_no_nulls);

/// An exported schema and array over a view's memory.
struct ExportedArray {
  UniqueSchema schema;
  UniqueArray array;
};

/// Build the Arrow array of ArrayFromView without importing it. Only a layout that needs a copy
/// reads the items, and that is refused unless `host_readable`.
Result<ExportedArray> ExportView(const MemoryView& view, const FromViewOptions& options,
                                 bool host_readable);

}  // namespace ferry::memview::internal
