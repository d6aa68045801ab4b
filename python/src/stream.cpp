// Streams: ferry.ArrayStream over any host or device stream producer, ferry.stream(obj), the
// stream capsules both ways, and ferry's own device-stream producer over arrays.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <vector>

#include "capsule.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/device/device_array_stream.hpp"
#include "ferry/format/schema.hpp"
#include "objects.hpp"

namespace ferry::python {
namespace {

/// A device stream over arrays that all live on one device.
class VectorProducer final : public DeviceArrayProducer {
 public:
  explicit VectorProducer(UniqueSchema schema) : schema_(std::move(schema)) {}
  std::vector<UniqueDeviceArray>& arrays() { return arrays_; }
  const ArrowSchema* schema() const { return schema_.get(); }

  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema copy, CopySchema(schema_.get()));
    copy.move_to(out);
    return Status::OK();
  }
  Status GetNext(ArrowDeviceArray* out) override {
    if (next_ < arrays_.size()) arrays_[next_++].move_to(out);  // else the end: released
    return Status::OK();
  }

 private:
  UniqueSchema schema_;
  std::vector<UniqueDeviceArray> arrays_;
  size_t next_ = 0;
};

/// A host stream over a device stream whose arrays the host can read: each array's sync event
/// is waited on by the host, then the ArrowArray is moved out.
class HostProducer final : public ArrayProducer {
 public:
  explicit HostProducer(UniqueDeviceArrayStream inner) : inner_(std::move(inner)) {}

  Status GetSchema(ArrowSchema* out) override { return StreamGetSchema(inner_.get(), out); }

  Status GetNext(ArrowArray* out) override {
    UniqueDeviceArray next;
    FERRY_RETURN_NOT_OK(StreamGetNext(inner_.get(), next.get()));
    if (!next.valid()) return Status::OK();
    const ArrowDeviceType type = next->device_type;
    if (type != ARROW_DEVICE_CPU && type != ARROW_DEVICE_CUDA_HOST &&
        type != ARROW_DEVICE_CUDA_MANAGED) {
      return Status::Invalid(std::string("__arrow_c_stream__: an array of the stream is on ") +
                             DeviceTypeName(type) + ", which the host cannot read");
    }
    if (next->sync_event != nullptr) {
      FERRY_ASSIGN_OR_RAISE(Device * device, ResolveDevice(type, next->device_id));
      FERRY_RETURN_NOT_OK(device->SynchronizeEvent(next->sync_event, nullptr));
    }
    // Moving the ArrowArray out of the device array leaves the event to the device array's
    // owner; the host waited on it above, so it is no longer needed.
    std::memcpy(out, &next->array, sizeof(ArrowArray));
    next->array.release = nullptr;
    return Status::OK();
  }

 private:
  UniqueDeviceArrayStream inner_;
};

UniqueArrayStream ToHostStream(UniqueDeviceArrayStream device) {
  return ExportArrayStream(std::make_unique<HostProducer>(std::move(device)));
}

PyArrayStream Open(UniqueDeviceArrayStream stream) {
  PyArrayStream out{std::move(stream), std::make_shared<SchemaHolder>()};
  const Status st = StreamGetSchema(out.stream.get(), out.schema->schema.get());
  if (!st.ok()) RaiseStatus(st.WithContext("stream"));
  return out;
}

PyArrayStream FromArrays(std::vector<PyArray> arrays, std::optional<nb::object> schema_obj) {
  if (arrays.empty() && !schema_obj) {
    Raise(PyExc_ValueError, "ArrayStream.from_arrays: an empty list needs a schema");
  }
  auto producer = std::make_unique<VectorProducer>(
      Unwrap(CopySchema(schema_obj ? SchemaFrom(*schema_obj).schema : arrays[0].schema)));
  ArrowDeviceType device_type = ARROW_DEVICE_CPU;
  std::string want = Unwrap(SchemaToString(producer->schema()));
  for (size_t i = 0; i < arrays.size(); ++i) {
    const PyArray& a = arrays[i];
    if (Unwrap(SchemaToString(a.schema)) != want) {
      Raise(PyExc_ValueError, "ArrayStream.from_arrays: array " + std::to_string(i) + " is " +
                                  Unwrap(SchemaToString(a.schema)) + ", the stream's schema " +
                                  want);
    }
    if (i == 0) {
      device_type = a.device_type();
    } else if (a.device_type() != arrays[0].device_type() ||
               a.device_id() != arrays[0].device_id()) {
      Raise(PyExc_ValueError, "ArrayStream.from_arrays: array " + std::to_string(i) +
                                  " is on another device than array 0");
    }
    producer->arrays().push_back(ExportDeviceArray(a));
  }
  UniqueDeviceArrayStream out = ExportDeviceArrayStream(std::move(producer), device_type);
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

std::optional<PyArray> PyArrayStream::ReadNext() {
  ArrowDeviceArrayStream* s = Live("read_next");
  UniqueDeviceArray next;
  Status st;
  {
    nb::gil_scoped_release release;  // a producer may block (I/O, another thread)
    st = StreamGetNext(s, next.get());
  }
  if (!st.ok()) RaiseStatus(st.WithContext("stream"));
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
