// ferry's ArrowAsyncDeviceStreamHandlers: one that a pull-based ArrowDeviceArrayStream reads
// from, and one that pushes into callbacks.
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "ferry/core/status_code.hpp"
#include "ferry/device/async_stream.hpp"
#include "ferry/device/device.hpp"
#include "ferry/format/schema.hpp"

namespace ferry {

namespace {

// Wait on the host for `array`'s sync_event, through the device it names.
Status WaitEvent(ArrowDeviceArray* array) {
  if (array->sync_event == nullptr) return Status::OK();
  FERRY_ASSIGN_OR_RAISE(Device * device, ResolveDevice(array->device_type, array->device_id));
  return device->SynchronizeEvent(array->sync_event, nullptr);
}

// Extract a task and drop its batch (a cancelled stream's leftovers).
void DropTask(ArrowAsyncTask* task) {
  UniqueDeviceArray array;
  if (task->extract_data(task, array.get()) != 0)
    std::memset(array.get(), 0, sizeof(ArrowDeviceArray));
}

Status ErrorFromCode(int code, const char* message) {
  const std::string text =
      message != nullptr && *message != '\0' ? message : "the async producer reported an error";
  return {StatusCodeFromErrno(code), text, code};
}

// The producer a handler was given, callable until the handler is released. Recursive: a
// producer whose cancel or request reaches the handler's release on the same thread still works.
class ProducerSlot {
 public:
  void Set(ArrowAsyncProducer* producer) {
    std::lock_guard lock(mu_);
    producer_ = producer;
  }
  void Request(int64_t n) {
    std::lock_guard lock(mu_);
    if (producer_ != nullptr) producer_->request(producer_, n);
  }
  void Cancel() {
    std::lock_guard lock(mu_);
    if (producer_ != nullptr) producer_->cancel(producer_);
  }

