// ferry's side of the small-batches benchmark (bench/dipc/small_batches.py runs it, and every
// peer, in one run): a Dissociated IPC server of R-row batches (x int64, f float64, s a short
// string) and a client that drains them, each its own process.
//
//   ferry_small_batches serve TRANSPORT BODY MODE ROWS BATCHES RATE LISTEN
//       TRANSPORT shm|ucx, BODY 0 (packed) | 1 (buffer lists), LISTEN a host:port for UCX ("-":
//       the default). MODE kept: BATCHES batches written once into memory of the server's own
//       (Server::Keep) and lent to every client as they are. MODE live: a producer hands the
//       server a batch when it asks (made beforehand: see LiveProducer), writing its clock into
//       x[0] just before, and, with RATE > 0, hands batch i over at start + i / RATE. MODE
//       loaned: the same, the batches built in the server's shared region (LoaningProducer), so
//       that they are lent in place, not copied (BODY 1 only). Prints "READY <uri>" and serves
//       until its stdin closes; a live or loaned stream prints "TURNAROUND {p50, p99}" at its
//       end: the server's part of a batch's trip, from its stamp to the server's next ask.
//   ferry_small_batches read URI VALIDATION BATCHES ROWS STAMPED WARMUP SPIN_US [SERVER_PID]
//       VALIDATION full|default; STAMPED 1 where the batches carry their producer's clock;
//       SPIN_US the client's spin before it sleeps (ClientOptions::spin, 0: none).
//       Connects, drains, and prints one JSON line: the batches a second from the connected
//       stream to its end (the connection's set-up apart), with STAMPED the one-way latency
//       of each batch (its arrival at the caller minus x[0]) as p50, p99 and p99.9 after WARMUP
//       batches, and the states of its own threads and SERVER_PID's over that time
//       (thread_states.hpp).
//
// Both clocks are CLOCK_MONOTONIC (steady_clock), one clock for every process of the host and
// of its network namespaces.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/device/device.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/dipc/dataset.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/schema.hpp"
#include "thread_states.hpp"

namespace ferry::bench {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "ferry_small_batches: %s\n", what.c_str());
  std::exit(2);
}

void Check(const Status& st, const char* doing) {
  if (!st.ok()) Die(std::string(doing) + ": " + st.message());
}

template <typename T>
T Value(Result<T> r, const char* doing) {
  Check(r.status(), doing);
  return std::move(r).value();
}

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

