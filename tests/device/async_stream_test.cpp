// The async stream adapters against a consumer handler written here by hand (not ferry's): the
// consumer's request(n) bounds what the source is asked for, batches arrive in order with their
// values, errors reach on_error with the error table's code and the message, cancel ends the
// read; and ferry's own handler read back as a stream and as callbacks.
#include "ferry/device/async_stream.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ferry/core/status_code.hpp"
#include "ferry/format/array.hpp"
#include "support/device_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kStreamWait{10000};

// What the test's consumer has asked for, shared with the source so that every read the
// producer makes is checked against it.
struct Ledger {
  std::atomic<int64_t> requested{0};
  std::atomic<int64_t> reads{0};
  std::atomic<int64_t> reads_past_request{0};
  std::atomic<int> sources_alive{0};
};

// `count` int32 batches: batch b holds [10*b, 10*b + 1]. Fails at `fail_at` with `failure`.
class CountingSource final : public DeviceArrayProducer {
 public:
  CountingSource(Ledger* ledger, int count, int fail_at = -1, Status failure = Status::OK())
      : ledger_(ledger), count_(count), fail_at_(fail_at), failure_(std::move(failure)) {
    ++ledger_->sources_alive;
  }
  ~CountingSource() override { --ledger_->sources_alive; }

  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema s, Field::Make("i", "x").Export());
    s.move_to(out);
    return Status::OK();
  }
  Status GetNext(ArrowDeviceArray* out) override {
    const int64_t reads = ++ledger_->reads;
    if (reads > ledger_->requested.load()) ++ledger_->reads_past_request;
    if (next_ == fail_at_) return failure_;
    if (next_ == count_) return Status::OK();
    const int b = next_++;
    FERRY_ASSIGN_OR_RAISE(Array a, testing::ArrayFromJson(Field::Make("i", "x"),
                                                          "[" + std::to_string(10 * b) + ", " +
                                                              std::to_string(10 * b + 1) + "]"));
    UniqueSchema schema;
    testing::ToCpuDeviceArray(std::move(a), &schema).move_to(out);
    return Status::OK();
  }

 private:
  Ledger* ledger_;
  int count_;
  int fail_at_;
  Status failure_;
  int next_ = 0;
};

// A consumer's handler written against the C structs alone. It requests nothing by itself
// (the test does, through Request) and extracts each batch at once, keeping its first value.
struct Consumer {
  ArrowAsyncDeviceStreamHandler handler{};
  Ledger* ledger = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  std::string schema_format;
  std::vector<int32_t> firsts;
  std::vector<void*> events;
  int64_t delivered_past_request = 0;
  bool ended = false;
  bool released = false;
  int error_code = 0;
  std::string error_message;
  int refuse_after = -1;  // return EPIPE from on_next_task after this many batches

  explicit Consumer(Ledger* l) : ledger(l) {
    handler.on_schema = [](ArrowAsyncDeviceStreamHandler* h, ArrowSchema* s) {
      auto* self = static_cast<Consumer*>(h->private_data);
      std::lock_guard lock(self->mu);
      self->schema_format = s->format;
      s->release(s);
      self->cv.notify_all();
      return 0;
    };
    handler.on_next_task = [](ArrowAsyncDeviceStreamHandler* h, ArrowAsyncTask* task, const char*) {
      auto* self = static_cast<Consumer*>(h->private_data);
      std::lock_guard lock(self->mu);
      if (task == nullptr) {
        self->ended = true;
      } else {
        ArrowDeviceArray out{};
        if (task->extract_data(task, &out) != 0) return EIO;
        const auto* values = static_cast<const int32_t*>(out.array.buffers[1]);
        self->firsts.push_back(values[0]);
        self->events.push_back(out.sync_event);
        out.array.release(&out.array);
        if (static_cast<int64_t>(self->firsts.size()) > self->ledger->requested.load()) {
          ++self->delivered_past_request;
        }
      }
      self->cv.notify_all();
      if (self->refuse_after >= 0 && static_cast<int>(self->firsts.size()) > self->refuse_after) {
        return EPIPE;
      }
      return 0;
    };
    handler.on_error = [](ArrowAsyncDeviceStreamHandler* h, int code, const char* message,
                          const char*) {
      auto* self = static_cast<Consumer*>(h->private_data);
      std::lock_guard lock(self->mu);
      self->error_code = code;
      self->error_message = message != nullptr ? message : "";
    };
    handler.release = [](ArrowAsyncDeviceStreamHandler* h) {
      auto* self = static_cast<Consumer*>(h->private_data);
      std::lock_guard lock(self->mu);
      self->released = true;
      self->cv.notify_all();
    };
    handler.private_data = this;
  }