 private:
  std::recursive_mutex mu_;
  ArrowAsyncProducer* producer_ = nullptr;
};

// --- The handler read as a stream --------------------------------------------------------------

struct StreamState {
  AsyncHandlerOptions options;
  ProducerSlot producer;
  std::mutex mu;
  std::condition_variable cv;
  UniqueSchema schema;
  bool have_schema = false;
  ArrowDeviceType device_type = ARROW_DEVICE_CPU;
  std::deque<ArrowAsyncTask> tasks;
  bool ended = false;
  bool handler_released = false;
  bool stream_released = false;
  Status error;
  std::string last_error;
};

using Shared = std::shared_ptr<StreamState>;

StreamState& StateOf(void* private_data) { return **static_cast<Shared*>(private_data); }

int OnSchema(ArrowAsyncDeviceStreamHandler* self, ArrowSchema* schema) {
  StreamState& s = StateOf(self->private_data);
  {
    std::lock_guard lock(s.mu);
    // A stream released before the schema came: stop the producer now.
    if (s.stream_released) return ECANCELED;
    s.schema = UniqueSchema(schema);
    s.have_schema = true;
    if (self->producer != nullptr) s.device_type = self->producer->device_type;
    // Under the lock, so a release of the stream from here on reaches the producer's cancel.
    s.producer.Set(self->producer);
    s.cv.notify_all();
  }
  if (self->producer != nullptr) self->producer->request(self->producer, s.options.queue_size);
  return 0;
}

int OnNextTask(ArrowAsyncDeviceStreamHandler* self, ArrowAsyncTask* task, const char* /*md*/) {
  StreamState& s = StateOf(self->private_data);
  std::unique_lock lock(s.mu);
  if (task == nullptr) {
    s.ended = true;
  } else if (s.stream_released) {
    lock.unlock();
    DropTask(task);
    return 0;
  } else {
    s.tasks.push_back(*task);
  }
  s.cv.notify_all();
  return 0;
}

void OnError(ArrowAsyncDeviceStreamHandler* self, int code, const char* message,
             const char* /*md*/) {
  StreamState& s = StateOf(self->private_data);
  std::lock_guard lock(s.mu);
  if (s.error.ok()) s.error = ErrorFromCode(code, message);
  s.cv.notify_all();
}

void ReleaseHandler(ArrowAsyncDeviceStreamHandler* self) {
  if (self == nullptr || self->release == nullptr) return;
  auto* shared = static_cast<Shared*>(self->private_data);
  StreamState& s = **shared;
  s.producer.Set(nullptr);
  {
    std::lock_guard lock(s.mu);
    s.handler_released = true;
    if (!s.ended && s.error.ok()) {
      s.error = Status::Cancelled("the async producer stopped before the end of the stream");
    }
    s.cv.notify_all();
  }
  delete shared;
  self->private_data = nullptr;
  self->release = nullptr;
}

int StreamFail(StreamState& s, const Status& st) {
  s.last_error = st.message();
  return CErrorCodeOf(st);
}

int AsyncStreamGetSchema(ArrowDeviceArrayStream* self, ArrowSchema* out) {
  StreamState& s = StateOf(self->private_data);
  std::unique_lock lock(s.mu);
  s.last_error.clear();
  const bool ready = s.options.clock->WaitFor(s.cv, lock, s.options.timeout, [&] {
    return s.have_schema || !s.error.ok() || s.handler_released;
  });
  if (!ready) {
    return StreamFail(s,
                      Status::DeadlineExceeded("async stream: no schema from the producer in " +
                                               std::to_string(s.options.timeout.count()) + " ms"));
  }
  if (!s.have_schema) return StreamFail(s, s.error);
  self->device_type = s.device_type;
  Result<UniqueSchema> copy = CopySchema(s.schema.get());
  if (!copy.ok()) return StreamFail(s, copy.status());
  copy->move_to(out);
  return 0;
}

int AsyncStreamGetNext(ArrowDeviceArrayStream* self, ArrowDeviceArray* out) {
  StreamState& s = StateOf(self->private_data);
  std::memset(out, 0, sizeof(*out));
  std::unique_lock lock(s.mu);
  s.last_error.clear();
  const bool ready = s.options.clock->WaitFor(s.cv, lock, s.options.timeout, [&] {
    return !s.tasks.empty() || s.ended || !s.error.ok() || s.handler_released;
  });
  if (!ready) {
    return StreamFail(s,
                      Status::DeadlineExceeded("async stream: no batch from the producer in " +
                                               std::to_string(s.options.timeout.count()) + " ms"));
  }
  if (s.tasks.empty()) {
    if (s.ended) return 0;  // `out` stays released: the end
    return StreamFail(s, s.error);
  }
  ArrowAsyncTask task = s.tasks.front();
  s.tasks.pop_front();
  self->device_type = s.device_type;
  lock.unlock();
  if (const int rc = task.extract_data(&task, out); rc != 0) {
    std::memset(out, 0, sizeof(*out));
    lock.lock();
    return StreamFail(s, ErrorFromCode(rc, "async stream: the producer's task failed to extract"));
  }
  if (s.options.wait_events) {
    if (Status st = WaitEvent(out); !st.ok()) {
      out->array.release(&out->array);
      lock.lock();
      return StreamFail(s, st);
    }
  }
  s.producer.Request(1);
  return 0;
}

const char* AsyncStreamGetLastError(ArrowDeviceArrayStream* self) {
  StreamState& s = StateOf(self->private_data);
  std::lock_guard lock(s.mu);
  return s.last_error.empty() ? nullptr : s.last_error.c_str();
}

void ReleaseStream(ArrowDeviceArrayStream* self) {
  if (self == nullptr || self->release == nullptr) return;
  auto* shared = static_cast<Shared*>(self->private_data);
  StreamState& s = **shared;
  std::deque<ArrowAsyncTask> left;
  {
    std::lock_guard lock(s.mu);
    s.stream_released = true;
    left.swap(s.tasks);
  }
  for (ArrowAsyncTask& task : left) DropTask(&task);
  s.producer.Cancel();
  delete shared;
  self->private_data = nullptr;
  self->release = nullptr;
}

Status CheckOptions(const AsyncHandlerOptions& options) {
  if (options.queue_size < 1) {
    return Status::Invalid("async handler: queue_size must be at least 1, got " +
                           std::to_string(options.queue_size));
  }
  if (options.clock == nullptr) return Status::Invalid("async handler: the clock is NULL");
  return Status::OK();
}

// --- The handler that pushes into callbacks ----------------------------------------------------

struct CallbackState {
  AsyncHandlerOptions options;
  AsyncSinkCallbacks sink;
  Status outcome;
  bool ended = false;
};

CallbackState& CallbacksOf(ArrowAsyncDeviceStreamHandler* self) {
  return *static_cast<CallbackState*>(self->private_data);
}

int CbFail(CallbackState& s, const Status& st) {
  if (s.outcome.ok()) s.outcome = st;
  return CErrorCodeOf(st);
}

int CbOnSchema(ArrowAsyncDeviceStreamHandler* self, ArrowSchema* schema) {
  CallbackState& s = CallbacksOf(self);
  UniqueSchema owned(schema);
  if (s.sink.on_schema) {
    if (Status st = s.sink.on_schema(std::move(owned)); !st.ok()) return CbFail(s, st);
  }
  if (self->producer != nullptr) self->producer->request(self->producer, s.options.queue_size);
  return 0;
}

int CbOnNextTask(ArrowAsyncDeviceStreamHandler* self, ArrowAsyncTask* task, const char* /*md*/) {
  CallbackState& s = CallbacksOf(self);
  if (task == nullptr) {
    s.ended = true;
    return 0;
  }
  UniqueDeviceArray array;
  if (const int rc = task->extract_data(task, array.get()); rc != 0) {
    std::memset(array.get(), 0, sizeof(ArrowDeviceArray));
    return CbFail(s, ErrorFromCode(rc, "async handler: the producer's task failed to extract"));
  }
  if (s.options.wait_events) {
    if (Status st = WaitEvent(array.get()); !st.ok()) return CbFail(s, st);
  }
  if (s.sink.on_batch) {
    if (Status st = s.sink.on_batch(std::move(array)); !st.ok()) return CbFail(s, st);
  }
  if (self->producer != nullptr) self->producer->request(self->producer, 1);
  return 0;
}

void CbOnError(ArrowAsyncDeviceStreamHandler* self, int code, const char* message,
               const char* /*md*/) {
  CallbackState& s = CallbacksOf(self);
  if (s.outcome.ok()) s.outcome = ErrorFromCode(code, message);
}

void CbRelease(ArrowAsyncDeviceStreamHandler* self) {
  if (self == nullptr || self->release == nullptr) return;
  auto* s = static_cast<CallbackState*>(self->private_data);
  if (s->outcome.ok() && !s->ended) {
    s->outcome = Status::Cancelled("the async producer stopped before the end of the stream");
  }
  if (s->sink.on_end) s->sink.on_end(s->outcome);
  delete s;
  self->private_data = nullptr;
  self->release = nullptr;
}

}  // namespace

Status AsyncHandlerToStream(ArrowAsyncDeviceStreamHandler* handler, ArrowDeviceArrayStream* stream,
                            AsyncHandlerOptions options) {
  if (handler == nullptr || stream == nullptr) {
    return Status::Invalid("async handler: the handler or the stream to fill is NULL");
  }
  FERRY_RETURN_NOT_OK(CheckOptions(options));
  auto state = std::make_shared<StreamState>();
  state->options = std::move(options);
  *handler = ArrowAsyncDeviceStreamHandler{&OnSchema,       &OnNextTask, &OnError,
                                           &ReleaseHandler, nullptr,     new Shared(state)};
  stream->device_type = ARROW_DEVICE_CPU;
  stream->get_schema = &AsyncStreamGetSchema;
  stream->get_next = &AsyncStreamGetNext;
  stream->get_last_error = &AsyncStreamGetLastError;
  stream->release = &ReleaseStream;
  stream->private_data = new Shared(std::move(state));
  return Status::OK();
}

Status AsyncHandlerToCallbacks(ArrowAsyncDeviceStreamHandler* handler, AsyncSinkCallbacks sink,
                               AsyncHandlerOptions options) {
  if (handler == nullptr) return Status::Invalid("async handler: the handler to fill is NULL");
  FERRY_RETURN_NOT_OK(CheckOptions(options));
  auto* state = new CallbackState{std::move(options), std::move(sink), Status::OK(), false};
  *handler = ArrowAsyncDeviceStreamHandler{&CbOnSchema, &CbOnNextTask, &CbOnError,
                                           &CbRelease,  nullptr,       state};
  return Status::OK();
}

}  // namespace ferry
