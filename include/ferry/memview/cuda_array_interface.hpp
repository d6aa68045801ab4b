// The CUDA Array Interface (version 3) as a plain data structure: the Python binding turns it
// into and out of `__cuda_array_interface__` dicts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/memview/memory_view.hpp"

namespace ferry::memview {

/// The fields of a `__cuda_array_interface__` dict. `strides` empty means C-contiguous; `stream`
/// is the producer's CUDA stream handle (1 = legacy default, 2 = per-thread default; 0 is
/// disallowed by the protocol). A mask is not supported and is represented only by `has_mask`.
struct FERRY_EXPORT CudaArrayInterface {
  std::vector<int64_t> shape;
  std::string typestr;
  uintptr_t data = 0;
  bool readonly = false;
  std::vector<int64_t> strides;
  std::optional<int64_t> stream;
  bool has_mask = false;
  int32_t version = 3;
};

/// Describe a CUDA (or CUDA-managed) view. Fails for host views, multi-member items and
/// indirect views. A view with a sync event gets `stream`: the GPU's internal stream (ferry's,
/// alive until exit) is made to wait on the event, so the data is ready on it and the host does
/// not wait. The caller keeps `view.owner` alive while the dict is in use.
FERRY_EXPORT Result<CudaArrayInterface> ToCudaArrayInterface(const MemoryView& view);

/// A view of the memory an interface describes, on CUDA device `device_id`, kept alive by
/// `owner`. Refuses version < 3 fields it cannot read, stream 0 and masks. With a `stream`, an
/// event is recorded on the producer's stream now (which needs the CUDA driver) and becomes the
/// view's sync event, owned by the view's owner: every later read waits on it.
FERRY_EXPORT Result<MemoryView> FromCudaArrayInterface(const CudaArrayInterface& cai,
                                                       std::shared_ptr<const void> owner,
                                                       int64_t device_id);

}  // namespace ferry::memview
