// ferry.aio's streams, read up to four batches ahead on the worker pool.
#include "aio_stream.hpp"

#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "ferry/core/keep_alive.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/format/schema.hpp"
#include "objects.hpp"

namespace ferry::python::aio {

namespace {

/// What one read gave: a batch, the end (an invalid array) or the stream's error.
using Read = Result<std::shared_ptr<UniqueDeviceArray>>;

/// How many batches may wait, read but not asked for. A stream that reached it reads again only
/// once no more than kRefillAt wait: the pool's thread then wakes once for several batches, and
/// the loop finds the next batch ready while it does (waking it costs tens of µs where an idle
/// core halts).
constexpr size_t kAhead = 4;
constexpr size_t kRefillAt = 2;

}  // namespace

/// A Stream's shared state: the Python object, the read job in flight and the makers of the
/// batches it posted each hold it.
struct StreamState {
  std::mutex mu;
  /// Read by the job in flight (busy) without the lock; else only under it.
  UniqueDeviceArrayStream stream;
  UniqueSchema schema;
  std::string location;
  std::deque<Read> ready;
  /// A read_next waiting for the read in flight: where its batch goes.
  std::optional<std::pair<std::shared_ptr<Completions>, uint64_t>> waiting;
  bool busy = false;     // a read job is queued or running
  bool full = false;     // kAhead batches waited: no read until kRefillAt or fewer do
  bool over = false;     // the end or an error was read: no more reads
  bool closing = false;  // closed: what the read in flight gives is dropped
};

namespace {

Maker BatchMaker(std::shared_ptr<StreamState> s, Read read) {
  auto held = std::make_shared<Read>(std::move(read));
  return [s = std::move(s), held]() -> nb::object {
    std::shared_ptr<UniqueDeviceArray> next = Unwrap(std::move(*held));
    if (!next->valid()) return nb::none();
    return nb::cast(MakeArray(Unwrap(CopySchema(s->schema.get())), std::move(*next)));
  };
}

void ReadJob(const std::shared_ptr<StreamState>& s);

/// With `s->mu` held: start a read when one is wanted and none is in flight.
void MaybeRead(const std::shared_ptr<StreamState>& s) {
  if (s->busy || s->over || s->closing || !s->stream.valid()) return;
  if (!s->waiting) {
    if (s->ready.size() >= kAhead) s->full = true;
    if (s->full && s->ready.size() > kRefillAt) return;
  }
  s->full = false;
  s->busy = true;
  Submit([s] { ReadJob(s); });
}

void ReadJob(const std::shared_ptr<StreamState>& s) {
  auto next = std::make_shared<UniqueDeviceArray>();
  const Status st = StreamGetNext(s->stream.get(), next->get());
  const bool last = !st.ok() || !next->valid();
  if (!last) *next = ReleasedInBackground(std::move(*next));
  Read read = st.ok() ? Read(std::move(next)) : Read(st.WithContext("stream"));
  std::optional<std::pair<std::shared_ptr<Completions>, uint64_t>> to;
  UniqueDeviceArrayStream done;  // released after the lock: that may take a while
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->busy = false;
    s->over = s->over || last;
    if (s->closing || last) done = std::move(s->stream);
    if (!s->closing) {
      if (s->waiting) {
        to = std::move(s->waiting);
        s->waiting.reset();
      } else {
        s->ready.push_back(std::move(read));
      }
      MaybeRead(s);
    }
  }
  if (to) to->first->Post(to->second, BatchMaker(s, std::move(read)));
  done.reset();
}

}  // namespace

Result<Stream> Stream::Open(UniqueDeviceArrayStream stream, std::string location) {
  Stream out;
  out.state_ = std::make_shared<StreamState>();
  StreamState& s = *out.state_;
  const Status st = StreamGetSchema(stream.get(), s.schema.get());
  if (!st.ok()) {
    ReleaseOnPool(std::move(stream));
    return st.WithContext("stream");
  }
  s.stream = std::move(stream);
  s.location = std::move(location);
  std::lock_guard<std::mutex> lock(s.mu);
  MaybeRead(out.state_);
  return out;
}

Stream::~Stream() { Close(); }

void Stream::ReadNext(uint64_t id, const std::shared_ptr<Completions>& queue) {
  const std::shared_ptr<StreamState>& s = state_;
  std::optional<Read> now;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->closing) Raise(PyExc_ValueError, "read_next: the stream is closed");
    if (s->waiting) Raise(PyExc_RuntimeError, "read_next: another read of this stream waits");
    if (!s->ready.empty()) {
      now = std::move(s->ready.front());
      s->ready.pop_front();
    } else if (s->over) {
      Raise(PyExc_ValueError, "read_next: the stream is over");
    } else {
      s->waiting.emplace(queue, id);
    }
    MaybeRead(s);
  }
  if (now) queue->Post(id, BatchMaker(s, std::move(*now)));
}

std::optional<nb::object> Stream::TakeReady() {
  const std::shared_ptr<StreamState>& s = state_;
  std::optional<Read> now;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->closing) Raise(PyExc_ValueError, "take_ready: the stream is closed");
    if (s->waiting) Raise(PyExc_RuntimeError, "take_ready: another read of this stream waits");
    if (s->ready.empty()) {
      if (s->over) Raise(PyExc_ValueError, "take_ready: the stream is over");
      return std::nullopt;
    }
    now = std::move(s->ready.front());
    s->ready.pop_front();
    MaybeRead(s);
  }
  return BatchMaker(s, std::move(*now))();
}

void Stream::Close() {
  if (!state_) return;
  StreamState& s = *state_;
  std::deque<Read> dropped;  // their batches hand their release to the pool
  std::optional<std::pair<std::shared_ptr<Completions>, uint64_t>> waiting;
  UniqueDeviceArrayStream idle;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.closing = true;
    dropped.swap(s.ready);
    waiting = std::move(s.waiting);
    s.waiting.reset();
    if (!s.busy) idle = std::move(s.stream);
  }
  if (waiting) waiting->first->Post(waiting->second, [] { return nb::none(); });
  ReleaseOnPool(std::move(idle));
}

UniqueSchema Stream::Schema() const { return Unwrap(CopySchema(state_->schema.get())); }

const std::string& Stream::location() const { return state_->location; }

UniqueDeviceArray ReleasedInBackground(UniqueDeviceArray array) {
  auto* original = new UniqueDeviceArray(std::move(array));
  std::shared_ptr<const void> keep(original, [](const void* p) {
    auto* a = static_cast<UniqueDeviceArray*>(const_cast<void*>(p));
    Release([a] { delete a; });
  });
  UniqueDeviceArray out;
  ArrowDeviceArray* raw = out.get();
  KeepAlive(keep).Mirror(original->get()->array, &raw->array);
  raw->device_type = original->get()->device_type;
  raw->device_id = original->get()->device_id;
  raw->sync_event = original->get()->sync_event;  // the original's, alive as long as the mirror
  return out;
}

void ReleaseOnPool(UniqueDeviceArrayStream stream) {
  if (!stream.valid()) return;
  auto held = std::make_shared<UniqueDeviceArrayStream>(std::move(stream));
  Submit([held] { held->reset(); });
}

}  // namespace ferry::python::aio
