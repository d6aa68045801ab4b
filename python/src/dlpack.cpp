// DLPack both ways: versioned capsules first, legacy ones as the fallback, the used_ renaming,
// and the stream and copy rules of the DLPack Python specification.
#include "ferry/memview/dlpack.hpp"

#include <cstring>
#include <vector>

#include "memory_view.hpp"

namespace ferry::python {
namespace {

constexpr const char* kVersioned = "dltensor_versioned";
constexpr const char* kUsedVersioned = "used_dltensor_versioned";
constexpr const char* kLegacy = "dltensor";
constexpr const char* kUsedLegacy = "used_dltensor";

bool NameIs(PyObject* capsule, const char* name) {
  const char* have = PyCapsule_GetName(capsule);
  return have != nullptr && std::strcmp(have, name) == 0;
}

// A capsule nobody consumed still owns its tensor: call the deleter. A consumed one was renamed.
void DestroyVersioned(PyObject* capsule) {
  if (!NameIs(capsule, kVersioned)) return;
  auto* t = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersioned));
  if (t != nullptr && t->deleter != nullptr) t->deleter(t);
}
void DestroyLegacy(PyObject* capsule) {
  if (!NameIs(capsule, kLegacy)) return;
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacy));
  if (t != nullptr && t->deleter != nullptr) t->deleter(t);
}

memview::MemoryView FromCapsule(nb::handle capsule) {
  PyObject* c = capsule.ptr();
  if (NameIs(c, kVersioned)) {
    auto* t = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(c, kVersioned));
    if (PyCapsule_SetName(c, kUsedVersioned) != 0) throw nb::python_error();
    return Unwrap(memview::FromDLPack(t));  // owns `t` from here, failure included
  }
  if (NameIs(c, kLegacy)) {
    auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, kLegacy));
    if (PyCapsule_SetName(c, kUsedLegacy) != 0) throw nb::python_error();
    return Unwrap(memview::FromDLPackLegacy(t));
  }
  const char* name = PyCapsule_GetName(c);
  if (name != nullptr &&
      (std::strcmp(name, kUsedVersioned) == 0 || std::strcmp(name, kUsedLegacy) == 0)) {
    Raise(PyExc_ValueError,
          std::string("the DLPack capsule was already consumed ('") + name + "')");
  }
  Raise(PyExc_TypeError,
        std::string("expected a 'dltensor_versioned' or 'dltensor' capsule, got '") +
            (name ? name : "(unnamed)") + "'");
}

/// A dense row-major host copy of a host view (DLPack's copy=True).
memview::MemoryView HostCopy(const memview::MemoryView& v) {
  int64_t n = v.n_items();
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n * v.item_size));
  std::vector<int64_t> index(static_cast<size_t>(v.ndim), 0);
  for (int64_t k = 0; k < n; ++k) {
    std::memcpy(bytes->data() + k * v.item_size, memview::GetItemPointer(v, index.data()),
                static_cast<size_t>(v.item_size));
    for (int64_t d = v.ndim - 1; d >= 0; --d) {  // advance the row-major index
      if (++index[static_cast<size_t>(d)] < v.shape[static_cast<size_t>(d)]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
  uint8_t* data = bytes->data();
  return Unwrap(
      memview::MakeContiguousView(bytes, data, n * v.item_size, v.format, v.shape, false));
}

}  // namespace

memview::MemoryView ViewFromDLPack(nb::handle obj) {
  if (PyCapsule_CheckExact(obj.ptr())) return FromCapsule(obj);
  nb::object capsule;
  try {
    capsule = obj.attr("__dlpack__")(
        nb::arg("max_version") = nb::make_tuple(DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION));
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    capsule = obj.attr("__dlpack__")();  // a producer from before DLPack 1.0: legacy capsule
  }
  return FromCapsule(capsule);
}

nb::tuple DLPackDevice(const PyMemoryView& mv) {
  int64_t id = mv.view.device_type == ARROW_DEVICE_CPU ? 0 : mv.view.device_id;
  return nb::make_tuple(static_cast<int>(mv.view.device_type), id);
}

nb::object ExportDLPack(const PyMemoryView& mv, nb::handle stream, nb::handle max_version,
                        nb::handle dl_device, nb::handle copy) {
  const memview::MemoryView& v = mv.view;
  bool host = HostReadable(v.device_type);
  if (!dl_device.is_none()) {
    nb::tuple want = nb::cast<nb::tuple>(dl_device);
    nb::tuple have = DLPackDevice(mv);
    if (nb::cast<int>(want[0]) != nb::cast<int>(have[0]) ||
        nb::cast<int64_t>(want[1]) != nb::cast<int64_t>(have[1])) {
      Raise(PyExc_BufferError,
            "__dlpack__: dl_device " + std::string(nb::str(dl_device).c_str()) +
                " is not the view's device " + nb::str(have).c_str() +
                (copy.is_none() || nb::cast<bool>(copy)
                     ? "; ferry does not copy across devices here (use Array.copy_to)"
                     : ""));
    }
  }
  bool do_copy = !copy.is_none() && nb::cast<bool>(copy);
  // Stream rules: None on the CPU; on CUDA an int (1 legacy default, 2 per-thread default,
  // -1 no synchronisation), never 0. The consumer's stream waits on the view's event.
  if (!stream.is_none()) {
    int64_t s = nb::cast<int64_t>(stream);
    if (v.device_type == ARROW_DEVICE_CPU && s != -1) {
      Raise(PyExc_ValueError, "__dlpack__: stream must be None for CPU memory");
    }
    if (s == 0)
      Raise(PyExc_ValueError, "__dlpack__: stream 0 is ambiguous and not allowed; use 1 or 2");
    if (s != -1 && v.sync_event != nullptr) {
      void* handle = reinterpret_cast<void*>(static_cast<intptr_t>(s));
      Device& device = DeviceOf(v.device_type, v.device_id);
      Status st;
      {
        nb::gil_scoped_release release;
        st = device.SynchronizeEvent(v.sync_event, &handle);
      }
      Check(st);
    }
  } else if (v.sync_event != nullptr) {
    Device& device = DeviceOf(v.device_type, v.device_id);
    Status st;
    {
      nb::gil_scoped_release release;
      st = device.SynchronizeEvent(v.sync_event, nullptr);
    }
    Check(st);
  }
  memview::MemoryView source = v;
  if (do_copy) {
    if (!host) Raise(PyExc_BufferError, "__dlpack__: copy=True is supported for host memory only");
    source = HostCopy(v);  // raises on failure, so the GIL stays held
  }
  bool versioned = false;
  if (!max_version.is_none()) {
    nb::tuple mvt = nb::cast<nb::tuple>(max_version);
    versioned = nb::cast<int>(mvt[0]) >= 1;
  }
  if (versioned) {
    DLManagedTensorVersioned* t = Unwrap(memview::ToDLPack(source));
    if (do_copy) t->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
    PyObject* capsule = PyCapsule_New(t, kVersioned, DestroyVersioned);
    if (capsule == nullptr) {
      t->deleter(t);
      throw nb::python_error();
    }
    return nb::steal(capsule);
  }
  if (source.readonly && !do_copy) {
    Raise(PyExc_BufferError,
          "__dlpack__: a read-only view needs max_version >= (1, 0) (the legacy "
          "capsule cannot say read-only)");
  }
  DLManagedTensor* t = Unwrap(memview::ToDLPackLegacy(source));
  PyObject* capsule = PyCapsule_New(t, kLegacy, DestroyLegacy);
  if (capsule == nullptr) {
    t->deleter(t);
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

}  // namespace ferry::python
