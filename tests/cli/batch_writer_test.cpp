// BatchWriter, `ferry get --to`'s writing (tools/ferry/batch_writer.hpp), on its own: built into
// every tree, the sanitizers' among them, which build no tools. The oracle is the batches' own
// values (hand-computed: batch b holds b*rows .. b*rows+rows-1), read back from the bytes written
// by ferry's reader, a count of every batch's release, and which thread made each write.
#include "tools/ferry/batch_writer.hpp"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/dipc_data.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

using cli::BatchWriter;

// A sink in front of a MemorySink that can hold a write until opened, fail a write, and run a
// hook in each; it notes the thread of each, and its name. Writes are counted from 0 once armed
// (after the schema); a group of batches goes in one write, so a write holds one batch or more.
class GateSink final : public ipc::Sink {
 public:
  Status Write(std::span<const ByteSpan> pieces) override {
    const int n = armed_ ? write_++ : -1;
    if (n >= 0) {
      char name[16] = {};
      pthread_getname_np(pthread_self(), name, sizeof(name));
      std::lock_guard lock(mutex_);
      threads_.push_back(std::this_thread::get_id());
      names_.emplace_back(name);
    }
    if (n >= 0 && on_write_) on_write_();
    if (n >= 0 && n == hold_at_) {
      std::unique_lock lock(mutex_);
      held_ = true;
      changed_.notify_all();
      changed_.wait(lock, [&] { return open_; });
      held_ = false;
    }
    if (n >= 0 && n == fail_at_) {
      return Status::IOError("the output failed at write " + std::to_string(n));
    }
    return memory_.Write(pieces);
  }
  int64_t position() const noexcept override { return memory_.position(); }

  void Arm(int hold_at, int fail_at, std::function<void()> on_write = nullptr) {
    hold_at_ = hold_at;
    fail_at_ = fail_at;
    on_write_ = std::move(on_write);
    armed_ = true;
  }
  // The thread of each armed write, in order.
  std::vector<std::thread::id> threads() {
    std::lock_guard lock(mutex_);
    return threads_;
  }
  // The name of each armed write's thread, in order.
  std::vector<std::string> names() {
    std::lock_guard lock(mutex_);
    return names_;
  }
  // Wait (at most 30 s) until the writing thread is held.
  bool WaitHeld() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return held_; });
  }
  void Open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  SharedBytes Finish() { return memory_.Finish(); }

 private:
  ipc::MemorySink memory_;
  bool armed_ = false;  // set before the writing thread starts
  int hold_at_ = -1;
  int fail_at_ = -1;
  std::function<void()> on_write_;
  int write_ = 0;  // one write at a time
  std::vector<std::thread::id> threads_;
  std::vector<std::string> names_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool held_ = false;
  bool open_ = false;
};

// Counts the releases of the batches handed to it: each batch's release is wrapped.
class ReleaseCounter {
 public:
  UniqueDeviceArray Wrap(UniqueDeviceArray batch) {
    auto* wrapped = new Wrapped{batch->array.release, batch->array.private_data, &released_};
    batch->array.release = &Release;
    batch->array.private_data = wrapped;
    return batch;
  }
  int released() const { return released_.load(); }

 private:
  struct Wrapped {
    void (*release)(ArrowArray*);
    void* private_data;
    std::atomic<int>* count;
  };
  static void Release(ArrowArray* array) {
    auto* wrapped = static_cast<Wrapped*>(array->private_data);
    array->release = wrapped->release;
    array->private_data = wrapped->private_data;
    array->release(array);
    wrapped->count->fetch_add(1);
    delete wrapped;
  }
  std::atomic<int> released_{0};
};

struct Fixture {
  testing::IntArrays data;
  GateSink sink;
  std::optional<ipc::StreamWriter> writer;
  ReleaseCounter counter;

  static std::unique_ptr<Fixture> Make(int batches, int rows) {
    auto f = std::make_unique<Fixture>();
    Result<testing::IntArrays> data = testing::MakeIntArrays(batches, rows);
    EXPECT_TRUE(data.ok()) << data.status().message();
    if (!data.ok()) return nullptr;
    f->data = std::move(*data);
    Result<ipc::StreamWriter> writer = ipc::StreamWriter::Open(&f->sink, f->data.schema.get());
    EXPECT_TRUE(writer.ok()) << writer.status().message();
    if (!writer.ok()) return nullptr;
    f->writer.emplace(std::move(*writer));
    return f;
  }
  UniqueDeviceArray Take(size_t b) { return counter.Wrap(std::move(data.batches[b])); }
  // The batches written, each as its rows' JSON.
  std::vector<nlohmann::json> Written() {
    Result<std::vector<std::string>> read = testing::ReadIpcAsJson(sink.Finish());
    EXPECT_TRUE(read.ok()) << read.status().message();
    std::vector<nlohmann::json> out;
    if (read.ok()) {
      for (const std::string& batch : *read) out.push_back(nlohmann::json::parse(batch));
    }
    return out;
  }
};

