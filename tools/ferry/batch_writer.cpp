// BatchWriter: `ferry get --to`'s writing thread (batch_writer.hpp).
#include "batch_writer.hpp"

#include <chrono>
#include <vector>

namespace ferry::cli {

BatchWriter::BatchWriter(ipc::StreamWriter* writer, ipc::BatchCheck check)
    : writer_(writer), check_(check), thread_([this] { Run(); }) {}

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

Status BatchWriter::Write(UniqueDeviceArray batch, int64_t bytes) {
  bool wake = false;
  {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return Room() || !failure_.ok(); });
    if (!failure_.ok()) return failure_;
    queue_.emplace_back(std::move(batch), bytes);
    bytes_ += bytes;
    wake = waiting_ == Waiting::kFirst || (waiting_ == Waiting::kGroup && Group());
  }
  if (wake) work_.notify_one();
  return Status::OK();
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
  std::vector<UniqueDeviceArray> group;
  while (true) {
    {
      std::unique_lock lock(mutex_);
      waiting_ = Waiting::kFirst;
      work_.wait(lock, [&] { return !queue_.empty() || done_; });
      if (queue_.empty()) return;  // done_, and everything written
      // Writing batches as they come would cost a wake-up each: let a group gather first, unless
      // the batches stopped coming. (A group comes before a full queue, whose Write would wait.)
      waiting_ = Waiting::kGroup;
      work_.wait_for(lock, kLinger, [&] { return Group() || done_; });
      waiting_ = Waiting::kNo;
      for (auto& item : queue_) group.push_back(std::move(item.first));
      queue_.clear();
      bytes_ = 0;
    }
    room_.notify_all();
    // The group in one write to the output where it can be, each batch held as WriteHeldBatch
    // holds it (a shared dictionary is then read once). After a failure (or a stop) the rest is
    // released unwritten.
    const Status st = failed_.load(std::memory_order_acquire)
                          ? Status::OK()
                          : writer_->WriteHeldBatches(group, nullptr, check_);
    group.clear();
    if (!st.ok()) {
      std::lock_guard lock(mutex_);
      if (failure_.ok()) failure_ = st;
      failed_.store(true, std::memory_order_release);
    }
    room_.notify_all();  // a Write waiting for room learns of a failure
  }
}

}  // namespace ferry::cli
