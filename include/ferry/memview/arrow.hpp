// Memory views of Arrow arrays: fixed-width arrays (1-D), fixed-size lists (2-D) and
// arrow.fixed_shape_tensor arrays (N-D, permutation honoured through strides). Zero-copy.
#pragma once

#include "ferry/abi/export.h"
#include "ferry/format/array.hpp"
#include "ferry/memview/memory_view.hpp"
#include "ferry/memview/registry.hpp"

namespace ferry::memview {

/// Options for viewing an Arrow array.
struct FERRY_EXPORT ArrowViewOptions {
  /// Export the values of an array that has nulls anyway (null slots hold unspecified data).
  bool allow_nulls = false;
};

/// The pack-template item format for the values of a fixed-width storage type ("l" for int32,
/// "q2" for decimal128, "C16" for fixed_size_binary[16], "{float16}" for half floats); fails
/// for types with no item format (bool is bit-packed).
FERRY_EXPORT Result<std::string> ItemFormatOf(const SchemaView& type);

/// A view of `array`'s values, sharing its buffers (`owner` keeps them alive). The array must be
/// on the CPU and have no nulls unless options allow them. The view is read-only.
FERRY_EXPORT Result<MemoryView> ViewOfArray(std::shared_ptr<const Array> array, int32_t flags,
                                            const ArrowViewOptions& options = {});

/// Options for ArrayFromView.
struct FERRY_EXPORT FromViewOptions {
  /// When the layout cannot be shared (dimension 0 not outermost, gaps, negative strides), copy
  /// the items into a fresh row-major buffer instead of failing.
  bool allow_copy = false;
};

/// An Arrow array over a view's memory: 1-D views become fixed-width arrays, 2-D views
/// fixed-size lists, N-D views `arrow.fixed_shape_tensor` arrays (inner dimensions in any order
/// become a permutation). Zero-copy when dimension 0 is outermost and the items are dense; the
/// array then keeps the view's owner alive. Items must be one native-order integer or float.
FERRY_EXPORT Result<Array> ArrayFromView(const MemoryView& view,
                                         const FromViewOptions& options = {});

/// Register ViewOfArray as the exporter of `std::shared_ptr<const Array>` objects.
FERRY_EXPORT void RegisterArrowExporters(ExporterRegistry& registry);

}  // namespace ferry::memview
