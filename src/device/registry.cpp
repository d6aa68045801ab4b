// Resolving (device type, id) pairs to ferry's devices.
#include <string>
#include <vector>

#include "device/device_internal.hpp"
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
