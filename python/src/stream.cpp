// Streams: ferry.ArrayStream over any host or device stream producer, ferry.stream(obj), the
// stream capsules both ways, and ferry's own device-stream producer over arrays.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <vector>

#include "capsule.hpp"
#include "ferry/device/device_array_stream.hpp"
#include "ferry/format/schema.hpp"
#include "objects.hpp"

namespace ferry::python {
namespace {

/// A device stream over arrays that all live on one device.
struct VectorStream {
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> arrays;
  size_t next = 0;
  std::string error;

  static int GetSchema(ArrowDeviceArrayStream* s, ArrowSchema* out) {
    auto* self = static_cast<VectorStream*>(s->private_data);
    Result<UniqueSchema> copy = CopySchema(self->schema.get());
    if (!copy.ok()) {
      self->error = copy.status().message();
      return copy.status().code();
    }
    copy->move_to(out);
    return 0;
  }
  static int GetNext(ArrowDeviceArrayStream* s, ArrowDeviceArray* out) {
    auto* self = static_cast<VectorStream*>(s->private_data);
    if (self->next >= self->arrays.size()) {
      std::memset(out, 0, sizeof(ArrowDeviceArray));  // the end: release is NULL
      return 0;
    }
    self->arrays[self->next++].move_to(out);
    return 0;
  }
  static const char* GetLastError(ArrowDeviceArrayStream* s) {
    auto* self = static_cast<VectorStream*>(s->private_data);
    return self->error.empty() ? nullptr : self->error.c_str();
  }
  static void Release(ArrowDeviceArrayStream* s) {
    delete static_cast<VectorStream*>(s->private_data);
    s->release = nullptr;
  }
};

/// A host stream over a device stream whose arrays the host can read: each array's sync event
/// is waited on by the host, then the ArrowArray is moved out.
struct HostAdapter {
  UniqueDeviceArrayStream inner;
  std::string error;

