// C surface of the memview layer: tag-keyed exporters, views ferry holds, and device arrays.
#include <cerrno>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "capi/error.hpp"
#include "ferry/capi/ferry.h"
#include "ferry/core/status_code.hpp"
#include "ferry/memview/device_view.hpp"
#include "ferry/memview/dlpack.hpp"
#include "ferry/memview/registry.hpp"

using ferry::Result;
using ferry::Status;
using ferry::memview::ExporterRegistry;
using ferry::memview::MemoryView;

namespace {

// A view ferry holds for a C caller. The exporter's release runs when the last holder goes: the
// C view (FerryMemoryViewRelease) or an array built over it (FerryMemoryViewToDeviceArray).
struct Held {
  MemoryView view;
  Held() = default;
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;
  ~Held() {
    if (view.export_token) (void)ExporterRegistry::Global().Release(&view);
  }
};

using HeldRef = std::shared_ptr<Held>;

// What a C view's `reserved` points to. A view ferry made holds its C++ view from the start. A
// plain DLPack tensor (DescribePlainDLPack) is held as the tensor itself, with its byte strides
// inline, in this one allocation; its C++ view is made, once, only when something is built over
// the C view (KeepAlive) or indexes it. The C struct's shape points into the tensor.
struct Hold {
  static constexpr int64_t kInlineDims = 8;
  HeldRef held;
  DLManagedTensorVersioned* tensor = nullptr;  // owned until `held` takes it
  std::mutex making;                           // taken only to make `held` from `tensor`
  int64_t byte_strides[kInlineDims];

  Hold() = default;
  explicit Hold(HeldRef h) : held(std::move(h)) {}
  Hold(const Hold&) = delete;
  Hold& operator=(const Hold&) = delete;
  ~Hold() { Clear(); }

  // Let go of what is held: the view's owners, or the tensor through its deleter.
  void Clear() {
    held.reset();  // the exporter's release runs here unless an array still holds the view
    DLManagedTensorVersioned* t = std::exchange(tensor, nullptr);
    if (t != nullptr && t->deleter != nullptr) t->deleter(t);
  }