void SleepUntilNs(int64_t when) {
  timespec ts{static_cast<time_t>(when / 1000000000), static_cast<long>(when % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

int64_t Percentile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

// The batches the reader leaves out of its latency figures: as small_batches.py's warmup().
int64_t Warmup(int64_t batches) { return std::min<int64_t>(100, batches / 10); }

// The server's part of a stamped batch's trip, as its producer sees it: from the stamp on batch i
// to the server's next ask (GetNext for batch i + 1), which a session makes once batch i is sent.
// What the server does after the send, before it asks, is counted too, so it bounds the server's
// part from above. Printed as one "TURNAROUND {...}" line on stdout when the stream ends.
class Turnaround {
 public:
  explicit Turnaround(int64_t batches) : batches_(batches) {
    gaps_.reserve(static_cast<size_t>(batches));
  }
  // At the top of GetNext, before any pacing sleep.
  void Asked() {
    if (last_ == 0) return;
    gaps_.push_back(NowNs() - last_);
    last_ = 0;
    if (static_cast<int64_t>(gaps_.size()) == batches_) Report();
  }
  void Stamped(int64_t at) { last_ = at; }

 private:
  void Report() {
    std::vector<int64_t> kept(gaps_.begin() + Warmup(batches_), gaps_.end());
    std::sort(kept.begin(), kept.end());
    std::printf("TURNAROUND {\"p50\": %lld, \"p99\": %lld}\n",
                static_cast<long long>(Percentile(kept, 0.5)),
                static_cast<long long>(Percentile(kept, 0.99)));
    std::fflush(stdout);
  }

  int64_t batches_;
  int64_t last_ = 0;
  std::vector<int64_t> gaps_;
};

// The benchmark's batch: row i is (i, i * 0.5, "v<i % 1000>"), as small_batches_peers.py builds
// it for the Python peers.
struct Template {
  UniqueSchema schema;
  UniqueDeviceArray batch;
};

// The benchmark's batch of `rows` rows, its buffers from `allocator` (NULL: the default).
UniqueArray MakeBatch(const ArrowSchema* schema, int64_t rows, Allocator* allocator) {
  auto b = Value(ArrayBuilder::Make(schema, allocator), "builder");
  for (int64_t i = 0; i < rows; ++i) {
    Check(b->child(0)->AppendInt(i), "append");
    Check(b->child(1)->AppendDouble(static_cast<double>(i) * 0.5), "append");
    Check(b->child(2)->AppendBytes("v" + std::to_string(i % 1000)), "append");
    Check(b->FinishElement(), "append");
  }
  return Value(b->Finish(), "finish");
}

Template MakeTemplate(int64_t rows) {
  Field root =
      Field::Make("+s", "", {Field::Make("l", "x"), Field::Make("g", "f"), Field::Make("u", "s")});
  root.flags = 0;
  Template t;
  t.schema = Value(root.Export(), "schema");
  UniqueArray a = MakeBatch(t.schema.get(), rows, nullptr);
  a.move_to(&t.batch->array);
  t.batch->device_id = -1;
  t.batch->device_type = ARROW_DEVICE_CPU;
  return t;
}

// x[0] of a CPU batch of the benchmark's schema.
int64_t* Stamp(ArrowArray* batch) {
  ArrowArray* x = batch->children[0];
  return static_cast<int64_t*>(const_cast<void*>(x->buffers[1])) + x->offset;
}

// The live producer: batches made beforehand (64 copies of the template, taken in turn, so that
// one the server still holds is not written again for 63 batches), each stamped as it is handed
// over, as a producer whose data is ready writes it: what the server does with it (a copy into
// the shared region, or a send) is ferry's cost, as the C ring's copy into its slot is the ring's.
// A handed-over batch is borrowed: its release only marks it released.
class LiveProducer final : public DeviceArrayProducer {
 public:
  LiveProducer(std::shared_ptr<Template> t, int64_t batches, double rate)
      : t_(std::move(t)), batches_(batches), rate_(rate), turnaround_(batches) {}

  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema copy, CopySchema(t_->schema.get()));
    copy.move_to(out);
    return Status::OK();
  }

  Status GetNext(ArrowDeviceArray* out) override {
    turnaround_.Asked();
    if (next_ == batches_) return Status::OK();
    if (pool_.empty()) {
      FERRY_ASSIGN_OR_RAISE(DeviceArrayView view, DeviceArrayView::Make(t_->schema.get()));
      FERRY_RETURN_NOT_OK(view.SetArray(t_->batch.get()));
      for (int i = 0; i < kPool; ++i) {
        FERRY_ASSIGN_OR_RAISE(UniqueDeviceArray copy, view.Copy(*CpuDevice()));
        pool_.push_back(std::move(copy));
      }
      start_ns_ = NowNs();
    }
    ArrowDeviceArray* b = pool_[static_cast<size_t>(next_ % kPool)].get();
    if (rate_ > 0) SleepUntilNs(start_ns_ + static_cast<int64_t>(next_ * 1e9 / rate_));
    *Stamp(&b->array) = NowNs();
    turnaround_.Stamped(*Stamp(&b->array));
    *out = *b;
    out->array.release = [](ArrowArray* a) { a->release = nullptr; };
    ++next_;
    return Status::OK();
  }

 private:
  static constexpr int kPool = 64;
  std::shared_ptr<Template> t_;
  int64_t batches_;
  double rate_;
  int64_t next_ = 0;
  int64_t start_ns_ = 0;
  std::vector<UniqueDeviceArray> pool_;
  Turnaround turnaround_;
};

// The batches of the loaning producer, built in the server's shared region before the server
// is ready (kept apart from the clock, as the live producer's are made beforehand), and shared
// with the handed-over ones' holds: a batch may come back after its producer is gone. A batch
// handed over is taken again only once the server has released it (its client freed it).
struct LoanPool {
  // Built before the server starts: 1,024 1,000-row batches take 24 MB of the region. Larger
  // batches are built fewer, to the same bytes (at least 16): 1,024 of 10,000 rows would fill
  // the region's 256 MB before the server started.
  static constexpr int64_t kBatches = 1024;
  // How long Take waits for a lent batch to come back before it builds one more: long enough
  // that a client reading as fast as it can frees one first, so that no batch is built while
  // the clock runs (the server lends ahead as far as its producer gives).
  static constexpr std::chrono::milliseconds kGrowAfter{100};
  static int64_t Prebuilt(int64_t rows) {
    return std::clamp<int64_t>(kBatches * 1000 / std::max<int64_t>(rows, 1), 16, kBatches);
  }

  std::shared_ptr<Template> t;
  std::shared_ptr<Allocator> region;
  std::mutex mutex;
  std::condition_variable freed;     // a lent batch came back
  std::vector<UniqueArray> batches;  // grown under mutex
  std::vector<size_t> free;

  // Build one more batch in the region and mark it free.
  void Grow() {
    UniqueArray a = MakeBatch(t->schema.get(), t->batch->array.length, region.get());
    std::lock_guard lock(mutex);
    batches.push_back(std::move(a));
    free.push_back(batches.size() - 1);
  }
  // A free batch's slot: while every batch is lent, the first to come back, as a producer with
  // a fixed set of buffers waits for one; one built afresh if none comes back within kGrowAfter.
  size_t Take() {
    std::unique_lock lock(mutex);
    while (!freed.wait_for(lock, kGrowAfter, [this] { return !free.empty(); })) {
      lock.unlock();
      Grow();
      lock.lock();
    }
    const size_t slot = free.back();
    free.pop_back();
    return slot;
  }
};

// The loaning producer: as the live one, but its batches lie in the server's shared region
// (Server::region_allocator), so the server lends each where it lies instead of copying it, as
// a producer that writes its data straight into shared memory does.
class LoaningProducer final : public DeviceArrayProducer {
 public:
  LoaningProducer(std::shared_ptr<LoanPool> pool, int64_t batches, double rate)
      : pool_(std::move(pool)), batches_(batches), rate_(rate), turnaround_(batches) {}

  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema copy, CopySchema(pool_->t->schema.get()));
    copy.move_to(out);
    return Status::OK();
  }

  Status GetNext(ArrowDeviceArray* out) override {
    turnaround_.Asked();
    if (next_ == batches_) return Status::OK();
    if (next_ == 0) start_ns_ = NowNs();
    const size_t slot = pool_->Take();
    if (rate_ > 0) SleepUntilNs(start_ns_ + static_cast<int64_t>(next_ * 1e9 / rate_));
    ArrowArray* b = nullptr;
    {
      std::lock_guard lock(pool_->mutex);  // the vector may grow on another client's thread
      b = pool_->batches[slot].get();
    }
    *Stamp(b) = NowNs();
    turnaround_.Stamped(*Stamp(b));
    std::memset(out, 0, sizeof(*out));
    out->array = *b;
    out->array.private_data = new Hold{pool_, slot};
    out->array.release = [](ArrowArray* a) {
      auto* hold = static_cast<Hold*>(a->private_data);
      {
        std::lock_guard lock(hold->pool->mutex);
        hold->pool->free.push_back(hold->slot);
      }
      hold->pool->freed.notify_one();
      delete hold;
      a->release = nullptr;
    };
    out->device_id = -1;
    out->device_type = ARROW_DEVICE_CPU;
    ++next_;
    return Status::OK();
  }

 private:
  struct Hold {
    std::shared_ptr<LoanPool> pool;
    size_t slot;
  };

  std::shared_ptr<LoanPool> pool_;
  int64_t batches_;
  double rate_;
  int64_t next_ = 0;
  int64_t start_ns_ = 0;
  Turnaround turnaround_;
};

