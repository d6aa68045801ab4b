// Slices of a record batch over its own memory (batch_slices.hpp).
#include "flight/batch_slices.hpp"

#include <algorithm>

namespace ferry::flight::internal {

namespace {

// The slice's structs are owned by the BatchSlice; release only marks them released.
void ReleaseNothing(ArrowArray* array) { array->release = nullptr; }

}  // namespace

BatchSlice::BatchSlice(const ArrowDeviceArray& batch, int64_t offset, int64_t length) {
  const ArrowArray& top = batch.array;
  columns_.resize(static_cast<size_t>(top.n_children));
  column_pointers_.resize(columns_.size());
  for (size_t i = 0; i < columns_.size(); ++i) {
    const ArrowArray& column = *top.children[i];
    ArrowArray& c = columns_[i];
    c = column;
    // The top level's own offset applies to its children too.
    c.offset = column.offset + top.offset + offset;
    c.length = length;
    c.null_count = column.null_count == 0 ? 0 : -1;
    c.release = &ReleaseNothing;
    c.private_data = nullptr;
    column_pointers_[i] = &c;
  }
  ArrowArray& s = device_.array;
  s.length = length;
  s.null_count = 0;
  s.offset = 0;
  s.n_buffers = 1;
  s.n_children = top.n_children;
  s.buffers = top_buffers_;
  s.children = column_pointers_.data();
  s.dictionary = nullptr;
  s.release = &ReleaseNothing;
  s.private_data = nullptr;
  device_.device_id = batch.device_id;
  device_.device_type = batch.device_type;
  device_.sync_event = batch.sync_event;
}

std::vector<std::pair<int64_t, int64_t>> SliceRanges(int64_t rows, int64_t pieces) {
  std::vector<std::pair<int64_t, int64_t>> out;
  pieces = std::max<int64_t>(1, std::min(pieces, rows));
  int64_t step = (rows + pieces - 1) / pieces;
  step = std::max<int64_t>(64, (step + 63) / 64 * 64);
  for (int64_t start = 0; start < rows; start += step) {
    out.emplace_back(start, std::min(step, rows - start));
  }
  return out;
}

}  // namespace ferry::flight::internal
