// ferry.MemoryView: a typed N-d view of memory on any device, built from the buffer protocol,
// __cuda_array_interface__ (parsed here by hand) or __dlpack__, exported through all three.
#include "memory_view.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <bit>
#include <cstdlib>
#include <cstring>

#include "ferry/format/schema.hpp"
#include "ferry/memview/cuda_array_interface.hpp"
#include "ferry/memview/device_view.hpp"
#include "ferry/memview/pep3118.hpp"

namespace ferry::python {

bool HostReadable(ArrowDeviceType type) noexcept {
  return type == ARROW_DEVICE_CPU || type == ARROW_DEVICE_CUDA_HOST ||
         type == ARROW_DEVICE_CUDA_MANAGED || type == ARROW_DEVICE_ROCM_HOST;
}

namespace {

using memview::MemoryView;

/// A Py_buffer kept until the last view of it goes; released under a GIL guard.
struct BufferOwner {
  Py_buffer buffer{};
};

MemoryView FromBuffer(nb::handle obj) {
  Py_buffer buffer;
  if (PyObject_GetBuffer(obj.ptr(), &buffer, PyBUF_RECORDS_RO) != 0) throw nb::python_error();
  std::shared_ptr<BufferOwner> owner(new BufferOwner{buffer}, [](BufferOwner* b) {
    if (nb::is_alive()) {
      nb::gil_scoped_acquire gil;
      PyBuffer_Release(&b->buffer);
    }
    delete b;
  });
  const Py_buffer& b = owner->buffer;
  MemoryView view;
  view.format = Unwrap(memview::PackFormatFromPep3118(b.format ? b.format : "B"));
  view.item_desc = Unwrap(memview::ParseItemFormat(view.format));
  if (view.item_desc.item_size != b.itemsize) {
    Raise(PyExc_ValueError, std::string("buffer format '") + (b.format ? b.format : "B") + "' is " +
                                std::to_string(view.item_desc.item_size) +
                                " bytes, the buffer's itemsize " + std::to_string(b.itemsize));
  }
  view.data = static_cast<uint8_t*>(b.buf);
  view.size = b.len;
  view.readonly = b.readonly != 0;
  view.item_size = b.itemsize;
  view.ndim = b.ndim;
  for (int i = 0; i < b.ndim; ++i) {
    view.shape.push_back(b.shape[i]);
    if (b.strides != nullptr) view.strides.push_back(b.strides[i]);
  }
  view.owner = std::move(owner);
  return view;
}

std::vector<int64_t> IntTuple(nb::handle seq, const char* what) {
  if (!PyTuple_Check(seq.ptr())) {
    Raise(PyExc_TypeError, std::string("__cuda_array_interface__: '") + what + "' must be a tuple");
  }
  std::vector<int64_t> out;
  for (nb::handle item : seq) out.push_back(nb::cast<int64_t>(item));
  return out;
}

MemoryView FromCudaArrayInterface(nb::handle obj, std::optional<int64_t>* stream) {
  nb::object dict_obj = obj.attr("__cuda_array_interface__");
  if (!PyDict_Check(dict_obj.ptr()))
    Raise(PyExc_TypeError, "__cuda_array_interface__ must be a dict");
  nb::dict d = nb::borrow<nb::dict>(dict_obj);
  for (const char* key : {"shape", "typestr", "data", "version"}) {
    if (!d.contains(key)) {
      Raise(PyExc_ValueError,
            std::string("__cuda_array_interface__ lacks the required key '") + key + "'");
    }
  }
  memview::CudaArrayInterface cai;
  cai.version = nb::cast<int32_t>(d["version"]);
  cai.shape = IntTuple(d["shape"], "shape");
  cai.typestr = nb::cast<std::string>(d["typestr"]);
  nb::object data = d["data"];
  if (!PyTuple_Check(data.ptr()) || PyTuple_Size(data.ptr()) != 2) {
    Raise(PyExc_TypeError, "__cuda_array_interface__: 'data' must be a (pointer, read_only) tuple");
  }
  cai.data = nb::cast<uintptr_t>(data[0]);
  cai.readonly = nb::cast<bool>(data[1]);
  if (d.contains("strides") && !d["strides"].is_none())
    cai.strides = IntTuple(d["strides"], "strides");
  if (d.contains("mask") && !d["mask"].is_none()) cai.has_mask = true;
  if (d.contains("stream") && !d["stream"].is_none()) cai.stream = nb::cast<int64_t>(d["stream"]);
  int64_t device_id = 0;
  if (nb::hasattr(obj, "__dlpack_device__")) {
    nb::tuple dev = nb::cast<nb::tuple>(obj.attr("__dlpack_device__")());
    device_id = nb::cast<int64_t>(dev[1]);
  }
  *stream = cai.stream;
  std::shared_ptr<const void> owner = PyOwner(obj);
  Result<MemoryView> view = [&] {
    nb::gil_scoped_release release;  // may record an event on the producer's stream
    return memview::FromCudaArrayInterface(cai, std::move(owner), device_id);
  }();
  return Unwrap(std::move(view));
}

int64_t Extent(const MemoryView& v) {
  if (v.n_items() == 0) return 0;
  int64_t extent = v.item_size;
  for (int64_t i = 0; i < v.ndim; ++i)
    extent += (v.shape[static_cast<size_t>(i)] - 1) * std::abs(v.stride(i));
  return extent;
}

// The struct-module format, or ferry's item format for low-precision floats, which have none.
std::string FormatOf(const MemoryView& v) {
  Result<std::string> pep3118 = memview::Pep3118FromItemDesc(v.item_desc);
  if (pep3118.ok()) return *pep3118;
  for (const memview::ItemComponent& c : v.item_desc.components) {
    if (c.low_float != memview::LowFloat::kNone) return v.format;
  }
  return Unwrap(std::move(pep3118));
}

// One native-order scalar written without its byte-order prefix ("<d" as "d"), as NumPy exports
// it: Python's memoryview indexes, converts and casts only such single-letter formats. These
// letters have the same size natively and in standard sizes, so nothing else changes.
std::string NativeScalarFormat(const std::string& pep3118) {
  const char native = std::endian::native == std::endian::little ? '<' : '>';
  if (pep3118.size() == 2 && pep3118[0] == native &&
      std::string_view("?bBhHiIqQefd").find(pep3118[1]) != std::string_view::npos) {
    return pep3118.substr(1);
  }
  return pep3118;
}

std::vector<int64_t> Strides(const MemoryView& v) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < v.ndim; ++i) out.push_back(v.stride(i));
  return out;
}