  // The C++ view; safe to call from several threads at once.
  Result<HeldRef> Ref() {
    std::lock_guard<std::mutex> lock(making);
    if (tensor != nullptr) {
      FERRY_ASSIGN_OR_RAISE(MemoryView view,
                            ferry::memview::FromDLPack(std::exchange(tensor, nullptr)));
      held = std::make_shared<Held>();
      held->view = std::move(view);
    }
    return held;
  }
};

// One released Hold per thread is kept for the next tensor that thread takes, so that a C
// consumer's run of exchanges allocates nothing (a malloc and a free are about half of what the
// exchange adds to the producer's own cost).
thread_local std::unique_ptr<Hold> t_spare_hold;

std::unique_ptr<Hold> NewHold() {
  if (t_spare_hold) return std::move(t_spare_hold);
  return std::make_unique<Hold>();
}

void FreeHold(Hold* hold) {
  std::unique_ptr<Hold> owned(hold);
  owned->Clear();
  if (!t_spare_hold) t_spare_hold = std::move(owned);
}

// Fill the C struct from a view ferry holds; the pointers stay valid while `held` lives.
void Publish(HeldRef held, void* obj, FerryMemoryView* out) {
  const MemoryView& v = held->view;
  *out = FerryMemoryView{};
  out->obj = obj;
  out->data = v.data;
  out->byte_size = v.size;
  out->readonly = v.readonly ? 1 : 0;
  out->format = v.format.empty() ? nullptr : v.format.c_str();
  out->item_size = v.item_size;
  out->ndim = v.ndim;
  out->shape = v.shape.empty() ? nullptr : v.shape.data();
  out->strides = v.strides.empty() ? nullptr : v.strides.data();
  out->sub_offsets = v.sub_offsets.empty() ? nullptr : v.sub_offsets.data();
  out->device_type = v.device_type;
  out->device_id = v.device_id;
  out->sync_event = v.sync_event;
  out->reserved = new Hold(std::move(held));
}

// A C++ view of what a C struct describes (an exporter's fill); copies only the descriptors.
Result<MemoryView> FromC(const FerryMemoryView& c) {
  MemoryView v;
  if (c.ndim < 0 || c.ndim > 64) {
    return Status::Invalid("memory view ndim " + std::to_string(c.ndim) + " is not in 0..64");
  }
  if (c.ndim > 0 && c.shape == nullptr) return Status::Invalid("memory view shape is NULL");
  if (c.byte_size < 0) return Status::Invalid("memory view byte_size is negative");
  v.data = static_cast<uint8_t*>(c.data);
  v.size = c.byte_size;
  v.readonly = c.readonly != 0;
  v.format = c.format == nullptr ? "" : c.format;
  FERRY_ASSIGN_OR_RAISE(v.item_desc, ferry::memview::ParseItemFormat(v.format));
  v.item_size = v.item_desc.item_size;
  if (c.item_size != 0 && c.item_size != v.item_size) {
    return Status::Invalid("memory view item_size " + std::to_string(c.item_size) +
                           " disagrees with format \"" + v.format + "\" (" +
                           std::to_string(v.item_size) + " bytes)");
  }
  v.ndim = c.ndim;
  const auto n = static_cast<size_t>(c.ndim);
  if (n > 0) v.shape.assign(c.shape, c.shape + n);
  for (size_t d = 0; d < n; ++d) {
    if (v.shape[d] < 0) {
      return Status::Invalid("memory view shape[" + std::to_string(d) + "] is negative");
    }
  }
  if (c.strides != nullptr) v.strides.assign(c.strides, c.strides + n);
  if (c.sub_offsets != nullptr) v.sub_offsets.assign(c.sub_offsets, c.sub_offsets + n);
  v.device_type = c.device_type;
  v.device_id = c.device_id;
  v.sync_event = c.sync_event;
  return v;
}

Hold* Holder(const FerryMemoryView* view) { return static_cast<Hold*>(view->reserved); }

// A copy of a held view whose owner is the hold itself, for things built over it (arrays,
// DLPack tensors) that must keep the export alive after the C view is released.
Result<MemoryView> KeepAlive(const FerryMemoryView* view) {
  if (view == nullptr) return Status::Invalid("memory view is NULL");
  if (view->reserved == nullptr) {
    return Status::Invalid(
        "memory view is not held by ferry (get it with FerryMemoryViewGet) or was released");
  }
  FERRY_ASSIGN_OR_RAISE(HeldRef held, Holder(view)->Ref());
  MemoryView keep = held->view;
  keep.owner = held;
  keep.export_token.reset();
  return keep;
}

// Hold a view made from a foreign tensor (its owner calls the deleter).
Status HoldNew(Result<MemoryView> made, FerryMemoryView* out) {
  FERRY_RETURN_NOT_OK(made.status());
  auto held = std::make_shared<Held>();
  held->view = std::move(made).ValueOrDie();
  Publish(std::move(held), nullptr, out);
  return Status::OK();
}

// Take a versioned tensor for a C caller (deleting it on failure): a plain one in one allocation
// and without building a C++ view, any other through FromDLPack, which also says what is wrong.
Status HoldTensor(DLManagedTensorVersioned* tensor, FerryMemoryView* out) {
  if (tensor == nullptr) return HoldNew(ferry::memview::FromDLPack(tensor), out);
  std::unique_ptr<Hold> hold = NewHold();
  const std::optional<ferry::memview::DLPackPlainLayout> layout =
      ferry::memview::DescribePlainDLPack(*tensor, hold->byte_strides, Hold::kInlineDims);
  if (!layout) return HoldNew(ferry::memview::FromDLPack(tensor), out);
  const DLTensor& t = tensor->dl_tensor;
  *out = FerryMemoryView{};
  out->data = static_cast<uint8_t*>(t.data) + t.byte_offset;
  out->byte_size = layout->byte_size;
  out->readonly = layout->readonly ? 1 : 0;
  out->format = layout->format.data();  // a string literal: NUL-terminated
  out->item_size = layout->item_size;
  out->ndim = t.ndim;
  out->shape = t.ndim == 0 ? nullptr : t.shape;
  out->strides = t.ndim == 0 || t.strides == nullptr ? nullptr : hold->byte_strides;
  out->device_type = static_cast<ArrowDeviceType>(t.device.device_type);
  out->device_id = t.device.device_type == kDLCPU ? -1 : t.device.device_id;
  hold->tensor = tensor;
  out->reserved = hold.release();
  return Status::OK();
}

ferry::memview::Exporter Wrap(const std::string& tag, FerryMemoryViewExporter c) {
  ferry::memview::Exporter e;
  e.get = [tag, c](const void* object, int32_t flags, MemoryView* out) -> Status {
    auto filled = std::make_shared<FerryMemoryView>();
    filled->obj = const_cast<void*>(object);
    // Host memory unless the exporter says otherwise: a zeroed struct would name no device.
    filled->device_type = ARROW_DEVICE_CPU;
    filled->device_id = -1;
    FerryError error{};
    const int rc = c.get(filled->obj, flags, filled.get(), &error);
    if (rc != 0) {
      return Status(ferry::StatusCodeFromErrno(rc),
                    "memory view exporter of \"" + tag + "\": " + error.message, rc);
    }
    Result<MemoryView> view = FromC(*filled);
    if (!view.ok()) {
      if (c.release != nullptr) c.release(filled.get());
      return Status(view.status().code(),
                    "memory view exporter of \"" + tag + "\": " + view.status().message());
    }
    *out = std::move(view).ValueOrDie();
    out->private_data = filled;
    return Status::OK();
  };
  if (c.release != nullptr) {
    e.release = [release = c.release](MemoryView* view) {
      auto filled = std::static_pointer_cast<FerryMemoryView>(view->private_data);
      if (filled) release(filled.get());
    };
  }
  if (c.available != nullptr) {
    e.available = [available = c.available](const void* object) {
      return available(const_cast<void*>(object)) != 0;
    };
  }
  return e;
}

}  // namespace

