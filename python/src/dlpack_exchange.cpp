// DLPack 1.3's C exchange API both ways: the tables ferry publishes as the type attribute
// `__dlpack_c_exchange_api__` of ferry.MemoryView and ferry.Array, and the consumer that
// ferry.from_dlpack and ferry.MemoryView use when a producer's type offers one.
#include <cstring>
#include <new>
#include <vector>

#include "ferry/memview/dlpack.hpp"
#include "memory_view.hpp"

namespace ferry::python {
namespace {

constexpr const char* kCapsuleName = "dlpack_exchange_api";

// CUDA's streams include NULL (the legacy default stream); elsewhere NULL means "no stream".
bool NullIsAStream(ArrowDeviceType type) {
  return type == ARROW_DEVICE_CUDA || type == ARROW_DEVICE_CUDA_HOST ||
         type == ARROW_DEVICE_CUDA_MANAGED;
}

// Run `body` as a C entry point must: no exception escapes, a failure is a Python error and -1.
template <typename F>
int Guarded(F&& body) noexcept {
  try {
    body();
    return 0;
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_BufferError, "ferry: unknown error in the DLPack exchange API");
  }
  return -1;
}

// The view behind a ferry.MemoryView or ferry.Array object (an Array is viewed as
// MemoryView.from_array views it). For device memory with a sync event, ferry's internal stream,
// which current_work_stream names, is made to wait on the event (no host wait).
memview::MemoryView ViewOfObject(PyObject* object) {
  nb::handle obj(object);
  memview::MemoryView view;
  if (nb::isinstance<PyMemoryView>(obj)) {
    view = nb::inst_ptr<PyMemoryView>(obj)->view;
  } else if (nb::isinstance<PyArray>(obj)) {
    view = ViewOfArrayObject(*nb::inst_ptr<PyArray>(obj)).view;
  } else {
    Raise(PyExc_TypeError, std::string("ferry's DLPack exchange API takes ferry.MemoryView or "
                                       "ferry.Array objects, not ") +
                               nb::type_name(obj.type()).c_str());
  }
  if (view.sync_event != nullptr) {
    Device& device = DeviceOf(view.device_type, view.device_id);
    void* internal = Unwrap(device.InternalStream());
    Check(device.SynchronizeEvent(view.sync_event, internal));
  }
  return view;
}

int ManagedTensorFromPyObject(void* py_object, DLManagedTensorVersioned** out) {
  return Guarded([&] {
    nb::handle obj(static_cast<PyObject*>(py_object));
    // The common case, a view with no event to order on, is exported without a copy of it.
    if (nb::isinstance<PyMemoryView>(obj) &&
        nb::inst_ptr<PyMemoryView>(obj)->view.sync_event == nullptr) {
      *out = Unwrap(memview::ToDLPack(nb::inst_ptr<PyMemoryView>(obj)->view));
      return;
    }
    *out = Unwrap(memview::ToDLPack(ViewOfObject(obj.ptr())));
  });
}

// Fills `out` borrowing from the ferry.MemoryView: its shape vector, and element strides kept on
// the object from the first call on (views are immutable, so they stay right).
int DLTensorFromPyObject(void* py_object, DLTensor* out) {
  return Guarded([&] {
    nb::handle obj(static_cast<PyObject*>(py_object));
    if (!nb::isinstance<PyMemoryView>(obj)) {
      Raise(PyExc_TypeError, "ferry's MemoryView exchange API takes ferry.MemoryView objects");
    }
    PyMemoryView& mv = *nb::inst_ptr<PyMemoryView>(obj);
    if (mv.view.sync_event != nullptr) (void)ViewOfObject(obj.ptr());
    DLManagedTensorVersioned* made = Unwrap(memview::ToDLPack(mv.view));
    *out = made->dl_tensor;
    if (mv.dl_strides.size() != static_cast<size_t>(mv.view.ndim)) {
      mv.dl_strides.assign(made->dl_tensor.strides, made->dl_tensor.strides + mv.view.ndim);
    }
    made->deleter(made);
    out->shape = mv.view.shape.empty() ? nullptr : mv.view.shape.data();
    out->strides = mv.dl_strides.empty() ? nullptr : mv.dl_strides.data();
  });
}

int ManagedTensorToPyObject(DLManagedTensorVersioned* tensor, void** out_py_object) {
  return Guarded([&] {
    PyMemoryView mv;
    mv.view = Unwrap(memview::FromDLPack(tensor));  // owns the tensor from here, failure included
    *out_py_object = nb::cast(std::move(mv)).release().ptr();
  });
}

// Allocates host memory shaped like the prototype: row-major, zeroed, the dtype as given.
int ManagedTensorAllocator(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                           void (*set_error)(void*, const char*, const char*)) {
  try {
    if (prototype->device.device_type != kDLCPU) {
      set_error(error_ctx, "BufferError", "ferry allocates DLPack tensors on the CPU only");
      return -1;
    }
    if (prototype->ndim < 0 || (prototype->ndim > 0 && prototype->shape == nullptr)) {
      set_error(error_ctx, "ValueError", "ferry: the prototype's ndim or shape is invalid");
      return -1;
    }
    struct Block {
      DLManagedTensorVersioned tensor{};
      std::vector<int64_t> shape;
      std::vector<int64_t> strides;
      std::vector<uint8_t> bytes;
    };
    auto block = std::make_unique<Block>();
    block->shape.assign(prototype->shape, prototype->shape + prototype->ndim);
    block->strides.resize(block->shape.size());
    uint64_t items = 1;
    for (size_t d = block->shape.size(); d-- > 0;) {
      if (block->shape[d] < 0 ||
          __builtin_mul_overflow(items, static_cast<uint64_t>(block->shape[d]), &items)) {
        set_error(error_ctx, "ValueError", "ferry: the prototype's shape is negative or too big");
        return -1;
      }
      block->strides[d] =
          d + 1 < block->shape.size() ? block->strides[d + 1] * block->shape[d + 1] : 1;
    }
    const uint64_t bits = uint64_t{prototype->dtype.bits} * prototype->dtype.lanes;
    block->bytes.assign(static_cast<size_t>((items * bits + 7) / 8), 0);
    DLManagedTensorVersioned& t = block->tensor;
    t.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    t.dl_tensor.data = block->bytes.empty() ? nullptr : block->bytes.data();
    t.dl_tensor.device = {kDLCPU, 0};
    t.dl_tensor.ndim = prototype->ndim;
    t.dl_tensor.dtype = prototype->dtype;
    t.dl_tensor.shape = block->shape.empty() ? nullptr : block->shape.data();
    t.dl_tensor.strides = block->strides.empty() ? nullptr : block->strides.data();
    t.manager_ctx = block.get();
    t.deleter = [](DLManagedTensorVersioned* self) {
      delete static_cast<Block*>(self->manager_ctx);
    };
    *out = &block.release()->tensor;
    return 0;
  } catch (const std::bad_alloc&) {
    set_error(error_ctx, "MemoryError", "ferry: out of memory allocating a DLPack tensor");
    return -1;
  }
}

// ferry reads device memory on its own internal stream; the CPU has none.
int CurrentWorkStream(DLDeviceType device_type, int32_t device_id, void** out_current_stream) {
  return Guarded([&] {
    *out_current_stream = nullptr;
    if (device_type == kDLCPU) return;
    Device& device = DeviceOf(static_cast<ArrowDeviceType>(device_type), device_id);
    void* internal = Unwrap(device.InternalStream());
    if (internal != nullptr) *out_current_stream = *static_cast<void**>(internal);
  });
}

constexpr DLPackExchangeAPI MakeTable(bool borrows) {
  DLPackExchangeAPI api{};
  api.header.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  api.header.prev_api = nullptr;
  api.managed_tensor_allocator = ManagedTensorAllocator;
  api.managed_tensor_from_py_object_no_sync = ManagedTensorFromPyObject;
  api.managed_tensor_to_py_object_no_sync = ManagedTensorToPyObject;
  api.dltensor_from_py_object_no_sync = borrows ? DLTensorFromPyObject : nullptr;
  api.current_work_stream = CurrentWorkStream;
  return api;
}

// An Array has no shape or strides of its own to lend, so its table leaves the borrowing export
// out (the specification allows NULL there).
const DLPackExchangeAPI kMemoryViewApi = MakeTable(true);
const DLPackExchangeAPI kArrayApi = MakeTable(false);

// The table a producer's type publishes, or nullptr (no attribute, or not a usable table).
const DLPackExchangeAPI* ProducerTable(PyObject* obj) {
  static PyObject* name = PyUnicode_InternFromString("__dlpack_c_exchange_api__");
  PyObject* capsule = PyObject_GetAttr(reinterpret_cast<PyObject*>(Py_TYPE(obj)), name);
  if (capsule == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  nb::object hold = nb::steal(capsule);
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return nullptr;
  auto* header = static_cast<DLPackExchangeAPIHeader*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  // A newer major version may chain to a table of the version ferry speaks.
  while (header != nullptr && header->version.major > DLPACK_MAJOR_VERSION)
    header = header->prev_api;
  if (header == nullptr || header->version.major != DLPACK_MAJOR_VERSION) return nullptr;
  // The capsule lives on the type, and the table it points at for the whole process.
  return reinterpret_cast<const DLPackExchangeAPI*>(header);
}

}  // namespace

std::optional<memview::MemoryView> ViewFromExchange(nb::handle obj) {
  const DLPackExchangeAPI* api = ProducerTable(obj.ptr());
  if (api == nullptr || api->managed_tensor_from_py_object_no_sync == nullptr) return std::nullopt;
  DLManagedTensorVersioned* tensor = nullptr;
  if (api->managed_tensor_from_py_object_no_sync(obj.ptr(), &tensor) != 0) throw nb::python_error();
  memview::MemoryView view = Unwrap(memview::FromDLPack(tensor));
  if (view.device_type == ARROW_DEVICE_CPU) return view;
  // No synchronization was done: the data is ready once the producer's current work stream has
  // run what it holds now. An event recorded there becomes the view's sync event.
  void* stream = nullptr;
  if (api->current_work_stream(static_cast<DLDeviceType>(view.device_type),
                               static_cast<int32_t>(view.device_id), &stream) != 0) {
    throw nb::python_error();
  }
  Result<Device*> device = ResolveDevice(view.device_type, view.device_id);
  if ((stream == nullptr && !NullIsAStream(view.device_type)) || !device.ok()) return view;
  std::shared_ptr<void> event = Unwrap((*device)->RecordEvent(&stream));
  struct Owner {
    std::shared_ptr<const void> tensor;
    std::shared_ptr<void> event;
  };
  auto both = std::make_shared<Owner>(Owner{view.owner, std::move(event)});
  view.sync_event = both->event.get();
  view.owner = std::move(both);
  return view;
}

nb::object ExportToType(const PyMemoryView& mv, nb::handle tensor_type) {
  if (!PyType_Check(tensor_type.ptr())) {
    Raise(PyExc_TypeError, "export_to takes a type (such as torch.Tensor), not " +
                               std::string(nb::type_name(tensor_type.type()).c_str()));
  }
  // ProducerTable looks on the type of its argument; a type's own type is its metaclass.
  nb::object capsule = nb::getattr(tensor_type, "__dlpack_c_exchange_api__", nb::none());
  if (capsule.is_none() || !PyCapsule_IsValid(capsule.ptr(), kCapsuleName)) {
    Raise(PyExc_TypeError, std::string(nb::type_name(tensor_type).c_str()) +
                               " has no DLPack C exchange API (__dlpack_c_exchange_api__)");
  }
  auto* header =
      static_cast<DLPackExchangeAPIHeader*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  while (header != nullptr && header->version.major > DLPACK_MAJOR_VERSION)
    header = header->prev_api;
  if (header == nullptr || header->version.major != DLPACK_MAJOR_VERSION) {
    Raise(PyExc_BufferError, std::string(nb::type_name(tensor_type).c_str()) +
                                 "'s DLPack exchange API has no major version " +
                                 std::to_string(DLPACK_MAJOR_VERSION));
  }
  const auto* api = reinterpret_cast<const DLPackExchangeAPI*>(header);
  memview::MemoryView view = mv.view;
  if (view.sync_event != nullptr) {
    // The new object's consumers run on the producer's current stream: make it wait.
    void* stream = nullptr;
    if (api->current_work_stream(static_cast<DLDeviceType>(view.device_type),
                                 static_cast<int32_t>(view.device_id), &stream) != 0) {
      throw nb::python_error();
    }
    Device& device = DeviceOf(view.device_type, view.device_id);
    const bool on_stream = stream != nullptr || NullIsAStream(view.device_type);
    Check(device.SynchronizeEvent(view.sync_event, on_stream ? &stream : nullptr));
  }
  DLManagedTensorVersioned* tensor = Unwrap(memview::ToDLPack(view));
  void* out = nullptr;
  if (api->managed_tensor_to_py_object_no_sync(tensor, &out) != 0) throw nb::python_error();
  return nb::steal(static_cast<PyObject*>(out));
}

void InitDLPackExchange(nb::handle memory_view_type, nb::handle array_type) {
  for (auto [type, api] :
       {std::pair{memory_view_type, &kMemoryViewApi}, std::pair{array_type, &kArrayApi}}) {
    PyObject* capsule = PyCapsule_New(const_cast<DLPackExchangeAPI*>(api), kCapsuleName, nullptr);
    if (capsule == nullptr) throw nb::python_error();
    nb::setattr(type, "__dlpack_c_exchange_api__", nb::steal(capsule));
  }
}

}  // namespace ferry::python