PyMemoryView Make(nb::handle obj) {
  PyMemoryView out;
  if (PyObject_CheckBuffer(obj.ptr())) {
    out.view = FromBuffer(obj);
  } else if (nb::hasattr(obj, "__cuda_array_interface__")) {
    out.view = FromCudaArrayInterface(obj, &out.stream);
  } else if (nb::hasattr(obj, "__dlpack__") || PyCapsule_CheckExact(obj.ptr())) {
    out.view = ViewFromDLPack(obj);
  } else {
    Raise(PyExc_TypeError,
          std::string("ferry.MemoryView: ") + nb::type_name(obj.type()).c_str() +
              " exposes neither the buffer protocol, __cuda_array_interface__ nor __dlpack__");
  }
  out.obj = nb::borrow(obj);
  return out;
}

/// What one buffer-protocol export keeps alive: a copy of the view (its owners, not the Python
/// object) and the descriptors the Py_buffer points into. It is the export's `obj`, so a consumer
/// that never releases its export pins only the memory: pyarrow, for one, skips every release
/// once the interpreter has begun to finalize, which would otherwise keep a ferry.MemoryView
/// instance alive past nanobind's shutdown and make it report a leak.
struct BufferExport {
  MemoryView view;
  std::string format;
  std::vector<Py_ssize_t> shape;
  std::vector<Py_ssize_t> strides;
};

constexpr const char* kBufferExport = "ferry.buffer_export";