int Serve(char** argv) {
  const std::string transport = argv[0], body = argv[1], mode = argv[2];
  const int64_t rows = std::atoll(argv[3]), batches = std::atoll(argv[4]);
  const double rate = std::atof(argv[5]);
  const std::string listen = argv[6];
  auto t = std::make_shared<Template>(MakeTemplate(rows));
  dipc::ServerOptions o;
  o.transport = transport;
  if (listen != "-") o.listen = listen;
  o.body_type = body == "0" ? dipc::BodyType::kPacked : dipc::BodyType::kBufferList;
  std::unique_ptr<dipc::Server> server = Value(dipc::Server::Start(o), "starting the server");
  if (mode == "kept") {
    DeviceArrayView view = Value(DeviceArrayView::Make(t->schema.get()), "view");
    Check(view.SetArray(t->batch.get()), "view");
    std::vector<UniqueDeviceArray> copies;
    copies.reserve(static_cast<size_t>(batches));
    for (int64_t i = 0; i < batches; ++i) copies.push_back(Value(view.Copy(*CpuDevice()), "copy"));
    auto dataset = Value(
        dipc::Dataset::FromBatches(Value(CopySchema(t->schema.get()), "schema"), std::move(copies)),
        "dataset");
    Check(server->Keep("t", dataset), "keeping the batches");
  } else if (mode == "live") {
    server->Add("t", dipc::Dataset::FromStreamFactory([t, batches, rate]() {
                  return Result<UniqueDeviceArrayStream>(ExportDeviceArrayStream(
                      std::make_unique<LiveProducer>(t, batches, rate), ARROW_DEVICE_CPU));
                }));
  } else if (mode == "loaned") {
    auto pool = std::make_shared<LoanPool>();
    pool->t = t;
    pool->region = server->region_allocator();
    if (pool->region == nullptr) Die("serve: MODE loaned needs BODY 1 (a shared region)");
    const int64_t prebuilt = LoanPool::Prebuilt(t->batch->array.length);
    for (int64_t i = 0; i < std::min(prebuilt, batches); ++i) pool->Grow();
    server->Add("t", dipc::Dataset::FromStreamFactory([pool, batches, rate]() {
                  return Result<UniqueDeviceArrayStream>(ExportDeviceArrayStream(
                      std::make_unique<LoaningProducer>(pool, batches, rate), ARROW_DEVICE_CPU));
                }));
  } else {
    Die("serve: MODE is kept, live or loaned, not " + mode);
  }
  std::printf("READY %s\n", server->uri("t").ToString().c_str());
  std::fflush(stdout);
  char buf[256];
  while (read(STDIN_FILENO, buf, sizeof(buf)) > 0) {
  }
  if (!server->last_error().empty()) {
    std::fprintf(stderr, "ferry_small_batches serve: %s\n", server->last_error().c_str());
  }
  server->Stop();
  return 0;
}

