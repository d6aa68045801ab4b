// Memory views of device arrays: the data stays on its device, and the view carries the device
// type, id and sync event, so a consumer (DLPack, the CUDA Array Interface) can order its reads.
#pragma once

#include <memory>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/memview/arrow.hpp"

namespace ferry::memview {

/// A device array and its schema as one owner. Views of its memory hold a shared_ptr to it, so
/// the buffers and the sync event live as long as any view does.
struct FERRY_EXPORT DeviceArrayOwner {
  UniqueSchema schema;
  UniqueDeviceArray array;
};

/// A view of a device array's values (fixed-width 1-D, fixed-size list 2-D, fixed_shape_tensor
/// N-D), pointing at the device memory. The view's device_type, device_id and sync_event are the
/// array's (the event stays owned by the array). Reads nothing from the device, except when the
/// null count is unknown (-1) and a validity bitmap is present: then the host waits on the event
/// and reads the bitmap (one device-to-host copy of length / 8 bytes where the host cannot
/// address it). The view is read-only.
FERRY_EXPORT Result<MemoryView> ViewOfDeviceArray(std::shared_ptr<const DeviceArrayOwner> array,
                                                  int32_t flags,
                                                  const ArrowViewOptions& options = {});

/// A device array over a view's memory, on the view's device, as ArrayFromView builds it (1-D
/// fixed-width, 2-D fixed-size list, N-D fixed_shape_tensor); the array keeps the view's owner
/// alive. Zero-copy only off the CPU: a layout an Arrow array cannot share is refused there,
/// since making it dense would read device memory. When the view has a sync event, `stream`
/// waits on it and the array owns a new event recorded on `stream`; with no stream the host
/// waits on it and the array has no event.
FERRY_EXPORT Result<DeviceArrayOwner> DeviceArrayFromView(const MemoryView& view, void* stream,
                                                          const FromViewOptions& options = {});

/// Register ViewOfDeviceArray as the exporter of `std::shared_ptr<const DeviceArrayOwner>`.
FERRY_EXPORT void RegisterDeviceArrayExporter(ExporterRegistry& registry);

}  // namespace ferry::memview