int GetBuffer(PyObject* self, Py_buffer* view, int flags) {
  auto* mv = nb::inst_ptr<PyMemoryView>(self);
  const MemoryView& v = mv->view;
  view->obj = nullptr;
  auto fail = [](const std::string& msg) {
    PyErr_SetString(PyExc_BufferError, msg.c_str());
    return -1;
  };
  if (!HostReadable(v.device_type)) {
    return fail(std::string("ferry.MemoryView: the memory is on ") + DeviceTypeName(v.device_type) +
                ", which the buffer protocol cannot export; use __dlpack__");
  }
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && v.readonly)
    return fail("ferry.MemoryView: the view is read-only");
  if (!v.sub_offsets.empty())
    return fail("ferry.MemoryView: indirect (sub-offset) views are not exported");
  bool c = memview::IsRowMajorContiguous(v);
  bool f = memview::IsColumnMajorContiguous(v);
  if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !c && !f)
    return fail("ferry.MemoryView: not contiguous");
  if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !c)
    return fail("ferry.MemoryView: not C-contiguous");
  if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !f)
    return fail("ferry.MemoryView: not Fortran-contiguous");
  if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !c)
    return fail("ferry.MemoryView: strides are needed but not asked for");
  // Low-precision floats other than float16 have no struct-module code: without PyBUF_FORMAT
  // their one-byte items are what the protocol then means, unsigned bytes; asked for a format,
  // the export fails.
  Result<std::string> coded = memview::Pep3118FromItemDesc(v.item_desc);
  const bool low_float = !coded.ok() && !v.item_desc.components.empty() &&
                         v.item_desc.components[0].low_float != memview::LowFloat::kNone;
  if (low_float && (flags & PyBUF_FORMAT) == PyBUF_FORMAT) {
    return fail("ferry.MemoryView: " + coded.status().message());
  }
  if (mv->pep3118.empty()) {
    Result<std::string> format =
        low_float && v.item_size == 1 ? Result<std::string>(std::string("B")) : std::move(coded);
    if (!format.ok()) return fail("ferry.MemoryView: " + format.status().message());
    mv->pep3118 = NativeScalarFormat(*format);
    for (int64_t i = 0; i < v.ndim; ++i) {
      mv->py_shape.push_back(static_cast<Py_ssize_t>(v.shape[static_cast<size_t>(i)]));
      mv->py_strides.push_back(static_cast<Py_ssize_t>(v.stride(i)));
    }
  }
  if (v.sync_event != nullptr) {
    Status st = DeviceOf(v.device_type, v.device_id).SynchronizeEvent(v.sync_event, nullptr);
    if (!st.ok()) return fail(st.message());
  }
  auto* exported = new BufferExport{v, mv->pep3118, mv->py_shape, mv->py_strides};
  PyObject* keeper = PyCapsule_New(exported, kBufferExport, [](PyObject* capsule) {
    delete static_cast<BufferExport*>(PyCapsule_GetPointer(capsule, kBufferExport));
  });
  if (keeper == nullptr) {
    delete exported;
    return -1;
  }
  view->buf = v.data;
  view->obj = keeper;
  view->len = static_cast<Py_ssize_t>(v.n_items() * v.item_size);
  view->readonly = v.readonly ? 1 : 0;
  view->itemsize = static_cast<Py_ssize_t>(v.item_size);
  view->format = (flags & PyBUF_FORMAT) ? exported->format.data() : nullptr;
  view->ndim = static_cast<int>(v.ndim);
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? exported->shape.data() : nullptr;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? exported->strides.data() : nullptr;
  view->suboffsets = nullptr;
  view->internal = nullptr;
  return 0;
}

void ReleaseBuffer(PyObject*, Py_buffer*) {}

PyType_Slot kSlots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(GetBuffer)},
                        {Py_bf_releasebuffer, reinterpret_cast<void*>(ReleaseBuffer)},
                        {0, nullptr}};

