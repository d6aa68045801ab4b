// `ferry get --to`'s writing: batches written as an IPC stream on a thread of their own, so that
// the next batch is read while the last is written.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/ipc/writer.hpp"

namespace ferry::cli {

/// Writes the batches handed to it with a borrowed StreamWriter, in order, on a thread it owns,
/// releasing each once written. At most kMaxBatches batches or kMaxBytes bytes wait (and at least
/// one), so an output that blocks holds the server's stream back as a batch written in turn did.
/// The thread never spins: it sleeps until a group of kGroupBatches batches or kGroupBytes bytes
/// waits, or kLinger has passed since the first of them came, so a wake-up serves a group, and
/// the group goes to the output in one write (StreamWriter::WriteHeldBatches).
class BatchWriter {
 public:
  /// Writes to `writer` (which must outlive this), each batch checked as `check` says.
  BatchWriter(ipc::StreamWriter* writer, ipc::BatchCheck check);
  /// Stops the thread; batches still queued are released unwritten.
  ~BatchWriter();
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

  /// Queue `batch` of `bytes` bytes, waiting while the queue is full. Returns the first failure
  /// of a write, once one failed (the batch is then released unwritten).
  [[nodiscard]] Status Write(UniqueDeviceArray batch, int64_t bytes);
  /// Write what is queued, stop the thread and return the first failure, if any. The writer's
  /// Close (the end-of-stream marker) is the caller's, after this.
  [[nodiscard]] Status Finish();

  static constexpr size_t kMaxBatches = 64;
  static constexpr int64_t kMaxBytes = int64_t{4} << 20;
  static constexpr size_t kGroupBatches = 16;
  static constexpr int64_t kGroupBytes = kMaxBytes / 4;
  static constexpr std::chrono::milliseconds kLinger{1};

 private:
  void Run();
  // With mutex_: whether the queue has room for one more batch.
  bool Room() const {
    return queue_.empty() || (queue_.size() < kMaxBatches && bytes_ < kMaxBytes);
  }
  // With mutex_: whether a group waits, worth waking the thread for.
  bool Group() const { return queue_.size() >= kGroupBatches || bytes_ >= kGroupBytes; }

  ipc::StreamWriter* const writer_;
  const ipc::BatchCheck check_;
  std::mutex mutex_;
  std::condition_variable work_;  // the thread waits for a batch or the end
  std::condition_variable room_;  // Write waits for room
  std::deque<std::pair<UniqueDeviceArray, int64_t>> queue_;
  int64_t bytes_ = 0;
  bool done_ = false;
  // How the thread waits on work_: for a first batch (the next Write wakes it) or for a group (a
  // Write that completes one wakes it; kLinger wakes it otherwise).
  enum class Waiting { kNo, kFirst, kGroup };
  Waiting waiting_ = Waiting::kNo;
  Status failure_;
  // Set with failure_: the writing thread reads it for every batch without taking mutex_,
  // which Write takes for every batch too.
  std::atomic<bool> failed_{false};
  std::thread thread_;
};

}  // namespace ferry::cli
