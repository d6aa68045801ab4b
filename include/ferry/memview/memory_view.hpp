// MemoryView: a typed, N-dimensional, strided view of memory on any device, after Ruby 3.0's
// MemoryView, with request flags that are enforced.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/memview/format.hpp"

namespace ferry::memview {

/// What a consumer asks of an exporter; values match Ruby's RUBY_MEMORY_VIEW_* flags. Each flag
/// includes the ones it implies (STRIDES includes MULTI_DIMENSIONAL, ROW_MAJOR includes STRIDES).
enum RequestFlags : int32_t {
  kSimple = 0,
  kWritable = 0x01,
  kFormat = 0x02,
  kMultiDimensional = 0x04,
  kStrides = 0x0C,
  kRowMajor = 0x1C,
  kColumnMajor = 0x2C,
  kAnyContiguous = 0x3C,
  kIndirect = 0x4C,
};

/// A view of `size` bytes at `data`. It never owns the memory: `owner` keeps whatever does
/// alive for as long as the view (or a copy of it) exists. Strides are in bytes and may be
/// negative; an empty `strides` means row-major contiguous. `sub_offsets` follow PIL: in a
/// dimension whose sub-offset is >= 0, the address reached is a pointer to dereference, then the
/// sub-offset is added. Copying a view copies only these descriptors.
struct FERRY_EXPORT MemoryView {
  std::shared_ptr<const void> owner;
  uint8_t* data = nullptr;
  int64_t size = 0;
  bool readonly = true;
  /// Pack-template item format; empty means unsigned bytes ("C").
  std::string format;
  int64_t item_size = 1;
  ItemDesc item_desc;
  int64_t ndim = 1;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::vector<int64_t> sub_offsets;
  ArrowDeviceType device_type = ARROW_DEVICE_CPU;
  int64_t device_id = -1;
  /// The producer's event to wait on before reading (device-specific; not owned).
  void* sync_event = nullptr;
  /// Exporter-private data, released with the view by the exporter.
  std::shared_ptr<void> private_data;
  /// Set by the exporter registry for views it handed out, so that release happens once.
  std::shared_ptr<void> export_token;

  /// Number of items (the product of the shape; 1 for ndim 0).
  int64_t n_items() const noexcept;
  /// The stride of dimension `dim` in bytes, row-major when `strides` is empty.
  int64_t stride(int64_t dim) const noexcept;
};

/// Build a contiguous row-major view of `shape` items of `format` over `data`. Checks that the
/// format parses and that the bytes cover the shape.
FERRY_EXPORT Result<MemoryView> MakeContiguousView(std::shared_ptr<const void> owner, uint8_t* data,
                                                   int64_t size, std::string format,
                                                   std::vector<int64_t> shape, bool readonly);

/// Whether the items are laid out row-major (C order) with no gaps. Dimensions of extent 1 do not
/// constrain their stride; a view with no items is contiguous; sub-offsets never are.
FERRY_EXPORT bool IsRowMajorContiguous(const MemoryView& view) noexcept;
/// The same for column-major (Fortran order).
FERRY_EXPORT bool IsColumnMajorContiguous(const MemoryView& view) noexcept;

/// Check that `view` satisfies `flags` and strip what the consumer did not ask for (the format
/// without FORMAT, the strides without STRIDES). Fails, naming the flag, when it cannot: a
/// read-only view asked WRITABLE, a non-contiguous one asked ROW_MAJOR, more than one dimension
/// without MULTI_DIMENSIONAL, sub-offsets without INDIRECT, strides that are needed but not asked.
FERRY_EXPORT Status ConformToRequest(MemoryView* view, int32_t flags);

/// The address of the item at `indices` (one per dimension; none for ndim 0), following strides
/// (negative too) and sub-offsets in every dimension. No bounds check.
FERRY_EXPORT uint8_t* GetItemPointer(const MemoryView& view, const int64_t* indices) noexcept;
/// The same, with every index checked against the shape (negative indices are errors).
FERRY_EXPORT Result<uint8_t*> GetItemPointerChecked(const MemoryView& view,
                                                    const std::vector<int64_t>& indices);

}  // namespace ferry::memview