// Hand `batches` batches of `rows` rows over, each said to be `bytes` long, then finish: every one
// is written in order and released once.
void WriteAllInOrder(int batches, int rows, int64_t bytes, BatchWriter::Where where) {
  auto f = Fixture::Make(batches, rows);
  ASSERT_NE(f, nullptr);
  f->sink.Arm(-1, -1);
  {
    BatchWriter output(&*f->writer, ipc::BatchCheck::kByWriter, where);
    for (int b = 0; b < batches; ++b) ASSERT_OK(output.Write(f->Take(b), bytes));
    ASSERT_OK(output.Finish());
  }
  ASSERT_OK(f->writer->Close());
  EXPECT_EQ(f->counter.released(), batches);
  EXPECT_EQ(f->Written(), f->data.expected);
}

TEST(BatchWriter, WritesEveryBatchInOrderAndReleasesEach) {
  WriteAllInOrder(3000, 8, 64, BatchWriter::Where::kAdaptive);
  WriteAllInOrder(3000, 8, 64, BatchWriter::Where::kThread);
}

// While the output blocks, the queue takes kMaxBatches batches beyond the one being written, and
// the next Write waits; once the output moves, everything is written in order.
TEST(BatchWriter, HoldsAtMostItsLimitWhileTheOutputBlocks) {
  constexpr int kBatches = static_cast<int>(BatchWriter::kMaxBatches) + 2;
  auto f = Fixture::Make(kBatches, 4);
  ASSERT_NE(f, nullptr);
  f->sink.Arm(0, -1);
  BatchWriter output(&*f->writer, ipc::BatchCheck::kByWriter);
  ASSERT_OK(output.Write(f->Take(0), 32));
  ASSERT_TRUE(f->sink.WaitHeld());
  for (int b = 1; b <= static_cast<int>(BatchWriter::kMaxBatches); ++b) {
    ASSERT_OK(output.Write(f->Take(b), 32));
  }
  std::atomic<bool> returned{false};
  auto last = std::async(std::launch::async, [&] {
    Status st = output.Write(f->Take(kBatches - 1), 32);
    returned = true;
    return st;
  });
  EXPECT_TRUE(testing::Throughout(std::chrono::milliseconds(100), [&] { return !returned; }))
      << "a Write returned while the queue was full and the output blocked";
  f->sink.Open();
  ASSERT_OK(last.get());
  ASSERT_OK(output.Finish());
  ASSERT_OK(f->writer->Close());
  EXPECT_EQ(f->counter.released(), kBatches);
  EXPECT_EQ(f->Written(), f->data.expected);
}

// Fewer batches than a group are written without Finish: the thread waits for a group no longer
// than kLinger once a batch came, so a slow stream's batches reach the output as they come.
TEST(BatchWriter, WritesFewerBatchesThanAGroupWithoutWaitingForMore) {
  static_assert(BatchWriter::kGroupBatches > 3);
  auto f = Fixture::Make(3, 4);
  ASSERT_NE(f, nullptr);
  f->sink.Arm(-1, -1);
  BatchWriter output(&*f->writer, ipc::BatchCheck::kByWriter);
  // A batch of this schema (no dictionaries) is released once its write returned.
  ASSERT_OK(output.Write(f->Take(0), 32));
  EXPECT_TRUE(testing::Within(std::chrono::seconds(10), [&] { return f->counter.released() == 1; }))
      << "a lone batch was not written";
  ASSERT_OK(output.Write(f->Take(1), 32));
  ASSERT_OK(output.Write(f->Take(2), 32));
  EXPECT_TRUE(testing::Within(std::chrono::seconds(10), [&] { return f->counter.released() == 3; }))
      << "two batches, fewer than a group, were not written";
  ASSERT_OK(output.Finish());
  ASSERT_OK(f->writer->Close());
  EXPECT_EQ(f->counter.released(), 3);
  EXPECT_EQ(f->Written(), f->data.expected);
}