extern "C" {

FerryErrorCode FerryMemoryViewRegister(const char* tag, const FerryMemoryViewExporter* exporter,
                                       FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (tag == nullptr || *tag == '\0') return Status::Invalid("memory view tag is NULL or empty");
    if (exporter == nullptr || exporter->get == nullptr) {
      return Status::Invalid("memory view exporter of \"" + std::string(tag) +
                             "\" has no get function");
    }
    ExporterRegistry::Global().RegisterTag(tag, Wrap(tag, *exporter));
    return Status::OK();
  });
}

int FerryMemoryViewAvailable(const char* tag, void* obj) {
  if (tag == nullptr) return 0;
  try {
    return ExporterRegistry::Global().AvailableByTag(tag, obj) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

FerryErrorCode FerryMemoryViewGet(const char* tag, void* obj, int32_t flags, FerryMemoryView* out,
                                  FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (tag == nullptr) return Status::Invalid("memory view tag is NULL");
    if (out == nullptr) return Status::Invalid("memory view output is NULL");
    auto held = std::make_shared<Held>();
    FERRY_ASSIGN_OR_RAISE(held->view, ExporterRegistry::Global().GetByTag(tag, obj, flags));
    Publish(std::move(held), obj, out);
    return Status::OK();
  });
}

FerryErrorCode FerryMemoryViewRelease(FerryMemoryView* view, FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (view == nullptr) return Status::Invalid("memory view is NULL");
    Hold* held = Holder(view);
    view->reserved = nullptr;
    if (held != nullptr)
      FreeHold(held);  // the exporter's release runs here unless an array still holds the view
    return Status::OK();
  });
}

int64_t FerryMemoryViewExportCount(const void* obj) {
  return ExporterRegistry::Global().ExportCount(obj);
}

FerryErrorCode FerryMemoryViewItemSize(const char* format, int64_t* out, FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (out == nullptr) return Status::Invalid("item size output is NULL");
    FERRY_ASSIGN_OR_RAISE(auto desc,
                          ferry::memview::ParseItemFormat(format == nullptr ? "" : format));
    *out = desc.item_size;
    return Status::OK();
  });
}

FerryErrorCode FerryMemoryViewGetItemPointer(const FerryMemoryView* view, const int64_t* indices,
                                             void** out, FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (view == nullptr || out == nullptr) return Status::Invalid("memory view or output is NULL");
    if (view->ndim > 0 && indices == nullptr) return Status::Invalid("indices are NULL");
    MemoryView converted;
    const MemoryView* v = nullptr;
    HeldRef held;
    if (view->reserved != nullptr) {
      FERRY_ASSIGN_OR_RAISE(held, Holder(view)->Ref());
      v = &held->view;
    } else {
      FERRY_ASSIGN_OR_RAISE(converted, FromC(*view));
      v = &converted;
    }
    std::vector<int64_t> idx;
    if (v->ndim > 0) idx.assign(indices, indices + v->ndim);
    FERRY_ASSIGN_OR_RAISE(uint8_t * p, ferry::memview::GetItemPointerChecked(*v, idx));
    *out = p;
    return Status::OK();
  });
}

