// Internals shared by memory_view.cpp and dlpack.cpp.
#pragma once

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
/// Whether the host can dereference memory of this device type.
bool HostReadable(ArrowDeviceType type) noexcept;

}  // namespace ferry::python
