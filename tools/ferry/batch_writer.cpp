// BatchWriter: `ferry get --to`'s writing, on the reading thread or its own (batch_writer.hpp).
#include "batch_writer.hpp"

#include <pthread.h>

#include <utility>
#include <vector>

namespace ferry::cli {

BatchWriter::BatchWriter(ipc::StreamWriter* writer, ipc::BatchCheck check, Where where,
                         std::shared_ptr<Clock> clock)
    : writer_(writer),
      check_(check),
      clock_(clock != nullptr ? std::move(clock) : Clock::Real()),
      on_thread_(where == Where::kThread),
      last_end_(clock_->Now()),
      thread_([this] { Run(); }) {
  pthread_setname_np(thread_.native_handle(), "ferry-write");  // for top, perf and tests
  // Under the lock: the thread, started above, reads the queue as soon as it runs.
  std::lock_guard lock(mutex_);
  queue_.reserve(kMaxBatches);
  group_.reserve(kMaxBatches);
}

BatchWriter::~BatchWriter() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
    if (failure_.ok()) failure_ = Status::Cancelled("the writer was stopped");
    failed_.store(true, std::memory_order_release);
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool BatchWriter::on_thread() const {
  std::lock_guard lock(mutex_);
  return on_thread_;
}

Status BatchWriter::Write(UniqueDeviceArray batch, int64_t bytes) {
  std::unique_lock lock(mutex_);
  // Where the caller writes, a full queue that nobody writes is the caller's to write now.
  room_.wait(lock, [&] { return Room() || !failure_.ok() || (!on_thread_ && !writing_); });
  if (!failure_.ok()) return failure_;
  if (queue_.empty()) first_at_ = clock_->Now();
  queue_.emplace_back(std::move(batch), bytes);
  bytes_ += bytes;
  if (!on_thread_ && !writing_ && Group()) return WriteHere(lock);
  const bool wake =
      waiting_ == Waiting::kFirst || (waiting_ == Waiting::kGroup && on_thread_ && Group());
  lock.unlock();
  if (wake) work_.notify_one();
  return Status::OK();
}

BatchWriter::Timed BatchWriter::WriteQueued(std::unique_lock<std::mutex>& lock) {
  // Moved out in order; both vectors keep their room, so a group costs no allocation.
  for (auto& item : queue_) group_.push_back(std::move(item.first));
  queue_.clear();
  bytes_ = 0;
  writing_ = true;
  const Clock::time_point start = clock_->Now();
  const Clock::duration coming = start - last_end_;
  lock.unlock();
  room_.notify_all();  // a Write waiting for room goes on (no waiter: no system call)
  // The group in one write to the output where it can be, each batch held as WriteHeldBatch
  // holds it (a shared dictionary is then read once), and released by the thread that wrote it.
  // After a failure (or a stop) the rest is released unwritten.
  const Status st = failed_.load(std::memory_order_acquire)
                        ? Status::OK()
                        : writer_->WriteHeldBatches(group_, nullptr, check_);
  group_.clear();
  const Clock::time_point end = clock_->Now();
  lock.lock();
  writing_ = false;
  last_end_ = end;
  if (!st.ok()) {
    if (failure_.ok()) failure_ = st;
    failed_.store(true, std::memory_order_release);
  }
  room_.notify_all();  // a Write waiting for room (or for this write) learns of it
  return Timed{coming, end - start};
}

Status BatchWriter::WriteHere(std::unique_lock<std::mutex>& lock) {
  const Timed timed = WriteQueued(lock);
  // A write that took over half of the time its group took to come would be better overlapped
  // with the reading: after kSlowWrites in a row (one is a preemption), the thread takes over.
  slow_writes_ = timed.took * 2 > timed.coming ? slow_writes_ + 1 : 0;
  const bool hand_over = !on_thread_ && slow_writes_ >= kSlowWrites;
  if (hand_over) on_thread_ = true;
  const Status result = failure_;
  lock.unlock();
  if (hand_over) work_.notify_one();
  return result;
}

Status BatchWriter::Finish() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mutex_);
  return failure_;
}

void BatchWriter::Run() {
  std::unique_lock lock(mutex_);
  while (true) {
    waiting_ = Waiting::kFirst;
    work_.wait(lock, [&] { return !queue_.empty() || done_; });
    if (queue_.empty()) return;  // done_, and everything written
    if (on_thread_) {
      // Writing batches as they come would cost a wake-up each: let a group gather first, unless
      // the batches stopped coming. (A group comes before a full queue, whose Write would wait.)
      waiting_ = Waiting::kGroup;
      clock_->WaitFor(work_, lock, kLinger, [&] { return Group() || done_; });
    } else {
      // The caller writes each group it completes: this writes only one that lingers.
      waiting_ = Waiting::kLinger;
      const Clock::time_point due = first_at_ + kLinger;
      clock_->WaitUntil(work_, lock, due, [&] { return done_ || on_thread_; });
      const bool lingered = !queue_.empty() && first_at_ + kLinger <= clock_->Now();
      if (!done_ && !on_thread_ && !lingered) continue;  // written by the caller, or fresh
    }
    waiting_ = Waiting::kNo;
    // The caller writes only a queue it has just emptied, and adds nothing while it writes: a
    // queue this finds holds batches nobody is writing.
    if (!queue_.empty()) (void)WriteQueued(lock);
  }
}

}  // namespace ferry::cli
