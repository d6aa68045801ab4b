// Internals shared by memory_view.cpp and dlpack.cpp.
#pragma once

#include <optional>

#include "objects.hpp"

namespace ferry::python {

/// A view of whatever `obj` exports through DLPack (versioned first, legacy second); the capsule
/// is renamed `used_dltensor[_versioned]` once taken. A PyCapsule is consumed directly.
memview::MemoryView ViewFromDLPack(nb::handle obj);
/// `__dlpack__` of a view, following the DLPack Python specification's stream and copy rules.
nb::object ExportDLPack(const PyMemoryView& mv, nb::handle stream, nb::handle max_version,
                        nb::handle dl_device, nb::handle copy);
/// `__dlpack_device__`: (device type, id), with id 0 for the CPU as DLPack numbers it.
nb::tuple DLPackDevice(const PyMemoryView& mv);
/// A view of `obj` through its type's DLPack C exchange API (`__dlpack_c_exchange_api__`), or
/// nullopt when its type offers none of a major version ferry speaks. On a device, the view's
/// sync event marks the producer's current work stream at the time of the call.
std::optional<memview::MemoryView> ViewFromExchange(nb::handle obj);
/// A new object of `tensor_type` over the view's memory, made by that type's exchange API
/// (managed_tensor_to_py_object_no_sync); the type's current stream waits on the view's event.
nb::object ExportToType(const PyMemoryView& mv, nb::handle tensor_type);
/// Publish ferry's exchange tables as `__dlpack_c_exchange_api__` of the two types.
void InitDLPackExchange(nb::handle memory_view_type, nb::handle array_type);
/// MemoryView.from_array: a read-only view of a fixed-width array's values, on its device.
PyMemoryView ViewOfArrayObject(const PyArray& array);
/// Whether the host can dereference memory of this device type.
bool HostReadable(ArrowDeviceType type) noexcept;

}  // namespace ferry::python
