// C stream trampolines over a StreamProducer, and Status-returning stream calls.
#include "ferry/core/stream_adapter.hpp"

#include <cerrno>
#include <cstring>
#include <string>

#include "ferry/core/status_code.hpp"

namespace ferry {

namespace {

// The two C stream structs differ only in their item type; one template serves both.
template <typename Stream, typename Item>
struct Exported {
  std::unique_ptr<StreamProducer<Item>> producer;
  std::string last_error;

  static Exported* Of(Stream* s) { return static_cast<Exported*>(s->private_data); }

  static int Fail(Exported* self, const Status& st) {
    self->last_error = st.message();
    return CErrorCodeOf(st);
  }

  static int GetSchema(Stream* s, ArrowSchema* out) {
    Exported* self = Of(s);
    self->last_error.clear();
    std::memset(out, 0, sizeof(*out));
    const Status st = self->producer->GetSchema(out);
    return st.ok() ? 0 : Fail(self, st);
  }

  static int GetNext(Stream* s, Item* out) {
    Exported* self = Of(s);
    self->last_error.clear();
    std::memset(out, 0, sizeof(*out));
    const Status st = self->producer->GetNext(out);
    return st.ok() ? 0 : Fail(self, st);
  }

  static const char* GetLastError(Stream* s) {
    Exported* self = Of(s);
    return self->last_error.empty() ? nullptr : self->last_error.c_str();
  }

  static void Release(Stream* s) {
    if (s == nullptr || s->release == nullptr) return;
    delete Of(s);
    s->private_data = nullptr;
    s->release = nullptr;
  }

  static void Init(Stream* out, std::unique_ptr<StreamProducer<Item>> producer) {
    out->get_schema = &GetSchema;
    out->get_next = &GetNext;
    out->get_last_error = &GetLastError;
    out->private_data = new Exported{std::move(producer), {}};
    out->release = &Release;
  }
};

// The producer's own words pass through unchanged; without any, the call and the code's name.
template <typename Stream>
Status CallFailed(Stream* stream, const char* call, int code) {
  const char* text = stream->get_last_error != nullptr ? stream->get_last_error(stream) : nullptr;
  if (text != nullptr && *text != '\0') return Status(StatusCodeFromErrno(code), text, code);
  return Status::FromErrno(code, std::string("stream ") + call + " failed");
}

template <typename Stream>
Status CheckLive(Stream* stream, const char* call) {
  if (stream == nullptr || stream->release == nullptr) {
    return Status::Invalid(std::string("stream ") + call + ": the stream is NULL or released");
  }
  return Status::OK();
}

template <typename Stream>
Status GetSchemaOf(Stream* stream, ArrowSchema* out) {
  FERRY_RETURN_NOT_OK(CheckLive(stream, "get_schema"));
  std::memset(out, 0, sizeof(*out));
  if (const int rc = stream->get_schema(stream, out); rc != 0) {
    return CallFailed(stream, "get_schema", rc);
  }
  if (out->release == nullptr) return Status::Invalid("stream get_schema returned no schema");
  return Status::OK();
}

template <typename Stream, typename Item>
Status GetNextOf(Stream* stream, Item* out) {
  FERRY_RETURN_NOT_OK(CheckLive(stream, "get_next"));
  std::memset(out, 0, sizeof(*out));
  if (const int rc = stream->get_next(stream, out); rc != 0) {
    return CallFailed(stream, "get_next", rc);
  }
  return Status::OK();
}

}  // namespace

UniqueArrayStream ExportArrayStream(std::unique_ptr<ArrayProducer> producer) {
  UniqueArrayStream out;
  Exported<ArrowArrayStream, ArrowArray>::Init(out.get(), std::move(producer));
  return out;
}

UniqueDeviceArrayStream ExportDeviceArrayStream(std::unique_ptr<DeviceArrayProducer> producer,
                                                ArrowDeviceType device_type) {
  UniqueDeviceArrayStream out;
  out->device_type = device_type;
  Exported<ArrowDeviceArrayStream, ArrowDeviceArray>::Init(out.get(), std::move(producer));
  return out;
}

Status StreamGetSchema(ArrowArrayStream* stream, ArrowSchema* out) {
  return GetSchemaOf(stream, out);
}

Status StreamGetSchema(ArrowDeviceArrayStream* stream, ArrowSchema* out) {
  return GetSchemaOf(stream, out);
}

Status StreamGetNext(ArrowArrayStream* stream, ArrowArray* out) { return GetNextOf(stream, out); }

Status StreamGetNext(ArrowDeviceArrayStream* stream, ArrowDeviceArray* out) {
  return GetNextOf(stream, out);
}

}  // namespace ferry