nb::object Slice(nb::handle self, nb::handle key) {
  const PyMemoryView& mv = nb::cast<const PyMemoryView&>(self);
  const MemoryView& v = mv.view;
  // One index per leading dimension, as NumPy takes them: a slice keeps its dimension, an
  // integer (negative from the end) drops it; the dimensions not indexed are kept whole.
  std::vector<nb::handle> keys;
  if (PyTuple_Check(key.ptr())) {
    for (nb::handle k : nb::borrow<nb::tuple>(key)) keys.push_back(k);
  } else {
    keys.push_back(key);
  }
  for (nb::handle k : keys) {
    if (!PySlice_Check(k.ptr()) && !PyIndex_Check(k.ptr())) {
      Raise(PyExc_TypeError, std::string("ferry.MemoryView indices must be integers or slices, "
                                         "not ") +
                                 nb::type_name(k.type()).c_str());
    }
  }
  if (static_cast<int64_t>(keys.size()) > v.ndim) {
    Raise(PyExc_IndexError, "ferry.MemoryView: " + std::to_string(keys.size()) +
                                " indices for a view of " + std::to_string(v.ndim) + " dimensions");
  }
  if (!v.sub_offsets.empty()) Raise(PyExc_NotImplementedError, "indexing an indirect view");
  PyMemoryView out;
  out.view = v;
  out.view.export_token.reset();
  std::vector<int64_t> shape, strides;
  for (int64_t d = 0; d < v.ndim; ++d) {
    const auto extent = static_cast<Py_ssize_t>(v.shape[static_cast<size_t>(d)]);
    if (d >= static_cast<int64_t>(keys.size())) {
      shape.push_back(extent);
      strides.push_back(v.stride(d));
      continue;
    }
    const nb::handle k = keys[static_cast<size_t>(d)];
    if (PySlice_Check(k.ptr())) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(k.ptr(), &start, &stop, &step) != 0) throw nb::python_error();
      const Py_ssize_t n = PySlice_AdjustIndices(extent, &start, &stop, step);
      if (n > 0) out.view.data += start * v.stride(d);
      shape.push_back(n);
      strides.push_back(v.stride(d) * step);
      continue;
    }
    Py_ssize_t i = PyNumber_AsSsize_t(k.ptr(), PyExc_IndexError);
    if (i == -1 && PyErr_Occurred()) throw nb::python_error();
    if (i < -extent || i >= extent) {
      Raise(PyExc_IndexError, "ferry.MemoryView: index " + std::to_string(i) +
                                  " is out of range for dimension " + std::to_string(d) +
                                  " of extent " + std::to_string(extent));
    }
    out.view.data += (i < 0 ? i + extent : i) * v.stride(d);
  }
  out.view.ndim = static_cast<int64_t>(shape.size());
  out.view.shape = std::move(shape);
  out.view.strides = std::move(strides);
  out.view.size = Extent(out.view);
  out.obj = nb::borrow(self);  // the result references its parent
  out.stream = mv.stream;
  return nb::cast(std::move(out));
}

nb::dict CudaArrayInterfaceOf(const PyMemoryView& mv) {
  if (mv.view.device_type != ARROW_DEVICE_CUDA &&
      mv.view.device_type != ARROW_DEVICE_CUDA_MANAGED) {
    Raise(PyExc_AttributeError, std::string("__cuda_array_interface__: the memory is on ") +
                                    DeviceTypeName(mv.view.device_type) + ", not CUDA");
  }
  Result<memview::CudaArrayInterface> made = [&] {
    nb::gil_scoped_release release;  // may queue a stream wait on the view's event
    return memview::ToCudaArrayInterface(mv.view);
  }();
  memview::CudaArrayInterface cai = Unwrap(std::move(made));
  nb::dict d;
  nb::list shape;
  for (int64_t s : cai.shape) shape.append(s);
  d["shape"] = nb::tuple(shape);
  d["typestr"] = cai.typestr;
  d["data"] = nb::make_tuple(cai.data, cai.readonly);
  d["version"] = 3;
  if (cai.strides.empty()) {
    d["strides"] = nb::none();
  } else {
    nb::list strides;
    for (int64_t s : cai.strides) strides.append(s);
    d["strides"] = nb::tuple(strides);
  }
  d["descr"] = nb::make_tuple(nb::make_tuple("", cai.typestr));
  d["mask"] = nb::none();
  // Protocol v3: the stream the data is ready on. A view with an event names the stream made to
  // wait on it; a view without one (an imported interface's own stream aside) needs none.
  if (cai.stream) {
    d["stream"] = *cai.stream;
  } else if (mv.stream) {
    d["stream"] = *mv.stream;
  }
  return d;
}

}  // namespace

PyMemoryView ViewOfArrayObject(const PyArray& a) {
  auto owner = std::make_shared<memview::DeviceArrayOwner>();
  owner->schema = Unwrap(CopySchema(a.schema));
  owner->array = ExportDeviceArray(a);
  PyMemoryView out;
  out.view = Unwrap(memview::ViewOfDeviceArray(owner, memview::kStrides | memview::kFormat));
  out.obj = nb::cast(a);
  return out;
}

