// Device array streams over a host ArrowArrayStream.
#include "ferry/device/device_array_stream.hpp"

#include <cstring>
#include <string>

#include "device/device_internal.hpp"

namespace ferry {

namespace {

struct StreamState {
  ArrowArrayStream inner;
  Device* device;
  std::string last_error;
};

StreamState* State(ArrowDeviceArrayStream* s) { return static_cast<StreamState*>(s->private_data); }

int GetSchema(ArrowDeviceArrayStream* self, ArrowSchema* out) {
  StreamState* st = State(self);
  return st->inner.get_schema(&st->inner, out);
}

int GetNext(ArrowDeviceArrayStream* self, ArrowDeviceArray* out) {
  StreamState* st = State(self);
  st->last_error.clear();  // an earlier failure must not shadow the producer's message
  ArrowArray array;
  std::memset(&array, 0, sizeof(array));
  int rc = st->inner.get_next(&st->inner, &array);
  if (rc != 0) return rc;
  if (array.release == nullptr) {
    // End of stream stays end of stream: never wrapped into a releasable array.
    std::memset(out, 0, sizeof(*out));
    out->device_type = st->device->device_type();
    out->device_id = st->device->device_id();
    return 0;
  }
  Status s = st->device->InitArray(out, &array, nullptr, nullptr);
  if (!s.ok()) {
    if (array.release != nullptr) array.release(&array);
    st->last_error = s.message();
    return s.code();
  }
  return 0;
}

const char* GetLastError(ArrowDeviceArrayStream* self) {
  StreamState* st = State(self);
  if (!st->last_error.empty()) return st->last_error.c_str();
  return st->inner.get_last_error(&st->inner);
}

void Release(ArrowDeviceArrayStream* self) {
  StreamState* st = State(self);
  if (st->inner.release != nullptr) st->inner.release(&st->inner);
  delete st;
  self->release = nullptr;
}

}  // namespace

Status BasicDeviceArrayStreamInit(ArrowDeviceArrayStream* out, ArrowArrayStream* array_stream,
                                  Device& device) {
  if (out == nullptr) return Status::Invalid("device array stream init: the output is NULL");
  if (array_stream == nullptr || array_stream->release == nullptr) {
    return Status::Invalid("device array stream init: the array stream is NULL or released");
  }
  auto* st = new StreamState{*array_stream, &device, {}};
  array_stream->release = nullptr;
  std::memset(out, 0, sizeof(*out));
  out->device_type = device.device_type();
  out->get_schema = &GetSchema;
  out->get_next = &GetNext;
  out->get_last_error = &GetLastError;
  out->release = &Release;
  out->private_data = st;
  return Status::OK();
}

}  // namespace ferry
