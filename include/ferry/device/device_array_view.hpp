// DeviceArrayView: an ArrayView over an ArrowDeviceArray that reads from the device only what it
// must, and copies the visible part of a device array to another device.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/device/device.hpp"
#include "ferry/format/array_view.hpp"

namespace ferry {

/// A non-owning view of a device array. SetArrayMinimal reads no buffer; SetArray learns the
/// unknown data sizes (string/binary at any depth) with one device-to-host copy and one wait in
/// all: every needed offset is gathered on the device into one block, which is copied to the host
/// at once. The variadic sizes buffer of string/binary views is host memory, as Arrow C++ and
/// cudf produce it.
class FERRY_EXPORT DeviceArrayView {
 public:
  /// A view tree for arrays of `schema` (which must outlive the view).
  static Result<DeviceArrayView> Make(const ArrowSchema* schema);

  DeviceArrayView() = default;
  DeviceArrayView(DeviceArrayView&&) noexcept = default;
  DeviceArrayView& operator=(DeviceArrayView&&) noexcept = default;

  /// Point at `array` (which must outlive the view) and resolve its device; reads no buffer.
  Status SetArrayMinimal(const ArrowDeviceArray* array);
  /// SetArrayMinimal, then learn data sizes; uses the device's internal stream and waits for it.
  Status SetArray(const ArrowDeviceArray* array);
  /// SetArray ordered on `stream`: the stream waits on the array's sync event, the reads are
  /// queued on it, and the host waits for them (sizes are needed on the host).
  Status SetArrayAsync(const ArrowDeviceArray* array, void* stream);
  /// Forget the array.
  void Reset();

  /// Validate at `level`. Minimal reads nothing; default checks the offsets SetArray gathered
  /// (first <= last, within the child); full reads every element: on memory the host cannot
  /// address, that copies the array to the CPU first (one visible-slice copy).
  Status Validate(ValidationLevel level) const;

  /// Copy the visible part of the array (offset..offset+length; offsets re-based, bitmaps
  /// shifted) to `dst`: one allocation for the whole tree, complete when this returns. The
  /// result has offset 0 (run-end encoded arrays keep theirs) and passes full validation.
  Result<UniqueDeviceArray> Copy(Device& dst) const;
  /// Copy ordered on `stream` (the native stream of the non-CPU device). The source's event is
  /// waited on by the stream (by the host where the host reads the source); a device result
  /// owns an event recorded on the stream; a CPU result is complete on return. The host waits
  /// only to read sizes (one wait per level whose range depends on its parent), to re-base
  /// offsets, and for a CPU result; from host memory to CUDA the tree is one packed copy.
  Result<UniqueDeviceArray> CopyAsync(Device& dst, void* stream) const;

  const ArrayView& array_view() const noexcept { return view_; }
  ArrayView& array_view() noexcept { return view_; }
  /// The device of the current array (nullptr before SetArrayMinimal).
  Device* device() const noexcept { return device_; }
  const ArrowDeviceArray* device_array() const noexcept { return array_; }
  /// Host round trips the last SetArray or Copy made (tests and benchmarks).
  int64_t round_trips() const noexcept { return round_trips_; }

 private:
  Status Learn(void* stream);
  Status WaitSourceEvent(void* stream, bool host_reads) const;

  ArrayView view_;
  Device* device_ = nullptr;
  const ArrowDeviceArray* array_ = nullptr;
  // First and last offset (element offset .. offset + length) of every offset-bearing node,
  // gathered by SetArray; Copy reuses them where its range is the node's own.
  std::unordered_map<const ArrayView*, std::pair<int64_t, int64_t>> offsets_;
  mutable int64_t round_trips_ = 0;
};

}  // namespace ferry
