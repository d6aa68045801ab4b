// Reading a flight's endpoints at once: a few reader threads, each opening one endpoint (the
// first is opened by the caller's thread meanwhile, for the schema) and reading its batches into
// a short queue of its own; the caller's stream takes them in the flight's order (ordered
// flights) or as they come.
#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/device/device_array.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/format/schema_view.hpp"
#include "flight/client_stream.hpp"

namespace ferry::flight::internal {

namespace {

// Batches each endpoint may hold ready before its reader waits for the caller.
constexpr size_t kQueueDepth = 2;

class ParallelProducer final : public DeviceArrayProducer {
 public:
  ParallelProducer(std::vector<EndpointOpener> endpoints, size_t parallel, bool ordered,
                   int64_t window)
      : endpoints_(std::move(endpoints)),
        slots_(endpoints_.size()),
        parallel_(std::max<size_t>(1, std::min(parallel, endpoints_.size()))),
        ordered_(ordered),
        window_(window) {}

  ~ParallelProducer() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    // A reader inside a read returns within its stream's own timeout.
    for (std::thread& t : readers_) t.join();
  }

  // Starts the readers, then opens the first endpoint on this thread for the stream's schema:
  // meanwhile the readers open the endpoints after it, so that their connections are set up
  // while the first one's is, not after it. A failure to open the first is the read's.
  Status Init() {
    for (size_t i = 0; i < parallel_; ++i) {
      readers_.emplace_back([this] { ReaderLoop(); });
      pthread_setname_np(readers_.back().native_handle(), "ferry-flight-rd");
    }
    Status st = OpenFirst();
    {
      std::lock_guard lock(mutex_);
      first_opened_ = true;
      if (!st.ok() && error_.ok()) error_ = st;  // the readers stop, reporting nothing
    }
    changed_.notify_all();
    return st;
  }

  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema copy, CopySchema(schema_.get()));
    copy.move_to(out);
    return Status::OK();
  }

  Status GetNext(ArrowDeviceArray* out) override {
    std::unique_lock lock(mutex_);
    if (window_ >= 0) {
      ++asked_;  // one more batch a paced reader may read
      changed_.notify_all();
    }
    while (true) {
      if (!error_.ok()) return error_;
      if (ordered_) {
        if (emit_ == slots_.size()) return Status::OK();  // the end: `out` stays released
        Slot& s = slots_[emit_];
        if (!s.batches.empty()) return Take(emit_, out);
        if (s.done) {
          ++emit_;  // the window moves: a reader may start another endpoint
          changed_.notify_all();
          continue;
        }
      } else {
        bool all_done = true;
        for (size_t i = 0; i < slots_.size(); ++i) {
          if (!slots_[i].batches.empty()) return Take(i, out);
          all_done = all_done && slots_[i].done;
        }
        if (all_done) return Status::OK();
      }
      changed_.wait(lock);
    }
  }

 private:
  struct Slot {
    std::deque<UniqueDeviceArray> batches;
    bool done = false;
    bool retired = false;
  };

  Status OpenFirst() {
    FERRY_ASSIGN_OR_RAISE(UniqueDeviceArrayStream first, endpoints_[0]());
    UniqueSchema schema;
    FERRY_RETURN_NOT_OK(StreamGetSchema(first.get(), schema.get()));
    std::lock_guard lock(mutex_);
    schema_ = std::move(schema);
    first_ = std::move(first);
    return Status::OK();
  }

  Status Take(size_t index, ArrowDeviceArray* out) {
    Slot& s = slots_[index];
    DeviceArrayMove(s.batches.front().get(), out);
    s.batches.pop_front();
    Retire(index);
    changed_.notify_all();
    return Status::OK();
  }

  // Claims endpoints one after another until none is left or the read stops. In the flight's
  // order, an endpoint starts only within `parallel_` of the one the caller is taking from, so
  // at most that many endpoints hold batches at once.
  void ReaderLoop() {
    while (true) {
      size_t index = 0;
      UniqueDeviceArrayStream stream;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] {
          return stopping_ || !error_.ok() || next_ == slots_.size() ||
                 (open_ < parallel_ && (!ordered_ || next_ < emit_ + parallel_));
        });
        if (stopping_ || !error_.ok() || next_ == slots_.size()) return;
        index = next_++;
        ++open_;
        if (index == 0) {
          // Opened by Init's thread (which sets error_ if it cannot be).
          changed_.wait(lock, [&] { return stopping_ || first_opened_; });
          if (stopping_ || !error_.ok()) return;
          stream = std::move(first_);
        }
      }
      Status st = ReadEndpoint(index, std::move(stream));
      std::lock_guard lock(mutex_);
      if (!st.ok() && error_.ok() && !stopping_) {
        error_ = st.WithContext("endpoint " + std::to_string(index) + " of " +
                                std::to_string(slots_.size()));
      }
      slots_[index].done = true;
      Retire(index);
      changed_.notify_all();
    }
  }

  // An endpoint read to its end whose batches the caller has all taken no longer counts against
  // `parallel_`. Called with the lock held, once the slot may have become both.
  void Retire(size_t index) {
    Slot& s = slots_[index];
    if (s.done && s.batches.empty() && !s.retired) {
      s.retired = true;
      --open_;
    }
  }

  Status ReadEndpoint(size_t index, UniqueDeviceArrayStream stream) {
    if (!stream.valid()) {
      FERRY_ASSIGN_OR_RAISE(stream, endpoints_[index]());
      UniqueSchema s;
      FERRY_RETURN_NOT_OK(StreamGetSchema(stream.get(), s.get()));
      {
        // The first endpoint's schema, which this one's must equal, may still be on its way.
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stopping_ || first_opened_; });
        if (stopping_ || !error_.ok()) return Status::OK();
      }
      // The batches are read as the first endpoint's: metadata may differ, the data may not.
      FERRY_ASSIGN_OR_RAISE(bool same, SchemaEquals(s.get(), schema_.get()));
      if (!same) {
        FERRY_ASSIGN_OR_RAISE(std::string text, SchemaToString(s.get()));
        FERRY_ASSIGN_OR_RAISE(std::string first, SchemaToString(schema_.get()));
        return Status::Invalid("its schema " + text + " is not the first endpoint's, " + first);
      }
    }
    while (true) {
      if (!Pull(index)) return Status::OK();
      UniqueDeviceArray batch;
      FERRY_RETURN_NOT_OK(StreamGetNext(stream.get(), batch.get()));
      if (!batch.valid()) {
        Unpull();  // the end came against it: the read it allowed goes to another endpoint
        return Status::OK();
      }
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] {
        return stopping_ || !error_.ok() || slots_[index].batches.size() < kQueueDepth;
      });
      if (stopping_ || !error_.ok()) return Status::OK();
      slots_[index].batches.push_back(std::move(batch));
      changed_.notify_all();
    }
  }

  // Paced: wait until endpoint `index` may read one more batch, and count it. Reads past what
  // the caller asked for stay within the window; in the flight's order, an endpoint the caller
  // is not taking from leaves one read for the one it is, so the caller is never left waiting on
  // an endpoint that may not read. False when the read stops.
  bool Pull(size_t index) {
    if (window_ < 0) return true;
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] {
      if (stopping_ || !error_.ok()) return true;
      const int64_t left = asked_ + window_ - pulled_;
      return left >= (ordered_ && index != emit_ ? 2 : 1);
    });
    if (stopping_ || !error_.ok()) return false;
    ++pulled_;
    return true;
  }

  void Unpull() {
    if (window_ < 0) return;
    {
      std::lock_guard lock(mutex_);
      --pulled_;
    }
    changed_.notify_all();
  }

  std::vector<EndpointOpener> endpoints_;
  std::vector<Slot> slots_;
  const size_t parallel_;
  const bool ordered_;
  const int64_t window_;           // -1: unpaced
  int64_t asked_ = 0;              // paced: get_next calls so far
  int64_t pulled_ = 0;             // paced: batch reads started, less those that found the end
  UniqueSchema schema_;            // the first endpoint's, set once (first_opened_)
  UniqueDeviceArrayStream first_;  // endpoint 0, opened by Init, until a reader takes it
  bool first_opened_ = false;      // Init is done opening endpoint 0 (error_ says if it failed)
  std::vector<std::thread> readers_;
  std::mutex mutex_;
  std::condition_variable changed_;
  size_t next_ = 0;  // the next endpoint a reader claims
  size_t emit_ = 0;  // ordered: the endpoint the caller takes from
  size_t open_ = 0;  // endpoints claimed and not yet retired
  Status error_;
  bool stopping_ = false;
};

}  // namespace

Result<UniqueDeviceArrayStream> ReadParallel(std::vector<EndpointOpener> endpoints, size_t parallel,
                                             bool ordered, int64_t window,
                                             ArrowDeviceType device_type) {
  if (endpoints.empty()) return Status::Invalid("a parallel read of no endpoint");
  auto producer =
      std::make_unique<ParallelProducer>(std::move(endpoints), parallel, ordered, window);
  FERRY_RETURN_NOT_OK(producer->Init());
  return ExportDeviceArrayStream(std::move(producer), device_type);
}

}  // namespace ferry::flight::internal
