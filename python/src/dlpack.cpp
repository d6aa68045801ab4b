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
  if (std::optional<memview::MemoryView> fast = ViewFromExchange(obj)) return *std::move(fast);
  // DLPack: the consumer names the stream it will read on, and the producer makes its data ready
  // there. ferry reads on the GPU's internal stream; an event recorded on it after the call marks
  // the data ready, and becomes the view's sync event.
  Device* device = nullptr;
  void* internal = nullptr;
  nb::object stream = nb::none();
  if (nb::hasattr(obj, "__dlpack_device__")) {
    nb::tuple where = nb::cast<nb::tuple>(obj.attr("__dlpack_device__")());
    const int type = nb::cast<int>(where[0]);
    if (type == kDLCUDA || type == kDLCUDAHost || type == kDLCUDAManaged) {
      Result<Device*> gpu = ResolveDevice(ARROW_DEVICE_CUDA, nb::cast<int64_t>(where[1]));
      if (gpu.ok()) {
        device = *gpu;
        internal = Unwrap((*gpu)->InternalStream());
        stream = nb::int_(reinterpret_cast<uintptr_t>(*static_cast<void**>(internal)));
      }
    }
  }
  nb::object capsule;
  bool named_stream = !stream.is_none();
  try {
    capsule = obj.attr("__dlpack__")(
        nb::arg("stream") = stream,
        nb::arg("max_version") = nb::make_tuple(DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION));
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    // A producer from before DLPack 1.0: no max_version (a legacy capsule).
    try {
      capsule = obj.attr("__dlpack__")(nb::arg("stream") = stream);
    } catch (nb::python_error& e2) {
      if (!e2.matches(PyExc_TypeError)) throw;
      capsule = obj.attr("__dlpack__")();  // no stream either: it assumed the legacy stream
      named_stream = false;
    }
  }
  memview::MemoryView view = FromCapsule(capsule);
  if (device == nullptr) return view;
  void* legacy = reinterpret_cast<void*>(uintptr_t{1});
  Result<std::shared_ptr<void>> event = [&] {
    nb::gil_scoped_release release;
    return device->RecordEvent(named_stream ? internal : &legacy);
  }();
  struct Owner {
    std::shared_ptr<const void> tensor;
    std::shared_ptr<void> event;
  };
  auto both = std::make_shared<Owner>(Owner{view.owner, Unwrap(std::move(event))});
  view.sync_event = both->event.get();
  view.owner = std::move(both);
  return view;
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
  // Stream rules of the DLPack Python specification. CUDA memory: None is the legacy default
  // stream, 1 the legacy and 2 the per-thread default stream, a larger integer a stream handle,
  // -1 "do not synchronize", 0 is refused. Other devices: None (or -1). The consumer's stream
  // waits on the view's event; the host never waits, except for None on host-readable CUDA
  // memory (pinned, managed), which a CPU consumer may read at once.
  const bool cuda = v.device_type == ARROW_DEVICE_CUDA || v.device_type == ARROW_DEVICE_CUDA_HOST ||
                    v.device_type == ARROW_DEVICE_CUDA_MANAGED;
  int64_t s = 0;
  if (!stream.is_none()) {
    s = nb::cast<int64_t>(stream);
    if (!cuda && s != -1) {
      Raise(PyExc_ValueError, std::string("__dlpack__: stream must be None for ") +
                                  DeviceTypeName(v.device_type) + " memory");
    }
    if (s == 0)
      Raise(PyExc_ValueError, "__dlpack__: stream 0 is ambiguous and not allowed; use 1 or 2");
    if (s < -1) Raise(PyExc_ValueError, "__dlpack__: stream " + std::to_string(s) + " is invalid");
  }
  if (v.sync_event != nullptr && s != -1) {
    Device& device = DeviceOf(v.device_type, v.device_id);
    const bool host_waits = stream.is_none() && v.device_type != ARROW_DEVICE_CUDA;
    void* handle = reinterpret_cast<void*>(static_cast<intptr_t>(stream.is_none() ? 1 : s));
    Status st;
    {
      nb::gil_scoped_release release;
      st = device.SynchronizeEvent(v.sync_event, host_waits ? nullptr : &handle);
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
