// Internal to the flight layer: a record batch's rows [offset, offset + length) as a batch of its
// own that points into the same memory, for messages that must stay under gRPC's limit.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"

namespace ferry::flight::internal {

/// The largest FlightData body DoGet sends in one message: half of gRPC's 2 GiB ceiling, so that
/// the header, the framing and a skewed slice still fit.
inline constexpr int64_t kMaxMessageBody = int64_t{1} << 30;

/// A slice of a struct (record batch) array: the top level is new, each column a shallow copy
/// whose offset and length select the rows; buffers, grandchildren and dictionaries are the
/// batch's own. Valid while the batch is; releasing it (or the object going) frees only what it
/// made. The IPC writer then writes the columns' buffers in place, except where a slice must be
/// rebased (offsets of variable-size columns) or bit-shifted (bitmaps at an offset not a multiple
/// of 8: DoGet slices at multiples of 64 rows).
class BatchSlice {
 public:
  BatchSlice(const ArrowDeviceArray& batch, int64_t offset, int64_t length);
  BatchSlice(const BatchSlice&) = delete;
  BatchSlice& operator=(const BatchSlice&) = delete;
  const ArrowDeviceArray* get() const { return &device_; }

 private:
  ArrowDeviceArray device_{};
  std::vector<ArrowArray> columns_;
  std::vector<ArrowArray*> column_pointers_;
  const void* top_buffers_[1] = {nullptr};
};

/// Row ranges [offset, length) that cut `rows` rows into `pieces` ranges of about equal size,
/// each (but the last) a multiple of 64 rows.
std::vector<std::pair<int64_t, int64_t>> SliceRanges(int64_t rows, int64_t pieces);

}  // namespace ferry::flight::internal