  void Request(int64_t n) {
    ledger->requested += n;
    handler.producer->request(handler.producer, n);
  }
  // Wait (bounded) until `done` holds; false at the limit.
  template <typename F>
  bool Await(F done) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, kStreamWait, done);
  }
};

Result<std::unique_ptr<AsyncStreamProducer>> Start(Ledger* ledger, Consumer* consumer, int count,
                                                   int fail_at = -1,
                                                   Status failure = Status::OK()) {
  return ProduceAsync(std::make_unique<CountingSource>(ledger, count, fail_at, std::move(failure)),
                      ARROW_DEVICE_CPU, &consumer->handler);
}

TEST(AsyncProducer, ReadsOnlyWhatTheConsumerRequested) {
  Ledger ledger;
  Consumer consumer(&ledger);
  ASSERT_OK_AND_ASSIGN(auto producer, Start(&ledger, &consumer, 7));
  ASSERT_TRUE(consumer.Await([&] { return !consumer.schema_format.empty(); }));
  EXPECT_EQ(consumer.schema_format, "i");
  EXPECT_EQ(consumer.handler.producer->device_type, ARROW_DEVICE_CPU);
  consumer.Request(3);
  ASSERT_TRUE(consumer.Await([&] { return consumer.firsts.size() == 3; }));
  // The producer now waits for a request: it has read 3 and delivered 3.
  AsyncProducerCounters c = producer->counters();
  EXPECT_EQ(c.requested, 3);
  EXPECT_LE(c.pulled, 3);
  consumer.Request(2);
  ASSERT_TRUE(consumer.Await([&] { return consumer.firsts.size() == 5; }));
  consumer.Request(10);  // more than is left: the end follows the last two
  ASSERT_TRUE(consumer.Await([&] { return consumer.released; }));
  ASSERT_OK(producer->Wait(kStreamWait));
  EXPECT_TRUE(consumer.ended);
  EXPECT_EQ(consumer.error_code, 0);
  EXPECT_EQ(consumer.firsts, (std::vector<int32_t>{0, 10, 20, 30, 40, 50, 60}));
  EXPECT_EQ(ledger.reads_past_request.load(), 0) << "the source was read ahead of request(n)";
  EXPECT_EQ(consumer.delivered_past_request, 0);
  c = producer->counters();
  EXPECT_EQ(c.delivered, 7);
  EXPECT_EQ(c.pulled, 8);  // 7 batches and the end
}

TEST(AsyncProducer, ErrorsReachOnErrorWithTheTypedCode) {
  Ledger ledger;
  Consumer consumer(&ledger);
  ASSERT_OK_AND_ASSIGN(auto producer,
                       Start(&ledger, &consumer, 5, 2, Status::DataLoss("batch 2 is corrupt")));
  ASSERT_TRUE(consumer.Await([&] { return !consumer.schema_format.empty(); }));
  consumer.Request(5);
  ASSERT_TRUE(consumer.Await([&] { return consumer.released; }));
  EXPECT_EQ(consumer.firsts, (std::vector<int32_t>{0, 10}));
  EXPECT_FALSE(consumer.ended);
  EXPECT_EQ(consumer.error_code, EBADMSG);  // kDataLoss's C code in the error table
  EXPECT_EQ(consumer.error_message, "batch 2 is corrupt");
  ASSERT_RAISES_WITH(StatusCode::kDataLoss, "batch 2 is corrupt", producer->Wait(kStreamWait));
}

TEST(AsyncProducer, CancelEndsTheReadWithoutAnError) {
  Ledger ledger;
  Consumer consumer(&ledger);
  ASSERT_OK_AND_ASSIGN(auto producer, Start(&ledger, &consumer, 100));
  ASSERT_TRUE(consumer.Await([&] { return !consumer.schema_format.empty(); }));
  consumer.Request(2);
  ASSERT_TRUE(consumer.Await([&] { return consumer.firsts.size() == 2; }));
  consumer.handler.producer->cancel(consumer.handler.producer);
  consumer.handler.producer->cancel(consumer.handler.producer);  // idempotent
  ASSERT_TRUE(consumer.Await([&] { return consumer.released; }));
  ASSERT_OK(producer->Wait(kStreamWait));
  EXPECT_EQ(consumer.error_code, 0);
  EXPECT_TRUE(consumer.ended) << "a cancelled stream ends with a NULL task before release";
  EXPECT_EQ(consumer.firsts.size(), 2u);
  EXPECT_TRUE(producer->counters().cancelled);
  EXPECT_EQ(ledger.sources_alive.load(), 0) << "the source outlived the stream";
}