// A batch said to be bigger than the queue's bytes still passes, alone.
TEST(BatchWriter, PassesBatchesBiggerThanItsBytesOneAtATime) {
  WriteAllInOrder(5, 4, BatchWriter::kMaxBytes * 2, BatchWriter::Where::kAdaptive);
  WriteAllInOrder(5, 4, BatchWriter::kMaxBytes * 2, BatchWriter::Where::kThread);
}

// The output's first failure comes back from a later Write and from Finish, naming the write;
// every batch handed over, written or not, is released once, and what was written is the first
// batches, in order (a write holds a group of them).
void FailsAndReleasesEveryBatch(BatchWriter::Where where) {
  constexpr int kBatches = 400;
  constexpr int kFailAt = 2;  // 400 batches take at least 7 writes of 64 at most
  auto f = Fixture::Make(kBatches, 4);
  ASSERT_NE(f, nullptr);
  f->sink.Arm(-1, kFailAt);
  int handed = 0;
  Status failed;
  {
    BatchWriter output(&*f->writer, ipc::BatchCheck::kByWriter, where);
    for (int b = 0; b < kBatches && failed.ok(); ++b) {
      failed = output.Write(f->Take(b), 32);
      ++handed;
    }
    const Status finished = output.Finish();
    ASSERT_FALSE(finished.ok());
    EXPECT_EQ(finished.code(), StatusCode::kIOError) << finished.message();
    EXPECT_THAT(finished.message(), ::testing::HasSubstr("failed at write 2"));
  }
  if (!failed.ok()) {  // a Write saw it (or the loop handed every batch first)
    EXPECT_THAT(failed.message(), ::testing::HasSubstr("failed at write 2"));
  }
  EXPECT_EQ(f->counter.released(), handed);
  // What was written before the failure is the first batches, in order.
  ASSERT_OK(f->writer->Close());
  const std::vector<nlohmann::json> written = f->Written();
  ASSERT_GE(written.size(), static_cast<size_t>(kFailAt));
  ASSERT_LT(written.size(), static_cast<size_t>(handed));
  for (size_t b = 0; b < written.size(); ++b) EXPECT_EQ(written[b], f->data.expected[b]);
}

TEST(BatchWriter, ReturnsTheFirstFailureAndReleasesEveryBatch) {
  FailsAndReleasesEveryBatch(BatchWriter::Where::kAdaptive);
  FailsAndReleasesEveryBatch(BatchWriter::Where::kThread);
}

// Stopped without Finish while its thread writes, it releases what is queued unwritten, and what
// it wrote is a prefix. (A caller that writes cannot stop it inside its own write.)
TEST(BatchWriter, StoppingReleasesWhatIsQueued) {
  constexpr int kBatches = 40;
  auto f = Fixture::Make(kBatches, 4);
  ASSERT_NE(f, nullptr);
  f->sink.Arm(0, -1);
  std::thread opener;
  {
    BatchWriter output(&*f->writer, ipc::BatchCheck::kByWriter, BatchWriter::Where::kThread);
    for (int b = 0; b < kBatches; ++b) ASSERT_OK(output.Write(f->Take(b), 32));
    ASSERT_TRUE(f->sink.WaitHeld());
    // The destructor waits for the batch being written: open the output while it stops.
    opener = std::thread([&] { f->sink.Open(); });
  }
  opener.join();
  // The stream writer may hold the last batch it wrote until it closes (WriteHeldBatch holds
  // it where the schema has dictionaries).
  EXPECT_GE(f->counter.released(), kBatches - 1);
  ASSERT_OK(f->writer->Close());
  EXPECT_EQ(f->counter.released(), kBatches);
  const std::vector<nlohmann::json> written = f->Written();
  ASSERT_GE(written.size(), 1u);
  ASSERT_LE(written.size(), static_cast<size_t>(kBatches));
  for (size_t b = 0; b < written.size(); ++b) EXPECT_EQ(written[b], f->data.expected[b]);
}

// Hand `batches` of `f`'s batches, one each 10 us of `clock`, to an adaptive writer, then finish;
// `on_thread` gets BatchWriter::on_thread after each Write.
void WriteTenMicrosecondsApart(Fixture* f, int batches, const std::shared_ptr<ManualClock>& clock,
                               std::vector<bool>* on_thread) {
  BatchWriter output(&*f->writer, ipc::BatchCheck::kByWriter, BatchWriter::Where::kAdaptive, clock);
  for (int b = 0; b < batches; ++b) {
    clock->Advance(std::chrono::microseconds(10));
    ASSERT_OK(output.Write(f->Take(b), 32));
    on_thread->push_back(output.on_thread());
  }
  ASSERT_OK(output.Finish());
}

