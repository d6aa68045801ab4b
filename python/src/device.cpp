// Devices: ferry.Device, ferry.DeviceType and ferry.devices().
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <vector>

#include "common.hpp"

namespace ferry::python {

namespace {

std::vector<Device*> Devices() {
  std::vector<Device*> out{CpuDevice()};
  nb::gil_scoped_release release;  // loading a driver may take a while
  for (ArrowDeviceType type : {ARROW_DEVICE_CUDA, ARROW_DEVICE_OPENCL}) {
    for (int64_t id = 0; id < 64; ++id) {
      auto device = ResolveDevice(type, id);
      if (!device.ok()) break;
      out.push_back(*device);
    }
  }
  auto guarded = ResolveDevice(ARROW_DEVICE_EXT_DEV, 0);
  if (guarded.ok()) out.push_back(*guarded);
  return out;
}

}  // namespace

void InitDevice(nb::module_& m) {
  nb::enum_<DeviceType>(m, "DeviceType",
                        "Device types, numbered as in the Arrow C Device interface.")
      .value("CPU", DeviceType::CPU)
      .value("CUDA", DeviceType::CUDA)
      .value("CUDA_HOST", DeviceType::CUDA_HOST)
      .value("OPENCL", DeviceType::OPENCL)
      .value("VULKAN", DeviceType::VULKAN)
      .value("METAL", DeviceType::METAL)
      .value("VPI", DeviceType::VPI)
      .value("ROCM", DeviceType::ROCM)
      .value("ROCM_HOST", DeviceType::ROCM_HOST)
      .value("EXT_DEV", DeviceType::EXT_DEV)
      .value("CUDA_MANAGED", DeviceType::CUDA_MANAGED)
      .value("ONEAPI", DeviceType::ONEAPI)
      .value("WEBGPU", DeviceType::WEBGPU)
      .value("HEXAGON", DeviceType::HEXAGON);

  nb::class_<Device>(m, "Device",
                     "A memory space: the CPU, a GPU ordinal, an OpenCL device or the guarded test "
                     "device. ferry owns every device; they live until the process exits.")
      .def_static("cpu", &CpuDevice, nb::rv_policy::reference, "The CPU device (id -1).")
      .def_static(
          "resolve",
          [](DeviceType type, int64_t id) -> Device* {
            Result<Device*> device = [&] {
              nb::gil_scoped_release release;
              return ResolveDevice(static_cast<ArrowDeviceType>(type), id);
            }();
            if (!device.ok()) Raise(PyExc_ValueError, device.status().message());
            return *device;
          },
          nb::arg("device_type"), nb::arg("device_id"), nb::rv_policy::reference,
          "The device of a type and id; ValueError naming why when there is none.")
      .def_static(
          "parse",
          [](const std::string& name) -> Device* {
            Result<Device*> device = [&] {
              nb::gil_scoped_release release;
              return ParseDevice(name);
            }();
            if (!device.ok()) Raise(PyExc_ValueError, device.status().message());
            return *device;
          },
          nb::arg("name"), nb::rv_policy::reference,
          "The device a name spells: 'cpu', 'cuda:0', 'cuda_host:0', 'cuda_managed:0', "
          "'opencl:0' or 'guarded:0' (any case; str(device) reads back). The same parser as "
          "the CLI's --device; ValueError naming why when the name is bad or the device absent.")
      .def(
          "release_cached",
          [](Device& d) {
            Result<int64_t> freed = [&] {
              nb::gil_scoped_release release;
              return d.ReleaseCached();
            }();
            return Unwrap(std::move(freed));
          },
          "Free what this device keeps for reuse and no work uses now (CUDA's pinned staging "
          "blocks), as torch.cuda.empty_cache does; returns the bytes freed.")
      .def_prop_ro("device_type",
                   [](const Device& d) { return static_cast<DeviceType>(d.device_type()); })
      .def_prop_ro("device_id", &Device::device_id)
      .def_prop_ro("host_accessible", &Device::host_accessible,
                   "Whether the host may read this device's memory.")
      .def("__eq__",
           [](const Device& a, nb::handle b) {
             return nb::isinstance<Device>(b) && &a == nb::inst_ptr<Device>(b);
           })
      .def("__hash__", [](const Device& d) { return reinterpret_cast<intptr_t>(&d); })
      .def("__repr__", [](const Device& d) { return "<ferry.Device " + d.ToString() + ">"; })
      .def("__str__", &Device::ToString);

  m.def("devices", &Devices, nb::rv_policy::reference,
        "Every device this machine has: the CPU, each CUDA and OpenCL device, the guarded device.");
}

}  // namespace ferry::python
