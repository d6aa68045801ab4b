// The CUDA Array Interface bridge.
#include "ferry/memview/cuda_array_interface.hpp"

#include "ferry/device/device.hpp"
#include "ferry/memview/pep3118.hpp"

namespace ferry::memview {

Result<CudaArrayInterface> ToCudaArrayInterface(const MemoryView& view) {
  if (view.device_type != ARROW_DEVICE_CUDA && view.device_type != ARROW_DEVICE_CUDA_MANAGED) {
    return Status::NotSupported(
        "__cuda_array_interface__ describes CUDA memory; this view is on "
        "device type " +
        std::to_string(view.device_type));
  }
  if (!view.sub_offsets.empty()) {
    return Status::NotSupported("__cuda_array_interface__ cannot express indirect views");
  }
  CudaArrayInterface cai;
  FERRY_ASSIGN_OR_RAISE(cai.typestr, NumpyTypestrFromItemDesc(view.item_desc));
  cai.shape = view.shape;
  cai.data = reinterpret_cast<uintptr_t>(view.data);
  cai.readonly = view.readonly;
  cai.strides = view.strides;
  if (view.sync_event != nullptr) {
    // Protocol v3: the data must be ready on the exported stream. ferry's internal stream of the
    // GPU waits on the view's event (no host wait), and the consumer orders on that stream.
    FERRY_ASSIGN_OR_RAISE(Device * device, ResolveDevice(view.device_type, view.device_id));
    FERRY_ASSIGN_OR_RAISE(void* stream, device->InternalStream());
    FERRY_RETURN_NOT_OK(device->SynchronizeEvent(view.sync_event, stream));
    cai.stream = static_cast<int64_t>(reinterpret_cast<uintptr_t>(*static_cast<void**>(stream)));
  }
  return cai;
}

Result<MemoryView> FromCudaArrayInterface(const CudaArrayInterface& cai,
                                          std::shared_ptr<const void> owner, int64_t device_id) {
  if (cai.version < 3) {
    return Status::NotSupported("__cuda_array_interface__ version " + std::to_string(cai.version) +
                                " is not supported (need 3)");
  }
  if (cai.has_mask) return Status::NotSupported("__cuda_array_interface__ masks are not supported");
  if (cai.stream.has_value() && *cai.stream == 0) {
    return Status::Invalid(
        "__cuda_array_interface__ stream 0 is disallowed (ambiguous); use 1 "
        "for the legacy default stream or 2 for the per-thread default");
  }
  if (!cai.strides.empty() && cai.strides.size() != cai.shape.size()) {
    return Status::Invalid("__cuda_array_interface__ strides and shape differ in length");
  }
  FERRY_ASSIGN_OR_RAISE(std::string format, PackFormatFromNumpyTypestr(cai.typestr));
  MemoryView view;
  FERRY_ASSIGN_OR_RAISE(view.item_desc, ParseItemFormat(format));
  view.format = format;
  view.item_size = view.item_desc.item_size;
  view.ndim = static_cast<int64_t>(cai.shape.size());
  view.shape = cai.shape;
  for (int64_t extent : view.shape) {
    if (extent < 0) return Status::Invalid("__cuda_array_interface__ shape has a negative extent");
  }
  view.strides = cai.strides;
  // The protocol hands over the address as an integer.
  view.data = reinterpret_cast<uint8_t*>(cai.data);  // NOLINT(performance-no-int-to-ptr)
  view.size = view.n_items() * view.item_size;
  view.readonly = cai.readonly;
  view.device_type = ARROW_DEVICE_CUDA;
  view.device_id = device_id;
  if (!cai.stream.has_value()) {
    view.owner = std::move(owner);
    return view;
  }
  // Protocol v3: reads must follow the producer's stream. An event recorded on it now marks the
  // producer's work; every later read of the view waits on it (a stream wait where there is one).
  FERRY_ASSIGN_OR_RAISE(Device * device, ResolveDevice(ARROW_DEVICE_CUDA, device_id));
  auto handle = reinterpret_cast<void*>(static_cast<uintptr_t>(*cai.stream));  // NOLINT
  Result<std::shared_ptr<void>> event = device->RecordEvent(static_cast<void*>(&handle));
  if (!event.ok()) {
    return event.status().WithContext("__cuda_array_interface__: the producer's stream " +
                                      std::to_string(*cai.stream));
  }
  struct Owner {
    std::shared_ptr<const void> producer;
    std::shared_ptr<void> event;
  };
  auto both = std::make_shared<Owner>(Owner{std::move(owner), std::move(*event)});
  view.sync_event = both->event.get();
  view.owner = std::move(both);
  return view;
}

}  // namespace ferry::memview