// Batches that take longer to come than their group's write are written by the caller, group by
// group, on its own thread. Time is a ManualClock: each batch comes 10 us after the last, each
// write takes none.
TEST(BatchWriter, WritesOnTheCallersThreadWhileWritingIsCheap) {
  constexpr int kBatches = 4 * static_cast<int>(BatchWriter::kGroupBatches);
  auto f = Fixture::Make(kBatches, 4);
  ASSERT_NE(f, nullptr);
  f->sink.Arm(-1, -1);
  auto clock = std::make_shared<ManualClock>();
  std::vector<bool> on_thread;
  WriteTenMicrosecondsApart(f.get(), kBatches, clock, &on_thread);
  EXPECT_FALSE(on_thread.back());
  const std::vector<std::thread::id> threads = f->sink.threads();
  ASSERT_EQ(threads.size(), 4u) << "one write a group";
  for (const std::thread::id& t : threads) EXPECT_EQ(t, std::this_thread::get_id());
  EXPECT_EQ(f->counter.released(), kBatches);
  ASSERT_OK(f->writer->Close());
  EXPECT_EQ(f->Written(), f->data.expected);
}

// A write that takes longer than half its group's coming (each here 1 ms, against 16 batches 10 us
// apart) is slow: after kSlowWrites of them in a row the thread writes every group, and the caller
// only hands batches over. Every batch is still written once, in order.
TEST(BatchWriter, HandsTheWritingToItsThreadOnceWritesAreSlow) {
  constexpr int kGroups = BatchWriter::kSlowWrites + 3;
  constexpr int kBatches = kGroups * static_cast<int>(BatchWriter::kGroupBatches);
  auto f = Fixture::Make(kBatches, 4);
  ASSERT_NE(f, nullptr);
  auto clock = std::make_shared<ManualClock>();
  f->sink.Arm(-1, -1, [&] { clock->Advance(std::chrono::milliseconds(1)); });
  std::vector<bool> on_thread;
  WriteTenMicrosecondsApart(f.get(), kBatches, clock, &on_thread);
  constexpr int kGroup = static_cast<int>(BatchWriter::kGroupBatches);
  EXPECT_FALSE(on_thread[BatchWriter::kSlowWrites * kGroup - 2]);
  EXPECT_TRUE(on_thread[BatchWriter::kSlowWrites * kGroup - 1]);
  const std::vector<std::thread::id> threads = f->sink.threads();
  ASSERT_GT(threads.size(), static_cast<size_t>(BatchWriter::kSlowWrites));
  for (int w = 0; w < BatchWriter::kSlowWrites; ++w) {
    EXPECT_EQ(threads[w], std::this_thread::get_id()) << "write " << w;
  }
  for (size_t w = BatchWriter::kSlowWrites; w < threads.size(); ++w) {
    EXPECT_NE(threads[w], std::this_thread::get_id()) << "write " << w;
    EXPECT_EQ(f->sink.names()[w], "ferry-write") << "write " << w;  // top and perf tell it apart
  }
  EXPECT_EQ(f->counter.released(), kBatches);
  ASSERT_OK(f->writer->Close());
  EXPECT_EQ(f->Written(), f->data.expected);
}

// One slow write among cheap ones (a preemption) does not move the writing.
TEST(BatchWriter, OneSlowWriteLeavesTheWritingWithTheCaller) {
  constexpr int kBatches = 6 * static_cast<int>(BatchWriter::kGroupBatches);
  auto f = Fixture::Make(kBatches, 4);
  ASSERT_NE(f, nullptr);
  auto clock = std::make_shared<ManualClock>();
  int writes = 0;
  f->sink.Arm(-1, -1, [&] {
    if (writes++ % 2 == 0) clock->Advance(std::chrono::milliseconds(1));
  });
  std::vector<bool> on_thread;
  WriteTenMicrosecondsApart(f.get(), kBatches, clock, &on_thread);
  EXPECT_FALSE(on_thread.back());
  for (const std::thread::id& t : f->sink.threads()) EXPECT_EQ(t, std::this_thread::get_id());
  ASSERT_OK(f->writer->Close());
  EXPECT_EQ(f->Written(), f->data.expected);
}

}  // namespace
}  // namespace ferry