FerryErrorCode FerryMemoryViewOfDeviceArray(ArrowSchema* schema, ArrowDeviceArray* array,
                                            int32_t flags, int allow_nulls, FerryMemoryView* out,
                                            FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (schema == nullptr || schema->release == nullptr) {
      return Status::Invalid("schema is NULL or released");
    }
    if (array == nullptr || array->array.release == nullptr) {
      return Status::Invalid("device array is NULL or released");
    }
    if (out == nullptr) return Status::Invalid("memory view output is NULL");
    // Move in provisionally; hand the structs back untouched if the view cannot be made.
    auto owner = std::make_shared<ferry::memview::DeviceArrayOwner>();
    owner->schema = ferry::UniqueSchema(schema);
    owner->array = ferry::UniqueDeviceArray(array);
    ferry::memview::ArrowViewOptions options;
    options.allow_nulls = allow_nulls != 0;
    Result<MemoryView> view = ferry::memview::ViewOfDeviceArray(owner, flags, options);
    if (!view.ok()) {
      owner->schema.move_to(schema);
      owner->array.move_to(array);
      return view.status();
    }
    auto held = std::make_shared<Held>();
    held->view = std::move(view).ValueOrDie();
    Publish(std::move(held), nullptr, out);
    return Status::OK();
  });
}

FerryErrorCode FerryMemoryViewToDeviceArray(const FerryMemoryView* view, void* stream,
                                            int allow_copy, ArrowSchema* schema_out,
                                            ArrowDeviceArray* array_out, FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (schema_out == nullptr || array_out == nullptr) return Status::Invalid("output is NULL");
    // The array keeps the export (and so the exporter's memory) alive.
    FERRY_ASSIGN_OR_RAISE(MemoryView keep, KeepAlive(view));
    ferry::memview::FromViewOptions options;
    options.allow_copy = allow_copy != 0;
    FERRY_ASSIGN_OR_RAISE(ferry::memview::DeviceArrayOwner made,
                          ferry::memview::DeviceArrayFromView(keep, stream, options));
    made.schema.move_to(schema_out);
    made.array.move_to(array_out);
    return Status::OK();
  });
}

FerryErrorCode FerryMemoryViewToDLPack(const FerryMemoryView* view, DLManagedTensorVersioned** out,
                                       FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (out == nullptr) return Status::Invalid("DLPack output is NULL");
    FERRY_ASSIGN_OR_RAISE(MemoryView keep, KeepAlive(view));
    FERRY_ASSIGN_OR_RAISE(*out, ferry::memview::ToDLPack(keep));
    return Status::OK();
  });
}

FerryErrorCode FerryMemoryViewToDLPackLegacy(const FerryMemoryView* view, DLManagedTensor** out,
                                             FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (out == nullptr) return Status::Invalid("DLPack output is NULL");
    FERRY_ASSIGN_OR_RAISE(MemoryView keep, KeepAlive(view));
    FERRY_ASSIGN_OR_RAISE(*out, ferry::memview::ToDLPackLegacy(keep));
    return Status::OK();
  });
}

FerryErrorCode FerryMemoryViewFromDLPack(DLManagedTensorVersioned* tensor, FerryMemoryView* out,
                                         FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (out == nullptr) {
      if (tensor != nullptr && tensor->deleter != nullptr) tensor->deleter(tensor);
      return Status::Invalid("memory view output is NULL (the tensor was deleted)");
    }
    return HoldTensor(tensor, out);
  });
}

FerryErrorCode FerryMemoryViewFromDLPackLegacy(DLManagedTensor* tensor, FerryMemoryView* out,
                                               FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (out == nullptr) {
      if (tensor != nullptr && tensor->deleter != nullptr) tensor->deleter(tensor);
      return Status::Invalid("memory view output is NULL (the tensor was deleted)");
    }
    return HoldNew(ferry::memview::FromDLPackLegacy(tensor), out);
  });
}

FerryErrorCode FerryMemoryViewFromDLPackExchange(const DLPackExchangeAPI* api, void* py_object,
                                                 FerryMemoryView* out, FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (api == nullptr || out == nullptr || py_object == nullptr) {
      return Status::Invalid("DLPack exchange: the API, the object and the output must be set");
    }
    if (api->header.version.major != DLPACK_MAJOR_VERSION) {
      return Status::NotSupported("DLPack exchange: the producer's API is version " +
                                  std::to_string(api->header.version.major) + "." +
                                  std::to_string(api->header.version.minor) + ", not " +
                                  std::to_string(DLPACK_MAJOR_VERSION) + ".x");
    }
    if (api->managed_tensor_from_py_object_no_sync == nullptr) {
      return Status::Invalid("DLPack exchange: managed_tensor_from_py_object_no_sync is NULL");
    }
    DLManagedTensorVersioned* tensor = nullptr;
    if (api->managed_tensor_from_py_object_no_sync(py_object, &tensor) != 0 || tensor == nullptr) {
      return Status::Invalid(
          "DLPack exchange: the producer could not export the object (its Python exception is "
          "set)");
    }
    return HoldTensor(tensor, out);
  });
}

}  // extern "C"
