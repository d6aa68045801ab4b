// Reading a flight's endpoints at once (ReadParallel) against endpoints made here: each endpoint
// i yields batches whose single int64 value is 100 * i + j, so the order is known by hand; the
// endpoints count how many are open at once; one may fail at a chosen batch.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/schema.hpp"
#include "flight/client_stream.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::flight::internal {
namespace {

struct Counters {
  std::atomic<int> open{0};
  std::atomic<int> most_open{0};
  std::atomic<int64_t> reads{0};  // batches the endpoints handed out
};

// Endpoint `index`: `batches` batches of one row, `fail_at` (if >= 0) failing that batch.
class FakeEndpoint final : public DeviceArrayProducer {
 public:
  FakeEndpoint(int index, int batches, int fail_at, Counters* counters)
      : index_(index), batches_(batches), fail_at_(fail_at), counters_(counters) {
    const int now = ++counters_->open;
    int most = counters_->most_open.load();
    while (now > most && !counters_->most_open.compare_exchange_weak(most, now)) {
    }
  }
  ~FakeEndpoint() override { --counters_->open; }

  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema s, testing::BatchField({Field::Make("l", "x")}).Export());
    s.move_to(out);
    return Status::OK();
  }

  Status GetNext(ArrowDeviceArray* out) override {
    if (next_ == fail_at_)
      return Status::IOError("the peer went away at batch " + std::to_string(next_));
    if (next_ == batches_) return Status::OK();
    // A little time per batch, so that endpoints overlap.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    UniqueSchema s;
    FERRY_RETURN_NOT_OK(GetSchema(s.get()));
    FERRY_ASSIGN_OR_RAISE(std::unique_ptr<ArrayBuilder> b, ArrayBuilder::Make(s.get()));
    FERRY_RETURN_NOT_OK(b->child(0)->AppendInt(int64_t{100} * index_ + next_));
    FERRY_RETURN_NOT_OK(b->FinishElement());
    FERRY_ASSIGN_OR_RAISE(UniqueArray a, b->Finish());
    a.move_to(&out->array);
    out->device_type = ARROW_DEVICE_CPU;
    out->device_id = -1;
    out->sync_event = nullptr;
    ++next_;
    ++counters_->reads;
    return Status::OK();
  }

 private:
  int index_, batches_, fail_at_, next_ = 0;
  Counters* counters_;
};

struct Read {
  std::vector<int64_t> values;
  Status status;
};

// Every batch of `s` (its single value each) until its end or an error; `before_each(taken)` runs
// before each get_next, `taken` batches in.
Read Collect(Result<UniqueDeviceArrayStream> s,
             const std::function<void(int64_t)>& before_each = {}) {
  Read r;
  if (!s.ok()) {
    r.status = s.status();
    return r;
  }
  while (true) {
    if (before_each) before_each(static_cast<int64_t>(r.values.size()));
    UniqueDeviceArray a;
    r.status = StreamGetNext(s->get(), a.get());
    if (!r.status.ok() || !a.valid()) break;
    const auto* child = a->array.children[0];
    r.values.push_back(static_cast<const int64_t*>(child->buffers[1])[child->offset]);
  }
  return r;
}

// `n` endpoints of `per` batches each, read `parallel` at once; endpoint `failing` fails at its
// second batch.
// With `window` >= 0, `before_each(taken)` runs before each get_next, `taken` batches in.
Read ReadAll(int n, int per, size_t parallel, bool ordered, Counters* counters, int failing = -1,
             int64_t window = -1, const std::function<void(int64_t)>& before_each = {}) {
  auto open = [=](int i) {
    return ExportDeviceArrayStream(
        std::make_unique<FakeEndpoint>(i, per, i == failing ? 1 : -1, counters), ARROW_DEVICE_CPU);
  };
  std::vector<EndpointOpener> endpoints;
  for (int i = 0; i < n; ++i) {
    endpoints.emplace_back([open, i]() -> Result<UniqueDeviceArrayStream> { return open(i); });
  }
  return Collect(ReadParallel(std::move(endpoints), parallel, ordered, window, ARROW_DEVICE_CPU),
                 before_each);
}

std::vector<int64_t> Expected(int n, int per) {
  std::vector<int64_t> v;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < per; ++j) v.push_back(int64_t{100} * i + j);
  }
  return v;
}

TEST(FlightReadParallel, OrderedComesOutInTheFlightsOrderWithAtMostParallelOpen) {
  for (size_t parallel : {1u, 2u, 4u, 16u}) {
    Counters counters;
    Read r = ReadAll(9, 5, parallel, true, &counters);
    ASSERT_OK(r.status);
    EXPECT_EQ(r.values, Expected(9, 5)) << parallel;
    EXPECT_LE(counters.most_open.load(), static_cast<int>(std::min<size_t>(parallel, 9)) + 1);
    EXPECT_EQ(counters.open.load(), 0) << "every endpoint was released";
  }
}

TEST(FlightReadParallel, UnorderedDeliversEveryBatchOnce) {
  Counters counters;
  Read r = ReadAll(6, 7, 3, false, &counters);
  ASSERT_OK(r.status);
  std::sort(r.values.begin(), r.values.end());
  EXPECT_EQ(r.values, Expected(6, 7));
  EXPECT_GE(counters.most_open.load(), 2) << "endpoints overlapped";
}

