// C surface of the memview layer: tag-keyed exporters, views ferry holds, and device arrays.
#include <cerrno>
#include <memory>
#include <string>

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
  out->reserved = new HeldRef(std::move(held));
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

HeldRef* Holder(const FerryMemoryView* view) { return static_cast<HeldRef*>(view->reserved); }

// A copy of a held view whose owner is the hold itself, for things built over it (arrays,
// DLPack tensors) that must keep the export alive after the C view is released.
Result<MemoryView> KeepAlive(const FerryMemoryView* view) {
  if (view == nullptr) return Status::Invalid("memory view is NULL");
  if (view->reserved == nullptr) {
    return Status::Invalid(
        "memory view is not held by ferry (get it with FerryMemoryViewGet) or was released");
  }
  HeldRef held = *Holder(view);
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
    HeldRef* held = Holder(view);
    view->reserved = nullptr;
    delete held;  // the exporter's release runs here unless an array still holds the view
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
    if (view->reserved != nullptr) {
      v = &(*Holder(view))->view;
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
    return HoldNew(ferry::memview::FromDLPack(tensor), out);
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
    return HoldNew(ferry::memview::FromDLPack(tensor), out);
  });
}

}  // extern "C"
