// `ferry get --to`'s writing: batches written as an IPC stream in groups, by the reading thread
// while writing is cheap, and on a thread of their own once it is not, so that the next batch is
// read while the last is written.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "ferry/abi/unique.hpp"
#include "ferry/core/clock.hpp"
#include "ferry/core/result.hpp"
#include "ferry/ipc/writer.hpp"

namespace ferry::cli {

/// Writes the batches handed to it with a borrowed StreamWriter, in order, in groups of
/// kGroupBatches batches or kGroupBytes bytes (StreamWriter::WriteHeldBatches: one write to the
/// output a group), releasing each once written.
///
/// Where (kAdaptive): the caller's thread writes each group as it completes, so long as a
/// group's write takes at most half the time its batches took to come. A batch written where it
/// was read is not handed to another core, whose cache misses and wake-ups cost more than a cheap
/// output's write (`--to /dev/null`: 0.75x the time). Once kSlowWrites groups in a row take
/// longer (a file, a pipe: the bytes are copied), the writing goes to the thread for good, and the
/// next batch is read while the last is written. The thread always stands by for a slow stream:
/// a group that has waited kLinger since its first batch came is written by it, so batches reach
/// the output as they come. At most kMaxBatches batches or kMaxBytes bytes wait (and at least
/// one), so an output that blocks holds the server's stream back as a batch written in turn did.
/// The thread never spins; every wait is on `clock`.
class BatchWriter {
 public:
  /// Who writes: as above, or the thread from the start.
  enum class Where { kAdaptive, kThread };

  /// Writes to `writer` (which must outlive this), each batch checked as `check` says.
  BatchWriter(ipc::StreamWriter* writer, ipc::BatchCheck check, Where where = Where::kAdaptive,
              std::shared_ptr<Clock> clock = Clock::Real());
  /// Stops the thread; batches still queued are released unwritten.
  ~BatchWriter();
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

  /// Queue `batch` of `bytes` bytes (writing its group here, where that is the caller's), waiting
  /// while the queue is full. Returns the first failure of a write, once one failed (the batch is
  /// then released unwritten).
  [[nodiscard]] Status Write(UniqueDeviceArray batch, int64_t bytes);
  /// Write what is queued, stop the thread and return the first failure, if any. The writer's
  /// Close (the end-of-stream marker) is the caller's, after this.
  [[nodiscard]] Status Finish();
  /// Whether the thread now writes every group (for tests and `ferry get -v`).
  bool on_thread() const;

  static constexpr size_t kMaxBatches = 64;
  static constexpr int64_t kMaxBytes = int64_t{4} << 20;
  static constexpr size_t kGroupBatches = 16;
  static constexpr int64_t kGroupBytes = kMaxBytes / 4;
  static constexpr std::chrono::milliseconds kLinger{1};
  static constexpr int kSlowWrites = 3;

 private:
  // How long a group took to come (since the last write ended) and to write.
  struct Timed {
    Clock::duration coming;
    Clock::duration took;
  };

  void Run();
  // With `lock` on mutex_: write the queue's batches as one group on this thread, mutex_ let go
  // while they are written, and record a failure.
  Timed WriteQueued(std::unique_lock<std::mutex>& lock);
  // With `lock` on mutex_: WriteQueued on the caller's thread, and learn from its time whether
  // the thread should write from now on. Returns the first failure, if any.
  Status WriteHere(std::unique_lock<std::mutex>& lock);
  // With mutex_: whether the queue has room for one more batch.
  bool Room() const {
    return queue_.empty() || (queue_.size() < kMaxBatches && bytes_ < kMaxBytes);
  }
  // With mutex_: whether a group waits, worth a write.
  bool Group() const { return queue_.size() >= kGroupBatches || bytes_ >= kGroupBytes; }

  ipc::StreamWriter* const writer_;
  const ipc::BatchCheck check_;
  const std::shared_ptr<Clock> clock_;
  mutable std::mutex mutex_;
  std::condition_variable work_;  // the thread waits for a batch, a group, its linger or the end
  std::condition_variable room_;  // Write waits for room, or for the thread's write to end
  // The batches waiting, with their bytes: a vector that keeps its room (a deque would allocate a
  // block for every few batches of this size, and free it once they are written).
  std::vector<std::pair<UniqueDeviceArray, int64_t>> queue_;
  // The group being written, taken from queue_ by the one thread writing (writing_): only that
  // thread touches it, and the hand-over of writing_ under mutex_ orders those touches.
  std::vector<UniqueDeviceArray> group_;
  int64_t bytes_ = 0;
  bool done_ = false;
  bool on_thread_;              // the thread writes every group (set once, never cleared)
  bool writing_ = false;        // a group is being written, by either thread
  int slow_writes_ = 0;         // the caller's slow group writes in a row
  Clock::time_point first_at_;  // when the queue's first batch came
  Clock::time_point last_end_;  // when the last group's write ended (or this was made)
  // How the thread waits on work_: for a first batch (the next Write wakes it), for a group (a
  // Write that completes one wakes it; kLinger wakes it otherwise), or for a group's linger
  // while the caller writes (only the move to the thread wakes it early).
  enum class Waiting { kNo, kFirst, kGroup, kLinger };
  Waiting waiting_ = Waiting::kNo;
  Status failure_;
  // Set with failure_: a write reads it without taking mutex_, which Write takes for every batch.
  std::atomic<bool> failed_{false};
  std::thread thread_;
};

}  // namespace ferry::cli
