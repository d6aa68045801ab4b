// Arrays and device arrays: ferry.Array, ferry.array(obj), and the Arrow PyCapsule interface in
// both directions (host and device capsules, requested_schema, kwargs).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "capsule.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/device/device_array.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/format/stream.hpp"
#include "objects.hpp"

namespace ferry::python {

ArrowDeviceArray PyArray::NodeDeviceArray() const noexcept {
  ArrowDeviceArray out;
  std::memcpy(&out, root->array.get(), sizeof(ArrowDeviceArray));
  std::memcpy(&out.array, array, sizeof(ArrowArray));
  return out;
}

PySchema SchemaOf(const PyArray& a) { return PySchema{a.root, a.schema}; }

UniqueDeviceArray ExportDeviceArray(const PyArray& a) {
  UniqueDeviceArray out;
  ExportArrayRef(a.array, a.root, &out->array);
  out->device_type = a.device_type();
  out->device_id = a.device_id();
  out->sync_event = a.root->array->sync_event;  // owned by the root, alive while `out` is
  return out;
}

PyArray MakeArray(UniqueSchema schema, UniqueDeviceArray array, std::shared_ptr<const void> keep) {
  auto root = std::make_shared<ArrayHolder>();
  root->schema = std::move(schema);
  root->array = std::move(array);
  root->keep = std::move(keep);
  const ArrowSchema* s = root->schema.get();
  const ArrowArray* a = &root->array->array;
  return PyArray{std::move(root), s, a};
}

namespace {

/// The sync event, waited on by the host before the host reads the array.
void WaitForHost(const PyArray& a) {
  if (a.root->array->sync_event == nullptr) return;
  Device& device = DeviceOf(a.device_type(), a.device_id());
  Status st;
  {
    nb::gil_scoped_release release;
    st = device.SynchronizeEvent(a.root->array->sync_event, nullptr);
  }
  Check(st);
}

bool HostAccessible(const PyArray& a) {
  switch (a.device_type()) {
    case ARROW_DEVICE_CPU:
    case ARROW_DEVICE_CUDA_HOST:
    case ARROW_DEVICE_CUDA_MANAGED:
    case ARROW_DEVICE_ROCM_HOST:
      return true;
    default:
      return false;
  }
}

/// The schema to export for `a` under a consumer's request: a relabelled copy of the request
/// when it describes the same layout, else ferry's own (the consumer casts, best effort).
UniqueSchema ExportSchemaFor(const PyArray& a, nb::handle requested_schema) {
  if (!requested_schema.is_none()) {
    UniqueSchema request = TakeSchema(requested_schema);
    if (RequestIsRelabel(a.schema, request.get())) return request;
  }
  return Unwrap(CopySchema(a.schema));
}

/// A host stream or device stream read to its single array (ferry.array accepts those too).
PyArray SingleFromDeviceStream(UniqueDeviceArrayStream stream) {
  UniqueSchema schema;
  Check(StreamGetSchema(stream.get(), schema.get()).WithContext("stream"));
  std::vector<UniqueDeviceArray> arrays;
  for (;;) {
    UniqueDeviceArray next;
    Status st;
    {
      nb::gil_scoped_release release;
      st = StreamGetNext(stream.get(), next.get());
    }
    Check(st.WithContext("stream"));
    if (!next.valid()) break;
    arrays.push_back(std::move(next));
  }
  if (arrays.size() != 1) {
    Raise(PyExc_ValueError, "ferry.array: the stream holds " + std::to_string(arrays.size()) +
                                " arrays, not one; read it with ferry.stream()");
  }
  return MakeArray(std::move(schema), std::move(arrays[0]));
}

PyArray FromHost(UniqueSchema schema, UniqueArray array) {
  UniqueDeviceArray device;
  Check(DeviceArrayInit(*CpuDevice(), device.get(), array.get(), nullptr));
  return MakeArray(std::move(schema), std::move(device));
}

void CheckRequested(const PyArray& a, nb::handle requested) {
  if (requested.is_none()) return;
  UniqueSchema want = TakeSchema(requested.attr("__arrow_c_schema__")());
  if (Unwrap(SchemaToString(a.schema)) == Unwrap(SchemaToString(want.get()))) return;
  if (!RequestIsRelabel(a.schema, want.get())) {
    Raise(PyExc_NotImplementedError,
          "ferry.array: the producer returned " + Unwrap(SchemaToString(a.schema)) + " where " +
              Unwrap(SchemaToString(want.get())) +
              " was requested, and ferry does not cast (cast with the producer first)");
  }
}

}  // namespace

PyArray ArrayFrom(nb::handle obj, nb::handle requested_schema) {
  if (nb::isinstance<PyArray>(obj) && requested_schema.is_none()) return nb::cast<PyArray>(obj);
  nb::object request =
      requested_schema.is_none() ? nb::none() : requested_schema.attr("__arrow_c_schema__")();
  PyArray out;
  if (nb::hasattr(obj, "__arrow_c_device_array__")) {
    nb::tuple pair = nb::cast<nb::tuple>(obj.attr("__arrow_c_device_array__")(request));
    UniqueSchema schema = TakeSchema(pair[0]);
    UniqueDeviceArray array = TakeDeviceArray(pair[1]);
    out = MakeArray(std::move(schema), std::move(array));
  } else if (nb::hasattr(obj, "__arrow_c_device_stream__")) {
    out = SingleFromDeviceStream(TakeDeviceStream(obj.attr("__arrow_c_device_stream__")(request)));
  } else if (nb::hasattr(obj, "__arrow_c_array__")) {
    nb::tuple pair = nb::cast<nb::tuple>(obj.attr("__arrow_c_array__")(request));
    UniqueSchema schema = TakeSchema(pair[0]);
    UniqueArray array = TakeArray(pair[1]);
    out = FromHost(std::move(schema), std::move(array));
  } else if (nb::hasattr(obj, "__arrow_c_stream__")) {
    out =
        SingleFromDeviceStream(WrapHostStream(TakeStream(obj.attr("__arrow_c_stream__")(request))));
  } else {
    Raise(PyExc_TypeError,
          std::string("ferry.array: ") + nb::type_name(obj.type()).c_str() +
              " exports none of __arrow_c_device_array__, __arrow_c_device_stream__, "
              "__arrow_c_array__ or __arrow_c_stream__");
  }
  CheckRequested(out, requested_schema);
  return out;
}

void InitArray(nb::module_& m) {
  nb::enum_<ValidationLevel>(m, "ValidationLevel", "How much Array.validate checks.")
      .value("NONE", ValidationLevel::kNone)
      .value("MINIMAL", ValidationLevel::kMinimal, "Structure and sizes; reads no buffer.")
      .value("DEFAULT", ValidationLevel::kDefault, "Adds O(1) reads (first and last offsets).")
      .value("FULL", ValidationLevel::kFull, "Checks every element.");

  nb::class_<PyArray>(m, "Array",
                      "An Arrow array on any device: owned by ferry or moved in from any producer "
                      "of the Arrow PyCapsule interface. Children share the root's buffers.")
      .def_static("from_arrow", &ArrayFrom, nb::arg("obj"),
                  nb::arg("requested_schema") = nb::none(), "See ferry.array.")
      .def("__len__", [](const PyArray& a) { return a.array->length; })
      .def_prop_ro("length", [](const PyArray& a) { return a.array->length; })
      .def_prop_ro("offset", [](const PyArray& a) { return a.array->offset; })
      .def_prop_ro(
          "null_count", [](const PyArray& a) { return a.array->null_count; },
          "The null count the producer declared (-1 when unknown).")
      .def_prop_ro("n_buffers", [](const PyArray& a) { return a.array->n_buffers; })
      .def_prop_ro(
          "buffer_addresses",
          [](const PyArray& a) {
            std::vector<uintptr_t> out;
            for (int64_t i = 0; i < a.array->n_buffers; ++i)
              out.push_back(reinterpret_cast<uintptr_t>(a.array->buffers[i]));
            return out;
          },
          "The address of each buffer (0 for an absent one).")
      .def_prop_ro("device_type",
                   [](const PyArray& a) { return static_cast<DeviceType>(a.device_type()); })
      .def_prop_ro("device_id", [](const PyArray& a) { return a.device_id(); })
      .def_prop_ro(
          "device", [](const PyArray& a) { return &DeviceOf(a.device_type(), a.device_id()); },
          nb::rv_policy::reference)
      .def_prop_ro("schema", &SchemaOf)
      .def_prop_ro("type",
                   [](const PyArray& a) {
                     return PyDataType{a.root, Unwrap(SchemaView::Make(a.schema))};
                   })
      .def_prop_ro("n_children", [](const PyArray& a) { return a.array->n_children; })
      .def(
          "child",
          [](const PyArray& a, int64_t i) {
            if (i < 0 || i >= a.array->n_children) {
              Raise(PyExc_IndexError, "child " + std::to_string(i) + " out of range [0, " +
                                          std::to_string(a.array->n_children) + ")");
            }
            return PyArray{a.root, a.schema->children[i], a.array->children[i]};
          },
          nb::arg("i"))
      .def_prop_ro("children",
                   [](const PyArray& a) {
                     std::vector<PyArray> out;
                     for (int64_t i = 0; i < a.array->n_children; ++i) {
                       out.push_back(PyArray{a.root, a.schema->children[i], a.array->children[i]});
                     }
                     return out;
                   })
      .def_prop_ro("dictionary",
                   [](const PyArray& a) -> std::optional<PyArray> {
                     if (a.array->dictionary == nullptr) return std::nullopt;
                     return PyArray{a.root, a.schema->dictionary, a.array->dictionary};
                   })
      .def(
          "validate",
          [](const PyArray& a, ValidationLevel level) {
            ArrowDeviceArray node = a.NodeDeviceArray();
            DeviceArrayView view = Unwrap(DeviceArrayView::Make(a.schema));
            Status st;
            {
              nb::gil_scoped_release release;
              st = view.SetArray(&node);
              if (st.ok()) st = view.Validate(level);
            }
            Check(st);
          },
          nb::arg("level") = ValidationLevel::kFull,
          "Check the array at `level`; ValueError naming the path and element when it is not "
          "valid.")
      .def(
          "copy_to",
          [](const PyArray& a, Device& device) {
            ArrowDeviceArray node = a.NodeDeviceArray();
            DeviceArrayView view = Unwrap(DeviceArrayView::Make(a.schema));
            UniqueSchema schema = Unwrap(CopySchema(a.schema));
            Result<UniqueDeviceArray> copy = [&]() -> Result<UniqueDeviceArray> {
              nb::gil_scoped_release release;
              FERRY_RETURN_NOT_OK(view.SetArray(&node));
              return view.Copy(device);
            }();
            return MakeArray(std::move(schema), Unwrap(std::move(copy)));
          },
          nb::arg("device"),
          "A copy of the visible part of the array on `device` (offset 0), complete on return.")
      .def(
          "move_to",
          [](const PyArray& a, Device& device) {
            UniqueDeviceArray src = ExportDeviceArray(a);
            UniqueDeviceArray dst;
            UniqueSchema schema = Unwrap(CopySchema(a.schema));
            Status st;
            {
              nb::gil_scoped_release release;
              st = MoveToDevice(src.get(), device, dst.get());
            }
            Check(st);
            return MakeArray(std::move(schema), std::move(dst));
          },
          nb::arg("device"),
          "The same buffers seen from `device`, without a copy (CUDA_HOST or managed memory, or "
          "the same device); NotImplementedError when no zero-copy path exists (use copy_to).")
      .def("__arrow_c_schema__",
           [](const PyArray& a) { return SchemaCapsule(Unwrap(CopySchema(a.schema))); })
      .def(
          "__arrow_c_array__",
          [](const PyArray& a, nb::handle requested_schema) {
            if (!HostAccessible(a)) {
              Raise(PyExc_ValueError, std::string("__arrow_c_array__: the array is on ") +
                                          DeviceTypeName(a.device_type()) +
                                          ", not the CPU; use copy_to(ferry.Device.cpu()) or "
                                          "__arrow_c_device_array__");
            }
            WaitForHost(a);
            UniqueSchema schema = ExportSchemaFor(a, requested_schema);
            UniqueArray array;
            ExportArrayRef(a.array, a.root, array.get());
            return nb::make_tuple(SchemaCapsule(std::move(schema)), ArrayCapsule(std::move(array)));
          },
          nb::arg("requested_schema") = nb::none(),
          "(schema, array) capsules sharing this array's buffers; host-accessible data only.")
      .def(
          "__arrow_c_device_array__",
          [](const PyArray& a, nb::handle requested_schema, nb::kwargs kwargs) {
            CheckNoKwargs(kwargs, "__arrow_c_device_array__");
            UniqueSchema schema = ExportSchemaFor(a, requested_schema);
            return nb::make_tuple(SchemaCapsule(std::move(schema)),
                                  DeviceArrayCapsule(ExportDeviceArray(a)));
          },
          nb::arg("requested_schema") = nb::none(), nb::arg("kwargs"),
          "(schema, device array) capsules sharing this array's buffers, on its device.")
      .def("__repr__", [](const PyArray& a) {
        return "<ferry.Array " + Unwrap(SchemaToString(a.schema)) +
               " length=" + std::to_string(a.array->length) +
               " device=" + DeviceTypeName(a.device_type()) +
               (a.device_type() == ARROW_DEVICE_CPU ? "" : ":" + std::to_string(a.device_id())) +
               ">";
      });

  m.def("array", &ArrayFrom, nb::arg("obj"), nb::arg("requested_schema") = nb::none(),
        "Move in the array of any Arrow PyCapsule producer, trying __arrow_c_device_array__, "
        "__arrow_c_device_stream__, __arrow_c_array__ and __arrow_c_stream__ in that order (a "
        "stream must hold one array). No buffer is copied.");
}

}  // namespace ferry::python
