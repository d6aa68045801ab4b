// Resolving devices: by (type, id) pair, by name (ParseDevice), and listing what a driver has.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "device/device_support.hpp"
#include "ferry/device/device.hpp"
#include "ferry/device/guarded.hpp"

namespace ferry {

const char* DeviceTypeName(ArrowDeviceType device_type) noexcept {
  switch (device_type) {
    case ARROW_DEVICE_CPU:
      return "CPU";
    case ARROW_DEVICE_CUDA:
      return "CUDA";
    case ARROW_DEVICE_CUDA_HOST:
      return "CUDA_HOST";
    case ARROW_DEVICE_OPENCL:
      return "OPENCL";
    case ARROW_DEVICE_VULKAN:
      return "VULKAN";
    case ARROW_DEVICE_METAL:
      return "METAL";
    case ARROW_DEVICE_VPI:
      return "VPI";
    case ARROW_DEVICE_ROCM:
      return "ROCM";
    case ARROW_DEVICE_ROCM_HOST:
      return "ROCM_HOST";
    case ARROW_DEVICE_EXT_DEV:
      return "EXT_DEV";
    case ARROW_DEVICE_CUDA_MANAGED:
      return "CUDA_MANAGED";
    case ARROW_DEVICE_ONEAPI:
      return "ONEAPI";
    case ARROW_DEVICE_WEBGPU:
      return "WEBGPU";
    case ARROW_DEVICE_HEXAGON:
      return "HEXAGON";
    default:
      return "unknown";
  }
}

Result<Device*> ResolveDevice(ArrowDeviceType device_type, int64_t device_id) {
  switch (device_type) {
    case ARROW_DEVICE_CPU:
      return CpuDevice();
    case ARROW_DEVICE_CUDA:
    case ARROW_DEVICE_CUDA_HOST:
    case ARROW_DEVICE_CUDA_MANAGED:
      return internal::ResolveCuda(device_type, device_id);
    case ARROW_DEVICE_OPENCL:
      return internal::ResolveOpenCl(device_id);
    case ARROW_DEVICE_EXT_DEV:
      if (device_id == 0) return GuardedDevice();
      return Status::NotFound("EXT_DEV device " + std::to_string(device_id) +
                              " does not exist (ferry's guarded test device is EXT_DEV 0)");
    default:
      return Status::NotSupported("device type " + std::to_string(device_type) + " (" +
                                  DeviceTypeName(device_type) + ") is not supported by ferry");
  }
}

Result<Device*> ParseDevice(std::string_view name) {
  const std::string spelled(name);
  auto invalid = [&](const std::string& why) {
    return Status::Invalid("device \"" + spelled + "\"" + why +
                           " (cpu, cuda:N, cuda_host:N, cuda_managed:N, opencl:N or guarded)");
  };
  const size_t colon = name.find(':');
  std::string kind(name.substr(0, colon));
  std::transform(kind.begin(), kind.end(), kind.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  int64_t id = 0;
  if (colon != std::string_view::npos) {
    const std::string_view digits = name.substr(colon + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || id < 0) {
      return invalid(": the id after ':' is not a non-negative integer");
    }
  }
  if (kind == "cpu") {
    // The CPU's own id is -1 (Device::ToString() prints no id for it); "cpu:0" means it too.
    if (colon != std::string_view::npos && id != 0) return invalid(": the CPU has only id 0");
    return CpuDevice();
  }
  if (kind == "cuda") return ResolveDevice(ARROW_DEVICE_CUDA, id);
  if (kind == "cuda_host") return ResolveDevice(ARROW_DEVICE_CUDA_HOST, id);
  if (kind == "cuda_managed") return ResolveDevice(ARROW_DEVICE_CUDA_MANAGED, id);
  if (kind == "opencl") return ResolveDevice(ARROW_DEVICE_OPENCL, id);
  if (kind == "guarded") return ResolveDevice(ARROW_DEVICE_EXT_DEV, id);
  return invalid(" is not a device name");
}

Result<std::vector<DeviceInfo>> ListDevices(ArrowDeviceType device_type) {
  switch (device_type) {
    case ARROW_DEVICE_CUDA:
      return internal::ListCuda();
    case ARROW_DEVICE_OPENCL:
      return internal::ListOpenCl();
    default:
      return Status::NotSupported(std::string("listing ") + DeviceTypeName(device_type) +
                                  " devices (only CUDA and OPENCL are listed)");
  }
}

}  // namespace ferry