int Read(int argc, char** argv) {
  const dipc::Uri uri = Value(dipc::Uri::Parse(argv[0]), "the URI");
  const std::string validation = argv[1];
  const int64_t batches = std::atoll(argv[2]), rows = std::atoll(argv[3]);
  const bool stamped = std::strcmp(argv[4], "1") == 0;
  const int64_t warmup = std::atoll(argv[5]);
  dipc::ClientOptions o;
  o.spin = std::chrono::microseconds(std::atoll(argv[6]));
  o.read.validation = validation == "full" ? ValidationLevel::kFull : ValidationLevel::kDefault;
  o.connect_timeout = std::chrono::milliseconds(10000);
  const int64_t connect_start = NowNs();
  UniqueDeviceArrayStream stream = Value(dipc::ConnectStream(uri, "t", o), "connecting");
  const pid_t server_pid = argc > 7 ? static_cast<pid_t>(std::atoll(argv[7])) : 0;
  const auto client_before = ReadThreadTimes(getpid());
  const auto server_before =
      server_pid > 0 ? ReadThreadTimes(server_pid) : std::map<int, ThreadTimes>{};
  const int64_t start = NowNs();
  std::vector<int64_t> latency;
  latency.reserve(static_cast<size_t>(batches));
  int64_t got = 0, last_f_ok = 0;
  std::string threads;  // ThreadStatesJson's list, of the time up to the last batch
  while (true) {
    UniqueDeviceArray batch;
    Check(StreamGetNext(stream.get(), batch.get()), "reading");
    if (!batch.valid()) break;
    const int64_t now = NowNs();
    ArrowArray& a = batch->array;
    if (a.length != rows) Die("a batch of " + std::to_string(a.length) + " rows");
    if (stamped) latency.push_back(now - *Stamp(&a));
    const ArrowArray* f = a.children[1];
    last_f_ok = static_cast<const double*>(f->buffers[1])[f->offset + rows - 1] ==
                static_cast<double>(rows - 1) * 0.5;
    if (++got == batches) {
      // The threads' states up to the last batch, while it is held: the server's session still
      // waits for its free (a session's thread ends with its client's stream).
      const int64_t last = NowNs();
      threads = ThreadStatesJson(client_before, ReadThreadTimes(getpid()), last - start, "client");
      if (server_pid > 0) {
        const std::string server =
            ThreadStatesJson(server_before, ReadThreadTimes(server_pid), last - start, "server");
        if (!server.empty()) threads += (threads.empty() ? "" : ", ") + server;
      }
    }
  }
  const double seconds = static_cast<double>(NowNs() - start) / 1e9;
  if (got != batches) Die("read " + std::to_string(got) + " batches of " + std::to_string(batches));
  if (!last_f_ok) Die("the last batch's column f differs from the template's");
  std::string lat = "null";
  if (stamped && static_cast<int64_t>(latency.size()) > warmup) {
    std::vector<int64_t> kept(latency.begin() + warmup, latency.end());
    std::sort(kept.begin(), kept.end());
    lat = "{\"p50\": " + std::to_string(Percentile(kept, 0.5)) +
          ", \"p99\": " + std::to_string(Percentile(kept, 0.99)) +
          ", \"p999\": " + std::to_string(Percentile(kept, 0.999)) + "}";
  }
  std::printf(
      "{\"batches\": %lld, \"rows\": %lld, \"seconds\": %.9f, \"batches_per_s\": %.1f, "
      "\"connect_s\": %.6f, \"latency_ns\": %s, \"threads\": [%s]}\n",
      static_cast<long long>(got), static_cast<long long>(rows), seconds,
      static_cast<double>(got) / seconds, static_cast<double>(start - connect_start) / 1e9,
      lat.c_str(), threads.c_str());
  return 0;
}

}  // namespace
}  // namespace ferry::bench

int main(int argc, char** argv) {
  if (argc == 9 && std::strcmp(argv[1], "serve") == 0) return ferry::bench::Serve(argv + 2);
  if ((argc == 9 || argc == 10) && std::strcmp(argv[1], "read") == 0) {
    return ferry::bench::Read(argc - 2, argv + 2);
  }
  std::fprintf(stderr,
               "usage: ferry_small_batches serve TRANSPORT BODY MODE ROWS BATCHES RATE LISTEN\n"
               "       ferry_small_batches read URI VALIDATION BATCHES ROWS STAMPED WARMUP SPIN_US "
               "[SERVER_PID]\n"
               "(bench/dipc/small_batches.py runs it; see the head of small_batches.cpp)\n");
  return 2;
}
