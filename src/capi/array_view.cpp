// C surface of ArrayView: init, set, validate, reset and JSON rendering.
#include "ferry/format/array_view.hpp"

#include <cstdlib>
#include <cstring>

#include "capi/error.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/format/json.hpp"

using ferry::ArrayView;
using ferry::Status;

namespace {

// The private data is a DeviceArrayView so the same struct serves FerryDeviceArrayView.
ferry::DeviceArrayView* Dev(const FerryArrayView* view) {
  return static_cast<ferry::DeviceArrayView*>(view->private_data);
}
ArrayView* Cpp(const FerryArrayView* view) { return &Dev(view)->array_view(); }

void Mirror(FerryArrayView* view) {
  const ArrayView* v = Cpp(view);
  view->length = v->length();
  view->offset = v->offset();
  view->null_count = v->null_count();
  view->n_buffers = v->n_buffers();
  view->n_children = v->n_children();
  view->storage_type = static_cast<int32_t>(v->type().storage_type);
}

Status CheckView(const FerryArrayView* view) {
  if (view == nullptr) return Status::Invalid("view is NULL");
  if (view->private_data == nullptr) {
    return Status::Invalid("view is not initialised (call FerryArrayViewInitFromSchema)");
  }
  return Status::OK();
}

}  // namespace

extern "C" {

FerryErrorCode FerryArrayViewInitFromSchema(struct FerryArrayView* view,
                                            const struct ArrowSchema* schema,
                                            struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (view == nullptr) return Status::Invalid("view is NULL");
    std::memset(view, 0, sizeof(*view));
    FERRY_ASSIGN_OR_RAISE(ferry::DeviceArrayView cpp, ferry::DeviceArrayView::Make(schema));
    view->private_data = new ferry::DeviceArrayView(std::move(cpp));
    Mirror(view);
    return Status::OK();
  });
}

FerryErrorCode FerryArrayViewSetArray(struct FerryArrayView* view, const struct ArrowArray* array,
                                      struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_RETURN_NOT_OK(CheckView(view));
    Status st = Cpp(view)->SetArray(array);
    Mirror(view);
    return st;
  });
}

FerryErrorCode FerryArrayViewSetArrayMinimal(struct FerryArrayView* view,
                                             const struct ArrowArray* array,
                                             struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_RETURN_NOT_OK(CheckView(view));
    Status st = Cpp(view)->SetArrayMinimal(array);
    Mirror(view);
    return st;
  });
}

FerryErrorCode FerryArrayViewValidate(struct FerryArrayView* view, int32_t level,
                                      struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_RETURN_NOT_OK(CheckView(view));
    const int32_t raw = level;
    if (raw < FERRY_VALIDATION_LEVEL_NONE || raw > FERRY_VALIDATION_LEVEL_FULL) {
      return Status::Invalid("unknown validation level " + std::to_string(raw));
    }
    return Cpp(view)->Validate(static_cast<ferry::ValidationLevel>(raw));
  });
}

void FerryArrayViewReset(struct FerryArrayView* view) {
  if (view == nullptr) return;
  delete Dev(view);
  std::memset(view, 0, sizeof(*view));
}

FerryErrorCode FerryArrayViewToJson(const struct FerryArrayView* view, char** out_json,
                                    struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_RETURN_NOT_OK(CheckView(view));
    if (out_json == nullptr) return Status::Invalid("out_json is NULL");
    FERRY_ASSIGN_OR_RAISE(std::string json, ferry::ArrayToJson(*Cpp(view)));
    char* out = static_cast<char*>(std::malloc(json.size() + 1));
    if (out == nullptr) return Status::OutOfMemory("rendering JSON");
    std::memcpy(out, json.c_str(), json.size() + 1);
    *out_json = out;
    return Status::OK();
  });
}

FerryErrorCode FerryArrayViewBufferView(const struct FerryArrayView* view, int64_t i,
                                        struct FerryBufferView* out, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_RETURN_NOT_OK(CheckView(view));
    if (out == nullptr) return Status::Invalid("out is NULL");
    const ferry::ArrayView& v = *Cpp(view);
    if (i < 0 || i >= v.n_buffers()) {
      return Status::Invalid("buffer " + std::to_string(i) + " is outside [0, " +
                             std::to_string(v.n_buffers()) + ")");
    }
    out->data = v.buffer(i).data;
    out->size = v.buffer(i).size;
    return Status::OK();
  });
}

void FerryFree(void* ptr) { std::free(ptr); }

}  // extern "C"