// Paced, the readers of all endpoints together read at most `window` batches past those asked
// for, ordered or not, and every batch still comes out once. Between two asks the readers get
// time to run ahead; unpaced they do (the negative control), paced they may not.
TEST(FlightReadParallel, PacedReadersStayWithinTheWindow) {
  for (bool ordered : {true, false}) {
    for (int64_t window : {int64_t{0}, int64_t{2}, int64_t{-1}}) {
      SCOPED_TRACE(std::string(ordered ? "ordered" : "unordered") + ", window " +
                   std::to_string(window));
      Counters counters;
      int64_t most_ahead = 0;
      Read r = ReadAll(5, 6, 3, ordered, &counters, -1, window, [&](int64_t taken) {
        // Let the readers run: 10 ms is five batches' time for each endpoint.
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
        while (std::chrono::steady_clock::now() < until) {
          most_ahead = std::max(most_ahead, counters.reads.load() - taken);
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      });
      ASSERT_OK(r.status);
      if (!ordered) std::sort(r.values.begin(), r.values.end());
      EXPECT_EQ(r.values, Expected(5, 6));
      if (window >= 0) {
        EXPECT_LE(most_ahead, window);
      } else {
        EXPECT_GT(most_ahead, 2) << "unpaced readers read ahead";
      }
    }
  }
}

TEST(FlightReadParallel, AFailingEndpointFailsTheReadNamingIt) {
  Counters counters;
  Read r = ReadAll(8, 50, 4, true, &counters, /*failing=*/5);
  // What came before the failure came in order and whole: a prefix of endpoints 0 to 4 and
  // endpoint 5's first batch (the failure may end the read before its reader gets that far).
  std::vector<int64_t> before = Expected(5, 50);
  before.push_back(500);
  ASSERT_LE(r.values.size(), before.size());
  EXPECT_TRUE(std::equal(r.values.begin(), r.values.end(), before.begin()))
      << r.values.size() << " batches, the last " << (r.values.empty() ? -1 : r.values.back());
  EXPECT_EQ(r.status.code(), StatusCode::kIOError);
  EXPECT_NE(r.status.message().find("endpoint 5 of 8"), std::string::npos) << r.status.message();
  EXPECT_NE(r.status.message().find("went away at batch 1"), std::string::npos);
  EXPECT_EQ(counters.open.load(), 0) << "the other endpoints' readers were closed";
}

// The endpoints after the first are opened while the first is (their connections are set up at
// once): endpoint 0's opener returns only once endpoint 1's has been called. Opened one after
// the other, endpoint 0 would wait out its 10 s bound and fail the read.
TEST(FlightReadParallel, TheNextEndpointsOpenWhileTheFirstDoes) {
  for (bool ordered : {true, false}) {
    Counters counters;
    std::mutex mutex;
    std::condition_variable called;
    bool second_opening = false;
    std::vector<EndpointOpener> endpoints;
    endpoints.emplace_back([&]() -> Result<UniqueDeviceArrayStream> {
      std::unique_lock lock(mutex);
      if (!called.wait_for(lock, std::chrono::seconds(10), [&] { return second_opening; })) {
        return Status::DeadlineExceeded("endpoint 1 was not opened while endpoint 0 was");
      }
      return ExportDeviceArrayStream(std::make_unique<FakeEndpoint>(0, 3, -1, &counters),
                                     ARROW_DEVICE_CPU);
    });
    endpoints.emplace_back([&]() -> Result<UniqueDeviceArrayStream> {
      {
        std::lock_guard lock(mutex);
        second_opening = true;
      }
      called.notify_all();
      return ExportDeviceArrayStream(std::make_unique<FakeEndpoint>(1, 3, -1, &counters),
                                     ARROW_DEVICE_CPU);
    });
    Read r = Collect(ReadParallel(std::move(endpoints), 2, ordered, -1, ARROW_DEVICE_CPU));
    ASSERT_OK(r.status);
    if (!ordered) std::sort(r.values.begin(), r.values.end());
    EXPECT_EQ(r.values, Expected(2, 3));
  }
}

// Endpoint 0 failing to open fails the read with its own error, and the endpoints the readers
// opened meanwhile are closed, none of them read.
TEST(FlightReadParallel, TheFirstEndpointFailingToOpenFailsTheReadAsItIs) {
  Counters counters;
  std::vector<EndpointOpener> endpoints;
  endpoints.emplace_back([]() -> Result<UniqueDeviceArrayStream> {
    return Status::Unavailable("could not connect to endpoint 0's server");
  });
  for (int i = 1; i < 4; ++i) {
    endpoints.emplace_back([&counters, i]() -> Result<UniqueDeviceArrayStream> {
      return ExportDeviceArrayStream(std::make_unique<FakeEndpoint>(i, 3, -1, &counters),
                                     ARROW_DEVICE_CPU);
    });
  }
  Result<UniqueDeviceArrayStream> s =
      ReadParallel(std::move(endpoints), 4, true, -1, ARROW_DEVICE_CPU);
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.status().message(), "could not connect to endpoint 0's server");
  EXPECT_EQ(counters.reads.load(), 0);
  EXPECT_EQ(counters.open.load(), 0) << "every endpoint opened meanwhile was closed";
}

}  // namespace
}  // namespace ferry::flight::internal
