// Capsules for the Arrow C structs, and shallow exports that keep their owner alive.
#include "capsule.hpp"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "ferry/core/keep_alive.hpp"
#include "ferry/format/schema_view.hpp"

namespace ferry::python {
namespace {

template <typename T>
void ReleaseIfLive(T* s) {
  if (!CStructTraits<T>::is_released(*s)) detail::release_struct(*s);
}

template <typename T>
nb::object MakeCapsule(Unique<T> owner, const char* name, PyCapsule_Destructor destructor) {
  auto* raw = static_cast<T*>(std::calloc(1, sizeof(T)));  // released (zeroed) from the start
  if (raw == nullptr) throw std::bad_alloc();
  PyObject* capsule = PyCapsule_New(raw, name, destructor);
  if (capsule == nullptr) {
    std::free(raw);
    throw nb::python_error();
  }
  owner.move_to(raw);
  return nb::steal(capsule);
}

template <typename T>
void DestroyCapsule(PyObject* capsule, const char* name) {
  auto* raw = static_cast<T*>(PyCapsule_GetPointer(capsule, name));
  if (raw == nullptr) {
    PyErr_Clear();
    return;
  }
  ReleaseIfLive(raw);
  std::free(raw);
}

void DestroySchema(PyObject* c) { DestroyCapsule<ArrowSchema>(c, kSchemaCapsule); }
void DestroyArray(PyObject* c) { DestroyCapsule<ArrowArray>(c, kArrayCapsule); }
void DestroyDeviceArray(PyObject* c) { DestroyCapsule<ArrowDeviceArray>(c, kDeviceArrayCapsule); }
void DestroyStream(PyObject* c) { DestroyCapsule<ArrowArrayStream>(c, kStreamCapsule); }
void DestroyDeviceStream(PyObject* c) {
  DestroyCapsule<ArrowDeviceArrayStream>(c, kDeviceStreamCapsule);
}

template <typename T>
Unique<T> Take(nb::handle capsule, const char* name) {
  if (!PyCapsule_CheckExact(capsule.ptr())) {
    Raise(PyExc_TypeError, std::string("expected a PyCapsule named '") + name + "', got " +
                               nb::type_name(capsule.type()).c_str());
  }
  if (!PyCapsule_IsValid(capsule.ptr(), name)) {
    const char* have = PyCapsule_GetName(capsule.ptr());
    Raise(PyExc_TypeError, std::string("expected a PyCapsule named '") + name + "', got '" +
                               (have ? have : "(unnamed)") + "'");
  }
  auto* raw = static_cast<T*>(PyCapsule_GetPointer(capsule.ptr(), name));
  if (CStructTraits<T>::is_released(*raw)) {
    Raise(PyExc_ValueError, std::string("the '") + name + "' capsule was already consumed");
  }
  return Unique<T>(raw);  // moves the struct out; the capsule's copy is marked released
}

bool SameLayout(const SchemaView& a, const SchemaView& b) {
  if (a.storage_type == b.storage_type) {
    return a.fixed_size == b.fixed_size && a.decimal_bitwidth == b.decimal_bitwidth &&
           a.union_type_ids == b.union_type_ids;
  }
  // Types whose buffers are read the same way: only the meaning of the bytes differs.
  auto cls = [](TypeId t) -> int {
    switch (t) {
      case TypeId::kString:
      case TypeId::kBinary:
        return 1;
      case TypeId::kLargeString:
      case TypeId::kLargeBinary:
        return 2;
      case TypeId::kStringView:
      case TypeId::kBinaryView:
        return 3;
      default:
        return 0;
    }
  };
  return cls(a.storage_type) != 0 && cls(a.storage_type) == cls(b.storage_type);
}

bool Relabel(const ArrowSchema* have, const ArrowSchema* request, const std::string& path) {
  SchemaView hv = Unwrap(SchemaView::Make(have));
  SchemaView rv = Unwrap(SchemaView::Make(request));
  if (have->n_children != request->n_children) {
    Raise(PyExc_ValueError, "requested_schema is incompatible with the data: " + path + " has " +
                                std::to_string(have->n_children) + " children, the request " +
                                std::to_string(request->n_children));
  }
  if ((have->dictionary == nullptr) != (request->dictionary == nullptr)) return false;
  bool same = SameLayout(hv, rv);
  for (int64_t i = 0; i < have->n_children; ++i) {
    same =
        Relabel(have->children[i], request->children[i], path + " > child " + std::to_string(i)) &&
        same;
  }
  if (have->dictionary != nullptr) {
    same = Relabel(have->dictionary, request->dictionary, path + " > dictionary") && same;
  }
  return same;
}

}  // namespace

nb::object SchemaCapsule(UniqueSchema o) {
  return MakeCapsule(std::move(o), kSchemaCapsule, DestroySchema);
}
nb::object ArrayCapsule(UniqueArray o) {
  return MakeCapsule(std::move(o), kArrayCapsule, DestroyArray);
}
nb::object DeviceArrayCapsule(UniqueDeviceArray o) {
  return MakeCapsule(std::move(o), kDeviceArrayCapsule, DestroyDeviceArray);
}
nb::object StreamCapsule(UniqueArrayStream o) {
  return MakeCapsule(std::move(o), kStreamCapsule, DestroyStream);
}
nb::object DeviceStreamCapsule(UniqueDeviceArrayStream o) {
  return MakeCapsule(std::move(o), kDeviceStreamCapsule, DestroyDeviceStream);
}

UniqueSchema TakeSchema(nb::handle c) { return Take<ArrowSchema>(c, kSchemaCapsule); }
UniqueArray TakeArray(nb::handle c) { return Take<ArrowArray>(c, kArrayCapsule); }
UniqueDeviceArray TakeDeviceArray(nb::handle c) {
  return Take<ArrowDeviceArray>(c, kDeviceArrayCapsule);
}
UniqueArrayStream TakeStream(nb::handle c) { return Take<ArrowArrayStream>(c, kStreamCapsule); }
UniqueDeviceArrayStream TakeDeviceStream(nb::handle c) {
  return Take<ArrowDeviceArrayStream>(c, kDeviceStreamCapsule);
}

void ExportArrayRef(const ArrowArray* src, std::shared_ptr<const void> keep, ArrowArray* out) {
  // KeepAlive mirrors the tree: its nodes share one allocation and each holds `keep`, so a
  // consumer may move a child out and release it after the rest.
  KeepAlive nodes(std::move(keep));
  nodes.Mirror(*src, out);
}

bool RequestIsRelabel(const ArrowSchema* have, const ArrowSchema* request) {
  return Relabel(have, request, "the array");
}

}  // namespace ferry::python
