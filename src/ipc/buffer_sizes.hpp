// Internal to the IPC decoder: the IPC length of every buffer of a loaded batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ferry::ipc::internal {

/// What the loader records beside the arrays it makes: the IPC length of every buffer of every
/// node in pre-order (the C data interface carries no sizes; validation needs them), flattened:
/// node k's sizes are sizes[starts[k] .. starts[k + 1]). Empty (no node) until a loader starts
/// it; a decoder reuses one, batch after batch.
struct BufferSizes {
  std::vector<int64_t> sizes;
  std::vector<uint32_t> starts;
  size_t nodes() const { return starts.empty() ? 0 : starts.size() - 1; }
};

}  // namespace ferry::ipc::internal