TEST(AsyncProducer, ANonPositiveRequestIsAnError) {
  Ledger ledger;
  Consumer consumer(&ledger);
  ASSERT_OK_AND_ASSIGN(auto producer, Start(&ledger, &consumer, 3));
  ASSERT_TRUE(consumer.Await([&] { return !consumer.schema_format.empty(); }));
  consumer.handler.producer->request(consumer.handler.producer, 0);
  ASSERT_TRUE(consumer.Await([&] { return consumer.released; }));
  EXPECT_EQ(consumer.error_code, EINVAL);
  EXPECT_NE(consumer.error_message.find("request(n) needs n > 0, got 0"), std::string::npos);
  EXPECT_TRUE(consumer.firsts.empty());
}

TEST(AsyncProducer, AConsumerRefusalStopsTheStream) {
  Ledger ledger;
  Consumer consumer(&ledger);
  consumer.refuse_after = 1;
  ASSERT_OK_AND_ASSIGN(auto producer, Start(&ledger, &consumer, 10));
  ASSERT_TRUE(consumer.Await([&] { return !consumer.schema_format.empty(); }));
  consumer.Request(10);
  ASSERT_TRUE(consumer.Await([&] { return consumer.released; }));
  EXPECT_EQ(consumer.firsts.size(), 2u);
  EXPECT_EQ(consumer.error_code, 0) << "a refusal is answered with release alone";
  EXPECT_EQ(producer->Wait(kStreamWait).code(), StatusCodeFromErrno(EPIPE));
}

TEST(AsyncProducer, RefusesAHandlerWithoutCallbacks) {
  ArrowAsyncDeviceStreamHandler empty{};
  Ledger ledger;
  ASSERT_RAISES_WITH(
      StatusCode::kInvalidArgument, "lacks a callback",
      ProduceAsync(std::make_unique<CountingSource>(&ledger, 1), ARROW_DEVICE_CPU, &empty));
  ASSERT_RAISES_WITH(
      StatusCode::kInvalidArgument, "NULL",
      ProduceAsync(std::make_unique<CountingSource>(&ledger, 1), ARROW_DEVICE_CPU, nullptr));
}

TEST(AsyncProducer, AReleasedSourceStreamReachesOnError) {
  Ledger ledger;
  Consumer consumer(&ledger);
  ASSERT_OK_AND_ASSIGN(auto producer, ProduceAsync(UniqueDeviceArrayStream(), &consumer.handler));
  ASSERT_TRUE(consumer.Await([&] { return consumer.released; }));
  EXPECT_EQ(consumer.error_code, EINVAL);
  EXPECT_NE(consumer.error_message.find("released"), std::string::npos);
}

// --- ferry's handler, read as a stream -----------------------------------------------------------

struct Pair {
  ArrowAsyncDeviceStreamHandler handler{};
  UniqueDeviceArrayStream stream;
};

TEST(AsyncHandlerStream, CarriesEveryBatchInOrderWithinTheQueue) {
  Ledger ledger;
  Pair pair;
  AsyncHandlerOptions options;
  options.queue_size = 2;
  ASSERT_OK(AsyncHandlerToStream(&pair.handler, pair.stream.get(), options));
  ASSERT_OK_AND_ASSIGN(auto producer, ProduceAsync(std::make_unique<CountingSource>(&ledger, 6),
                                                   ARROW_DEVICE_CPU, &pair.handler));
  UniqueSchema schema;
  ASSERT_EQ(pair.stream->get_schema(pair.stream.get(), schema.get()), 0);
  EXPECT_STREQ(schema->format, "i");
  ASSERT_OK_AND_ASSIGN(std::vector<nlohmann::json> rows, testing::DrainToJson(pair.stream.get()));
  ASSERT_EQ(rows.size(), 6u);
  for (size_t b = 0; b < rows.size(); ++b) {
    EXPECT_EQ(rows[b], nlohmann::json::parse("[" + std::to_string(10 * b) + ", " +
                                             std::to_string(10 * b + 1) + "]"));
  }
  ASSERT_OK(producer->Wait(kStreamWait));
  // queue_size ahead, one more per batch read: 2 + 6 requested (the last may come after the
  // end, when the handler is released and asks nothing more), never more pulled.
  const AsyncProducerCounters c = producer->counters();
  EXPECT_GE(c.requested, 7);
  EXPECT_LE(c.requested, 8);
  EXPECT_LE(c.pulled, c.requested);
  EXPECT_EQ(c.delivered, 6);
}

