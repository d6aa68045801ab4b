// Memory views of device arrays, and device arrays over memory views.
#include "ferry/memview/device_view.hpp"

#include <bit>
#include <vector>

#include "ferry/device/device.hpp"
#include "ferry/device/device_array.hpp"
#include "ferry/device/device_array_view.hpp"
#include "memview/arrow_export.hpp"

namespace ferry::memview {

namespace {

// The null count of `v` on `device`: the declared one, or (when -1) one counted from the validity
// bitmap after the host has waited on `event`, read through a staging copy where the host cannot
// address the memory.
Result<int64_t> CountNulls(const ArrayView& v, Device& device, void* event) {
  if (v.null_count() >= 0) return v.null_count();
  const uint8_t* bitmap = v.buffer(0).data;
  if (bitmap == nullptr || v.length() == 0) return int64_t{0};
  FERRY_RETURN_NOT_OK(device.SynchronizeEvent(event, nullptr));
  const int64_t first_byte = v.offset() / 8;
  const int64_t n_bytes = (v.offset() + v.length() + 7) / 8 - first_byte;
  std::vector<uint8_t> host;
  const uint8_t* bytes = bitmap + first_byte;
  if (!device.host_accessible()) {
    host.resize(static_cast<size_t>(n_bytes));
    FERRY_ASSIGN_OR_RAISE(void* stream, InternalStreamFor(device, *CpuDevice()));
    FERRY_RETURN_NOT_OK(CopyBytes(device, bytes, *CpuDevice(), host.data(), n_bytes, stream));
    // The copy is ordered on the stream; the bits are read on the host right after.
    if (stream != nullptr) FERRY_RETURN_NOT_OK(device.SynchronizeEvent(nullptr, stream));
    bytes = host.data();
  }
  int64_t valid = 0;
  const int64_t begin = v.offset() % 8;
  for (int64_t i = begin; i < begin + v.length(); ++i) valid += (bytes[i / 8] >> (i % 8)) & 1;
  return v.length() - valid;
}

}  // namespace

Result<MemoryView> ViewOfDeviceArray(std::shared_ptr<const DeviceArrayOwner> array, int32_t flags,
                                     const ArrowViewOptions& options) {
  if (!array) return Status::Invalid("memory view: device array is NULL");
  FERRY_ASSIGN_OR_RAISE(DeviceArrayView dview, DeviceArrayView::Make(array->schema.get()));
  FERRY_RETURN_NOT_OK(dview.SetArrayMinimal(array->array.get()));
  Device& device = *dview.device();
  void* event = array->array->sync_event;
  auto check = [&](const ArrayView& v, const char* what) -> Status {
    if (options.allow_nulls) return Status::OK();
    FERRY_ASSIGN_OR_RAISE(int64_t nulls, CountNulls(v, device, event));
    if (nulls > 0) {
      return Status::Invalid(std::string("memory view: the ") + what + " on " + device.ToString() +
                             " has " + std::to_string(nulls) +
                             " nulls; ask for allow_nulls to export the values anyway");
    }
    return Status::OK();
  };
  FERRY_ASSIGN_OR_RAISE(MemoryView view, internal::ViewOfValues(dview.array_view(), check));
  view.device_type = array->array->device_type;
  view.device_id = array->array->device_id;
  view.sync_event = event;
  view.owner = std::move(array);
  FERRY_RETURN_NOT_OK(ConformToRequest(&view, flags));
  return view;
}

Result<DeviceArrayOwner> DeviceArrayFromView(const MemoryView& view, void* stream,
                                             const FromViewOptions& options) {
  FERRY_ASSIGN_OR_RAISE(Device * device, ResolveDevice(view.device_type, view.device_id));
  const bool on_cpu = view.device_type == ARROW_DEVICE_CPU;
  if (on_cpu && view.sync_event != nullptr) {
    return Status::Invalid("a CPU memory view cannot carry a sync event");
  }
  FERRY_ASSIGN_OR_RAISE(internal::ExportedArray exported,
                        internal::ExportView(view, options, /*host_readable=*/on_cpu));
  DeviceArrayOwner out;
  if (view.sync_event != nullptr && stream == nullptr) {
    // No stream to order on: the host waits now, and the array needs no event of its own.
    FERRY_RETURN_NOT_OK(device->SynchronizeEvent(view.sync_event, nullptr));
    FERRY_RETURN_NOT_OK(DeviceArrayInit(*device, out.array.get(), exported.array.get(), nullptr));
  } else if (view.sync_event != nullptr) {
    FERRY_RETURN_NOT_OK(device->SynchronizeEvent(view.sync_event, stream));
    FERRY_RETURN_NOT_OK(
        DeviceArrayInitAsync(*device, out.array.get(), exported.array.get(), nullptr, stream));
  } else {
    FERRY_RETURN_NOT_OK(DeviceArrayInit(*device, out.array.get(), exported.array.get(), nullptr));
  }
  out.schema = std::move(exported.schema);
  return out;
}

void RegisterDeviceArrayExporter(ExporterRegistry& registry) {
  Exporter exporter;
  exporter.get = [](const void* object, int32_t flags, MemoryView* out) -> Status {
    const auto& array = *static_cast<const std::shared_ptr<const DeviceArrayOwner>*>(object);
    FERRY_ASSIGN_OR_RAISE(*out, ViewOfDeviceArray(array, flags));
    return Status::OK();
  };
  registry.Register<std::shared_ptr<const DeviceArrayOwner>>(std::move(exporter));
}

}  // namespace ferry::memview