void InitMemoryView(nb::module_& m) {
  nb::class_<PyMemoryView>(
      m, "MemoryView", nb::type_slots(kSlots), nb::is_weak_referenceable(),
      "A typed N-d view of memory on any device (pylibcudf's gpumemoryview, for "
      "every device): built from the buffer protocol, __cuda_array_interface__ or "
      "__dlpack__, and exported through each. Holds a strong reference to `obj`.")
      .def(
          "__init__",
          [](PyMemoryView* self, nb::handle obj) { new (self) PyMemoryView(Make(obj)); },
          nb::arg("obj"))
      .def_static(
          "from_array", &ViewOfArrayObject, nb::arg("array"),
          "A read-only view of a fixed-width (1-d), fixed-size list (2-d) or fixed_shape_tensor "
          "(N-d) ferry.Array's values, on its device, sharing its buffers.")
      .def_prop_ro(
          "obj", [](const PyMemoryView& mv) { return mv.obj; },
          "The object that owns the memory (a slice's parent view for slices).")
      .def_prop_ro("ptr",
                   [](const PyMemoryView& mv) { return reinterpret_cast<uintptr_t>(mv.view.data); })
      .def_prop_ro(
          "nbytes", [](const PyMemoryView& mv) { return Extent(mv.view); },
          "Bytes spanned from the first to the last item, following the strides.")
      .def_prop_ro("shape", [](const PyMemoryView& mv) { return mv.view.shape; })
      .def_prop_ro(
          "strides", [](const PyMemoryView& mv) { return Strides(mv.view); }, "In bytes.")
      .def_prop_ro("ndim", [](const PyMemoryView& mv) { return mv.view.ndim; })
      .def_prop_ro("itemsize", [](const PyMemoryView& mv) { return mv.view.item_size; })
      .def_prop_ro(
          "format", [](const PyMemoryView& mv) { return FormatOf(mv.view); },
          "The item format as the struct module spells it; ferry's own braced name for "
          "low-precision floats, which the struct module has no code for ('{float8_e4m3fn}').")
      .def_prop_ro("readonly", [](const PyMemoryView& mv) { return mv.view.readonly; })
      .def_prop_ro(
          "device_type",
          [](const PyMemoryView& mv) { return static_cast<DeviceType>(mv.view.device_type); })
      .def_prop_ro("device_id", [](const PyMemoryView& mv) { return mv.view.device_id; })
      .def_prop_ro(
          "stream", [](const PyMemoryView& mv) { return mv.stream; },
          "The producer's stream (from __cuda_array_interface__), or None.")
      .def_prop_ro("c_contiguous",
                   [](const PyMemoryView& mv) { return memview::IsRowMajorContiguous(mv.view); })
      .def_prop_ro("f_contiguous",
                   [](const PyMemoryView& mv) { return memview::IsColumnMajorContiguous(mv.view); })
      .def("__len__",
           [](const PyMemoryView& mv) {
             if (mv.view.ndim == 0) Raise(PyExc_TypeError, "len() of a 0-d ferry.MemoryView");
             return mv.view.shape[0];
           })
      .def("__getitem__", &Slice, nb::arg("key"),
           "A view that references this one, indexed as NumPy indexes: one slice or integer per "
           "leading dimension (a tuple for several); a slice keeps its dimension, an integer "
           "drops it (an item is a 0-d view: np.asarray(view[i])[()] reads it). No copy.")
      .def_prop_ro("__cuda_array_interface__", &CudaArrayInterfaceOf,
                   "Version 3, for CUDA memory only.")
      .def("__dlpack__", &ExportDLPack, nb::kw_only(), nb::arg("stream") = nb::none(),
           nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(),
           nb::arg("copy") = nb::none())
      .def("__dlpack_device__", &DLPackDevice)
      .def("export_to", &ExportToType, nb::arg("tensor_type"),
           "A new `tensor_type` object (torch.Tensor, say) sharing this view's memory, made by "
           "that type's DLPack C exchange API; on a device its current stream waits on the view.")
      .def("__repr__", [](const PyMemoryView& mv) {
        std::string shape;
        for (int64_t s : mv.view.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(s);
        return "<ferry.MemoryView format='" + FormatOf(mv.view) + "' shape=(" + shape +
               ") device=" + DeviceTypeName(mv.view.device_type) +
               (mv.view.readonly ? " readonly" : "") + ">";
      });

  m.def(
      "from_dlpack",
      [](nb::handle obj) {
        PyMemoryView out;
        out.view = ViewFromDLPack(obj);
        out.obj = nb::borrow(obj);
        return out;
      },
      nb::arg("obj"),
      "A MemoryView of any DLPack producer (or a DLPack capsule), zero-copy: through the "
      "producer type's C exchange API (__dlpack_c_exchange_api__) when it has one, else "
      "__dlpack__.");
  InitDLPackExchange(nb::type<PyMemoryView>(), nb::type<PyArray>());
}

}  // namespace ferry::python