TEST(AsyncHandlerStream, AnErrorMidStreamFollowsTheBatchesBeforeIt) {
  Ledger ledger;
  Pair pair;
  ASSERT_OK(AsyncHandlerToStream(&pair.handler, pair.stream.get()));
  ASSERT_OK_AND_ASSIGN(auto producer,
                       ProduceAsync(std::make_unique<CountingSource>(
                                        &ledger, 5, 3, Status::Unavailable("the peer went away")),
                                    ARROW_DEVICE_CPU, &pair.handler));
  UniqueSchema schema;
  ASSERT_EQ(pair.stream->get_schema(pair.stream.get(), schema.get()), 0);
  for (int b = 0; b < 3; ++b) {
    UniqueDeviceArray a;
    ASSERT_EQ(pair.stream->get_next(pair.stream.get(), a.get()), 0);
    ASSERT_TRUE(a.valid());
  }
  UniqueDeviceArray a;
  EXPECT_EQ(pair.stream->get_next(pair.stream.get(), a.get()), ECONNREFUSED);
  EXPECT_STREQ(pair.stream->get_last_error(pair.stream.get()), "the peer went away");
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "the peer went away", producer->Wait(kStreamWait));
}

TEST(AsyncHandlerStream, ReleasingTheStreamCancelsTheProducer) {
  Ledger ledger;
  Pair pair;
  ASSERT_OK(AsyncHandlerToStream(&pair.handler, pair.stream.get()));
  ASSERT_OK_AND_ASSIGN(auto producer, ProduceAsync(std::make_unique<CountingSource>(&ledger, 1000),
                                                   ARROW_DEVICE_CPU, &pair.handler));
  UniqueSchema schema;
  ASSERT_EQ(pair.stream->get_schema(pair.stream.get(), schema.get()), 0);
  UniqueDeviceArray a;
  ASSERT_EQ(pair.stream->get_next(pair.stream.get(), a.get()), 0);
  pair.stream.reset();
  ASSERT_OK(producer->Wait(kStreamWait));
  const AsyncProducerCounters c = producer->counters();
  EXPECT_TRUE(c.cancelled);
  EXPECT_LE(c.pulled, 1 + 4);  // the one read and at most the queue ahead
  EXPECT_EQ(ledger.sources_alive.load(), 0) << "a cancelled stream keeps its source open";
}

TEST(AsyncHandlerStream, ATimeoutNamesWhatItWaitedFor) {
  ManualClock clock;
  Pair pair;
  AsyncHandlerOptions options;
  options.timeout = milliseconds(50);
  options.clock = std::shared_ptr<Clock>(&clock, [](Clock*) {});
  ASSERT_OK(AsyncHandlerToStream(&pair.handler, pair.stream.get(), options));
  std::thread mover([&] {
    if (clock.AwaitWaiters(1, kStreamWait)) clock.Advance(milliseconds(51));
  });
  UniqueSchema schema;
  EXPECT_EQ(pair.stream->get_schema(pair.stream.get(), schema.get()), ETIMEDOUT);
  mover.join();
  EXPECT_NE(std::string(pair.stream->get_last_error(pair.stream.get())).find("no schema"),
            std::string::npos);
  pair.handler.release(&pair.handler);  // no producer ever came
}

TEST(AsyncHandlerCallbacks, PushesEveryBatchAndTheEnd) {
  Ledger ledger;
  ArrowAsyncDeviceStreamHandler handler{};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int64_t> lengths;
  std::string format;
  bool ended = false;
  Status outcome = Status::Internal("not yet");
  AsyncSinkCallbacks sink;
  sink.on_schema = [&](UniqueSchema s) {
    format = s->format;
    return Status::OK();
  };
  sink.on_batch = [&](UniqueDeviceArray a) {
    lengths.push_back(a->array.length);
    return lengths.size() == 3 ? Status::ResourceExhausted("the sink is full") : Status::OK();
  };
  sink.on_end = [&](const Status& st) {
    std::lock_guard lock(mu);
    outcome = st;
    ended = true;
    cv.notify_all();
  };
  ASSERT_OK(AsyncHandlerToCallbacks(&handler, sink));
  ASSERT_OK_AND_ASSIGN(auto producer, ProduceAsync(std::make_unique<CountingSource>(&ledger, 10),
                                                   ARROW_DEVICE_CPU, &handler));
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, kStreamWait, [&] { return ended; }));
  }
  EXPECT_EQ(format, "i");
  EXPECT_EQ(lengths, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(outcome.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(producer->Wait(kStreamWait).code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace ferry
