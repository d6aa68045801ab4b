// Shared helpers of the Python binding: Status to exception mapping, GIL-safe Python owners,
// and the holders that let Python objects own ferry's C++ ones.
#pragma once

#include <nanobind/nanobind.h>

#include <cerrno>
#include <memory>
#include <string>
#include <utility>

#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/core/status.hpp"
#include "ferry/device/device.hpp"

namespace nb = nanobind;

namespace ferry::python {

/// Device types as the Arrow C Device interface numbers them.
enum class DeviceType : int32_t {
  CPU = ARROW_DEVICE_CPU,
  CUDA = ARROW_DEVICE_CUDA,
  CUDA_HOST = ARROW_DEVICE_CUDA_HOST,
  OPENCL = ARROW_DEVICE_OPENCL,
  VULKAN = ARROW_DEVICE_VULKAN,
  METAL = ARROW_DEVICE_METAL,
  VPI = ARROW_DEVICE_VPI,
  ROCM = ARROW_DEVICE_ROCM,
  ROCM_HOST = ARROW_DEVICE_ROCM_HOST,
  EXT_DEV = ARROW_DEVICE_EXT_DEV,
  CUDA_MANAGED = ARROW_DEVICE_CUDA_MANAGED,
  ONEAPI = ARROW_DEVICE_ONEAPI,
  WEBGPU = ARROW_DEVICE_WEBGPU,
  HEXAGON = ARROW_DEVICE_HEXAGON,
};

/// Raise the exception class the error table gives `status`'s code (`ferry.InvalidArgumentError`,
/// a ValueError, for kInvalidArgument; ferry/core/status_code.hpp), with its message.
[[noreturn]] void RaiseStatus(const Status& status);

/// Raise when `status` is not OK.
inline void Check(const Status& status) {
  if (!status.ok()) RaiseStatus(status);
}

/// The value of `result`, or raise its status.
template <typename T>
T Unwrap(Result<T>&& result) {
  if (!result.ok()) RaiseStatus(result.status());
  return std::move(result).value();
}

/// Raise `type` with `message` (a Python exception class such as PyExc_TypeError).
[[noreturn]] void Raise(PyObject* type, const std::string& message);

/// What a Python callback raised, for a Status: `what` (say "the sink's write()"), " raised ",
/// the exception's type, `where` (may be empty), and its text when it has one. Needs the GIL.
std::string RaisedBy(const std::string& what, const nb::python_error& e,
                     const std::string& where = "");

/// A shared owner of a strong reference to `object`. The last copy may be dropped on any thread,
/// with or without the GIL: the reference is dropped under a GIL guard, and not at all once the
/// interpreter has finalized (the object is then gone with it).
std::shared_ptr<const void> PyOwner(nb::handle object);

/// The owned root of an array tree: its schema, its device array (CPU arrays carry device type
/// CPU, id -1 and no event), and whatever else must live as long as the buffers.
struct ArrayHolder {
  UniqueSchema schema;
  UniqueDeviceArray array;
  std::shared_ptr<const void> keep;
};

/// A schema tree owned on its own.
struct SchemaHolder {
  UniqueSchema schema;
};

/// The ferry device for a device array's type and id (the CPU for ARROW_DEVICE_CPU).
Device& DeviceOf(ArrowDeviceType type, int64_t id);

/// Reject keyword arguments the Arrow PyCapsule interface has not standardised: any that is not
/// None raises NotImplementedError.
void CheckNoKwargs(const nb::kwargs& kwargs, const char* method);

// Module sections, one per source file.
void InitStatusCode(nb::module_& m);
void InitDevice(nb::module_& m);
void InitSchema(nb::module_& m);
void InitArray(nb::module_& m);
void InitStream(nb::module_& m);
void InitMemoryView(nb::module_& m);
void InitIpc(nb::module_& m);
void InitDipc(nb::module_& m);
void InitFlight(nb::module_& m);
/// ferry._ferry._aio, the C++ half of ferry.aio (after InitFlight and InitDipc: it returns their
/// types).
void InitAio(nb::module_& m);
/// ferry.flight.Server, in the flight submodule `m`.
void InitFlightServer(nb::module_& m);

}  // namespace ferry::python
