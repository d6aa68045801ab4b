// The async producer: a thread that pulls from a ferry source as the consumer's request(n)
// allows and calls the consumer's ArrowAsyncDeviceStreamHandler.
#include <pthread.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "ferry/core/status_code.hpp"
#include "ferry/device/async_stream.hpp"

namespace ferry {

namespace {

// A C device stream as a C++ source, so one producer serves both kinds.
class CStreamSource final : public DeviceArrayProducer {
 public:
  explicit CStreamSource(UniqueDeviceArrayStream stream) : stream_(std::move(stream)) {}
  Status GetSchema(ArrowSchema* out) override {
    if (!stream_.valid()) return Status::Invalid("async producer: the source stream is released");
    return StreamGetSchema(stream_.get(), out);
  }
  Status GetNext(ArrowDeviceArray* out) override { return StreamGetNext(stream_.get(), out); }

 private:
  UniqueDeviceArrayStream stream_;
};

// What a task owns until the consumer extracts it: the batch. extract_data frees it, as the
// interface has tasks clean up there (a task never extracted is the consumer's leak).
struct TaskData {
  UniqueDeviceArray array;
};

int ExtractData(ArrowAsyncTask* task, ArrowDeviceArray* out) {
  if (task == nullptr || out == nullptr || task->private_data == nullptr) return EINVAL;
  auto* data = static_cast<TaskData*>(task->private_data);
  data->array.move_to(out);
  delete data;
  task->private_data = nullptr;
  return 0;
}

}  // namespace

struct AsyncStreamProducer::Impl {
 public:
  Impl(std::unique_ptr<DeviceArrayProducer> source, ArrowDeviceType device_type,
       ArrowAsyncDeviceStreamHandler* handler)
      : source_(std::move(source)), handler_(handler) {
    producer_.device_type = device_type;
    producer_.request = &Request;
    producer_.cancel = &CancelCallback;
    producer_.additional_metadata = nullptr;
    producer_.private_data = this;
  }

  void Start() {
    thread_ = std::thread([this] { Run(); });
    pthread_setname_np(thread_.native_handle(), "ferry-async");  // for top, perf and tests
  }

  void Join() {
    if (thread_.joinable()) thread_.join();
  }

  void Cancel() {
    std::lock_guard lock(mu_);
    counters_.cancelled = true;
    cv_.notify_all();
  }

  Status Wait(std::chrono::milliseconds limit, const std::shared_ptr<Clock>& clock) {
    std::unique_lock lock(mu_);
    if (!clock->WaitFor(cv_, lock, limit, [this] { return done_; })) {
      return Status::DeadlineExceeded("async producer: the stream still runs after " +
                                      std::to_string(limit.count()) + " ms");
    }
    return result_;
  }

  AsyncProducerCounters counters() const {
    std::lock_guard lock(mu_);
    return counters_;
  }

 private:
  static Impl* Of(ArrowAsyncProducer* p) { return static_cast<Impl*>(p->private_data); }

  // request(n): registers n more batches; never calls the handler from here (the thread does).
  static void Request(ArrowAsyncProducer* p, int64_t n) {
    Impl* self = Of(p);
    std::lock_guard lock(self->mu_);
    if (self->counters_.cancelled) return;
    if (n <= 0) {
      if (self->pending_error_.ok()) {
        self->pending_error_ =
            Status::Invalid("async producer: request(n) needs n > 0, got " + std::to_string(n));
      }
    } else {
      self->counters_.requested += n;
    }
    self->cv_.notify_all();
  }

  static void CancelCallback(ArrowAsyncProducer* p) { Of(p)->Cancel(); }

  // The stream failed: on_error with the error table's code and the message, then release.
  void Fail(const Status& st) {
    handler_->on_error(handler_, CErrorCodeOf(st), st.message().c_str(), nullptr);
    Release(st);
  }

  void Release(const Status& st) {
    handler_->release(handler_);
    // The source goes now, not with this object: a dipc or Flight client closes its session at
    // once, and the server frees what it lent.
    source_.reset();
    std::lock_guard lock(mu_);
    result_ = st;
    done_ = true;
    cv_.notify_all();
  }

