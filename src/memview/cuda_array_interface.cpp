// The CUDA Array Interface bridge.
#include "ferry/memview/cuda_array_interface.hpp"

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
  view.byte_size = view.n_items() * view.item_size;
  view.readonly = cai.readonly;
  view.device_type = ARROW_DEVICE_CUDA;
  view.device_id = device_id;
  view.owner = std::move(owner);
  return view;
}

}  // namespace ferry::memview