  static int GetSchema(ArrowArrayStream* s, ArrowSchema* out) {
    auto* self = static_cast<HostAdapter*>(s->private_data);
    return self->inner->get_schema(self->inner.get(), out);
  }
  static int GetNext(ArrowArrayStream* s, ArrowArray* out) {
    auto* self = static_cast<HostAdapter*>(s->private_data);
    UniqueDeviceArray next;
    int rc = self->inner->get_next(self->inner.get(), next.get());
    if (rc != 0) {
      const char* msg = self->inner->get_last_error(self->inner.get());
      self->error = msg ? msg : std::strerror(rc);
      return rc;
    }
    if (!next.valid()) {
      std::memset(out, 0, sizeof(ArrowArray));
      return 0;
    }
    ArrowDeviceType type = next->device_type;
    if (type != ARROW_DEVICE_CPU && type != ARROW_DEVICE_CUDA_HOST &&
        type != ARROW_DEVICE_CUDA_MANAGED) {
      self->error = std::string("__arrow_c_stream__: an array of the stream is on ") +
                    DeviceTypeName(type) + ", which the host cannot read";
      return EINVAL;
    }
    if (next->sync_event != nullptr) {
      Result<Device*> device = ResolveDevice(type, next->device_id);
      Status st =
          device.ok() ? (*device)->SynchronizeEvent(next->sync_event, nullptr) : device.status();
      if (!st.ok()) {
        self->error = st.message();
        return st.code();
      }
    }
    // Moving the ArrowArray out of the device array leaves the event to the device array's
    // owner; the host waited on it above, so it is no longer needed.
    std::memcpy(out, &next->array, sizeof(ArrowArray));
    next->array.release = nullptr;
    return 0;
  }
  static const char* GetLastError(ArrowArrayStream* s) {
    auto* self = static_cast<HostAdapter*>(s->private_data);
    return self->error.empty() ? nullptr : self->error.c_str();
  }
  static void Release(ArrowArrayStream* s) {
    delete static_cast<HostAdapter*>(s->private_data);
    s->release = nullptr;
  }
};

UniqueArrayStream ToHostStream(UniqueDeviceArrayStream device) {
  UniqueArrayStream out;
  out->get_schema = HostAdapter::GetSchema;
  out->get_next = HostAdapter::GetNext;
  out->get_last_error = HostAdapter::GetLastError;
  out->private_data = new HostAdapter{std::move(device), {}};
  out->release = HostAdapter::Release;
  return out;
}

PyArrayStream Open(UniqueDeviceArrayStream stream) {
  PyArrayStream out{std::move(stream), std::make_shared<SchemaHolder>()};
  int rc = out.stream->get_schema(out.stream.get(), out.schema->schema.get());
  if (rc != 0) out.Fail(rc);
  return out;
}

PyArrayStream FromArrays(std::vector<PyArray> arrays, std::optional<nb::object> schema_obj) {
  if (arrays.empty() && !schema_obj) {
    Raise(PyExc_ValueError, "ArrayStream.from_arrays: an empty list needs a schema");
  }
  auto* state = new VectorStream();
  UniqueDeviceArrayStream out;
  out->private_data = state;
  out->release = VectorStream::Release;
  out->get_schema = VectorStream::GetSchema;
  out->get_next = VectorStream::GetNext;
  out->get_last_error = VectorStream::GetLastError;
  out->device_type = ARROW_DEVICE_CPU;
  if (schema_obj) {
    state->schema = Unwrap(CopySchema(SchemaFrom(*schema_obj).schema));
  } else {
    state->schema = Unwrap(CopySchema(arrays[0].schema));
  }
  std::string want = Unwrap(SchemaToString(state->schema.get()));
  for (size_t i = 0; i < arrays.size(); ++i) {
    const PyArray& a = arrays[i];
    if (Unwrap(SchemaToString(a.schema)) != want) {
      Raise(PyExc_ValueError, "ArrayStream.from_arrays: array " + std::to_string(i) + " is " +
                                  Unwrap(SchemaToString(a.schema)) + ", the stream's schema " +
                                  want);
    }
    if (i == 0) {
      out->device_type = a.device_type();
    } else if (a.device_type() != arrays[0].device_type() ||
               a.device_id() != arrays[0].device_id()) {
      Raise(PyExc_ValueError, "ArrayStream.from_arrays: array " + std::to_string(i) +
                                  " is on another device than array 0");
    }
    state->arrays.push_back(ExportDeviceArray(a));
  }
  return Open(std::move(out));
}

PyArrayStream StreamFrom(nb::handle obj, nb::handle requested_schema) {
  if (nb::isinstance<PyArray>(obj)) return FromArrays({nb::cast<PyArray>(obj)}, std::nullopt);
  nb::object request =
      requested_schema.is_none() ? nb::none() : requested_schema.attr("__arrow_c_schema__")();
  if (nb::hasattr(obj, "__arrow_c_device_stream__")) {
    return Open(TakeDeviceStream(obj.attr("__arrow_c_device_stream__")(request)));
  }
  if (nb::hasattr(obj, "__arrow_c_stream__")) {
    return Open(WrapHostStream(TakeStream(obj.attr("__arrow_c_stream__")(request))));
  }
  if (nb::hasattr(obj, "__arrow_c_device_array__") || nb::hasattr(obj, "__arrow_c_array__")) {
    return FromArrays({ArrayFrom(obj, requested_schema)}, std::nullopt);
  }
  Raise(PyExc_TypeError, std::string("ferry.stream: ") + nb::type_name(obj.type()).c_str() +
                             " exports no Arrow stream or array capsule");
}

}  // namespace

ArrowDeviceArrayStream* PyArrayStream::Live(const char* what) {
  if (!stream.valid()) {
    Raise(PyExc_ValueError, std::string(what) + ": the stream was already consumed or closed");
  }
  return stream.get();
}

void PyArrayStream::Fail(int rc) {
  const char* msg = stream->get_last_error(stream.get());
  RaiseStatus(Status(rc, std::string("stream: ") + (msg ? msg : std::strerror(rc))));
}

std::optional<PyArray> PyArrayStream::ReadNext() {
  ArrowDeviceArrayStream* s = Live("read_next");
  UniqueDeviceArray next;
  int rc;
  {
    nb::gil_scoped_release release;  // a producer may block (I/O, another thread)
    rc = s->get_next(s, next.get());
  }
  if (rc != 0) Fail(rc);
  if (!next.valid()) return std::nullopt;
  return MakeArray(Unwrap(CopySchema(schema->schema.get())), std::move(next));
}

PyArrayStream OpenStream(UniqueDeviceArrayStream stream) { return Open(std::move(stream)); }
PyArrayStream StreamFromObject(nb::handle obj, nb::handle requested_schema) {
  return StreamFrom(obj, requested_schema);
}

UniqueDeviceArrayStream WrapHostStream(UniqueArrayStream host) {
  UniqueDeviceArrayStream out;
  Check(BasicDeviceArrayStreamInit(out.get(), host.get(), *CpuDevice()));
  return out;
}

void InitStream(nb::module_& m) {
  nb::class_<PyArrayStream>(
      m, "ArrayStream",
      "A stream of arrays on one device, read once: iterate it, read_all(), or "
      "hand it on through __arrow_c_stream__ / __arrow_c_device_stream__.")
      .def_static("from_arrow", &StreamFrom, nb::arg("obj"),
                  nb::arg("requested_schema") = nb::none(), "See ferry.stream.")
      .def_static(
          "from_arrays", &FromArrays, nb::arg("arrays"), nb::arg("schema") = nb::none(),
          "A device stream (ferry's own producer) yielding `arrays`, which share one schema "
          "and one device; no buffer is copied.")
      .def_prop_ro("schema",
                   [](const PyArrayStream& s) {
                     return PySchema{s.schema, s.schema->schema.get()};
                   })
      .def_prop_ro("device_type",
                   [](PyArrayStream& s) {
                     return static_cast<DeviceType>(s.Live("device_type")->device_type);
                   })
      .def_prop_ro("closed", [](const PyArrayStream& s) { return !s.stream.valid(); })
      .def("read_next", &PyArrayStream::ReadNext, "The next array, or None at the end.")
      .def(
          "read_all",
          [](PyArrayStream& s) {
            std::vector<PyArray> out;
            while (auto next = s.ReadNext()) out.push_back(std::move(*next));
            return out;
          },
          "Every remaining array.")
      .def(
          "close", [](PyArrayStream& s) { s.stream.reset(); }, "Release the stream now.")
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__",
           [](PyArrayStream& s) {
             auto next = s.ReadNext();
             if (!next) throw nb::stop_iteration();
             return std::move(*next);
           })
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](PyArrayStream& s, nb::args) { s.stream.reset(); })
      .def("__arrow_c_schema__",
           [](const PyArrayStream& s) {
             return SchemaCapsule(Unwrap(CopySchema(s.schema->schema.get())));
           })
      .def(
          "__arrow_c_stream__",
          [](PyArrayStream& s, nb::handle requested_schema) {
            ArrowDeviceArrayStream* live = s.Live("__arrow_c_stream__");
            if (!requested_schema.is_none()) {
              RequestIsRelabel(s.schema->schema.get(), TakeSchema(requested_schema).get());
            }
            ArrowDeviceType t = live->device_type;
            if (t != ARROW_DEVICE_CPU && t != ARROW_DEVICE_CUDA_HOST &&
                t != ARROW_DEVICE_CUDA_MANAGED) {
              Raise(PyExc_ValueError, std::string("__arrow_c_stream__: the stream is on ") +
                                          DeviceTypeName(t) + "; use __arrow_c_device_stream__");
            }
            return StreamCapsule(ToHostStream(std::move(s.stream)));
          },
          nb::arg("requested_schema") = nb::none(),
          "Move the stream into a capsule (host-readable streams only); this object is consumed.")
      .def(
          "__arrow_c_device_stream__",
          [](PyArrayStream& s, nb::handle requested_schema, nb::kwargs kwargs) {
            CheckNoKwargs(kwargs, "__arrow_c_device_stream__");
            s.Live("__arrow_c_device_stream__");
            if (!requested_schema.is_none()) {
              RequestIsRelabel(s.schema->schema.get(), TakeSchema(requested_schema).get());
            }
            return DeviceStreamCapsule(std::move(s.stream));
          },
          nb::arg("requested_schema") = nb::none(), nb::arg("kwargs"),
          "Move the device stream into a capsule; this object is consumed.")
      .def("__repr__", [](const PyArrayStream& s) {
        return "<ferry.ArrayStream " + Unwrap(SchemaToString(s.schema->schema.get())) +
               (s.stream.valid() ? "" : " (consumed)") + ">";
      });

  m.def("stream", &StreamFrom, nb::arg("obj"), nb::arg("requested_schema") = nb::none(),
        "Move in any stream producer, trying __arrow_c_device_stream__ then __arrow_c_stream__ (an "
        "array producer becomes a stream of one array).");
}

}  // namespace ferry::python