  // The consumer returned non-zero: it wants no more calls but release.
  void Refused(int rc, const char* call) {
    Release(Status(
        StatusCodeFromErrno(rc),
        std::string("async producer: the consumer's ") + call + " returned " + std::to_string(rc),
        rc));
  }

  void Run() {
    handler_->producer = &producer_;
    UniqueSchema schema;
    if (Status st = source_->GetSchema(schema.get()); !st.ok()) return Fail(st);
    if (const int rc = handler_->on_schema(handler_, schema.get()); rc != 0) {
      return Refused(rc, "on_schema");
    }
    for (;;) {
      {
        std::unique_lock lock(mu_);
        // Unbounded by design: the consumer paces the stream; Cancel (also from the destructor)
        // ends the wait.
        cv_.wait(lock, [this] {
          return counters_.cancelled || !pending_error_.ok() ||
                 counters_.pulled < counters_.requested;
        });
        if (!pending_error_.ok()) {
          const Status st = pending_error_;
          lock.unlock();
          return Fail(st);
        }
        if (counters_.cancelled) break;
        ++counters_.pulled;
      }
      UniqueDeviceArray array;
      if (Status st = source_->GetNext(array.get()); !st.ok()) return Fail(st);
      if (!array.valid()) {
        if (const int rc = handler_->on_next_task(handler_, nullptr, nullptr); rc != 0) {
          return Refused(rc, "on_next_task");
        }
        return Release(Status::OK());
      }
      ArrowAsyncTask task{&ExtractData, new TaskData{std::move(array)}};
      const int rc = handler_->on_next_task(handler_, &task, nullptr);
      {
        std::lock_guard lock(mu_);
        ++counters_.delivered;
      }
      if (rc != 0) return Refused(rc, "on_next_task");
    }
    // Cancelled: the end of the stream, then release. The interface asks only for release, but a
    // consumer waiting for its next batch (Arrow C++'s) learns of the end from the NULL task.
    handler_->on_next_task(handler_, nullptr, nullptr);
    Release(Status::OK());
  }

  std::unique_ptr<DeviceArrayProducer> source_;
  ArrowAsyncDeviceStreamHandler* handler_;
  ArrowAsyncProducer producer_{};
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  AsyncProducerCounters counters_;
  Status pending_error_;
  Status result_;
  bool done_ = false;
};

AsyncStreamProducer::AsyncStreamProducer(std::shared_ptr<Impl> state) : state_(std::move(state)) {}

AsyncStreamProducer::~AsyncStreamProducer() {
  state_->Cancel();
  state_->Join();
}

Status AsyncStreamProducer::Wait(std::chrono::milliseconds limit,
                                 const std::shared_ptr<Clock>& clock) {
  return state_->Wait(limit, clock);
}

void AsyncStreamProducer::Cancel() { state_->Cancel(); }

AsyncProducerCounters AsyncStreamProducer::counters() const { return state_->counters(); }

Result<std::unique_ptr<AsyncStreamProducer>> ProduceAsync(
    std::unique_ptr<DeviceArrayProducer> source, ArrowDeviceType device_type,
    ArrowAsyncDeviceStreamHandler* handler) {
  if (handler == nullptr || handler->on_schema == nullptr || handler->on_next_task == nullptr ||
      handler->on_error == nullptr || handler->release == nullptr) {
    return Status::Invalid("async producer: the handler is NULL or lacks a callback");
  }
  if (source == nullptr) return Status::Invalid("async producer: the source is NULL");
  auto state = std::make_shared<AsyncStreamProducer::Impl>(std::move(source), device_type, handler);
  state->Start();
  return std::make_unique<AsyncStreamProducer>(std::move(state));
}

Result<std::unique_ptr<AsyncStreamProducer>> ProduceAsync(UniqueDeviceArrayStream source,
                                                          ArrowAsyncDeviceStreamHandler* handler) {
  const ArrowDeviceType device_type = source.valid() ? source->device_type : ARROW_DEVICE_CPU;
  return ProduceAsync(std::make_unique<CStreamSource>(std::move(source)), device_type, handler);
}

}  // namespace ferry
