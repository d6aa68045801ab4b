// The federation's threads: a fixed pool over a bounded queue, joined when the server stops.
#include "flight/peer_pool.hpp"

#include <pthread.h>

#include <string>
#include <utility>

namespace ferry::flight::internal {

PeerPool::PeerPool(size_t threads, size_t capacity, std::shared_ptr<Clock> clock)
    : size_(threads), capacity_(capacity), clock_(std::move(clock)) {
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this] { Run(); });
    // Named here, so that every thread bears the name once the pool exists, and shows which
    // threads of a process are these (/proc/PID/task/*/comm).
    pthread_setname_np(threads_.back().native_handle(), "ferry-peers");
  }
}

PeerPool::~PeerPool() { Stop(); }

Status PeerPool::Submit(Task task, Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  const bool room = clock_->WaitUntil(room_, lock, deadline,
                                      [&] { return stopping_ || queue_.size() < capacity_; });
  if (stopping_) return Status::Unavailable("the server is stopping");
  if (!room) {
    return Status::DeadlineExceeded("not asked: the federation's " + std::to_string(size_) +
                                    " threads and its queue of " + std::to_string(capacity_) +
                                    " were busy until the deadline");
  }
  queue_.push_back(std::move(task));
  lock.unlock();
  work_.notify_one();
  return Status::OK();
}

void PeerPool::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  room_.notify_all();
  std::lock_guard joining(join_mutex_);
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void PeerPool::Run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, with nothing left to end
    Task task = std::move(queue_.front());
    queue_.pop_front();
    const bool stopping = stopping_;
    lock.unlock();
    room_.notify_one();
    task(stopping);
    lock.lock();
  }
}

}  // namespace ferry::flight::internal
