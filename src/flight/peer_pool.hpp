// Internal to the flight layer: the threads a federated server asks its peers on, started with
// the server and joined when it stops, and the bounded queue of questions they take in order.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ferry/core/clock.hpp"
#include "ferry/core/status.hpp"

namespace ferry::flight::internal {

/// A fixed set of `threads` threads (named "ferry-peers"), all started at construction, and a
/// queue of at most `capacity` tasks that they run in order. Owned by the Federation, so it lives
/// as long as the Flight server; Stop (or the destructor) joins every thread, so none outlives
/// it. Thread-safe. Costs the threads' stacks, idle on a condition variable between tasks.
class PeerPool {
 public:
  /// A task; `stopping` is true when the pool runs it only to end it (it was queued when Stop
  /// came): it should answer at once without asking anyone.
  using Task = std::function<void(bool stopping)>;

  PeerPool(size_t threads, size_t capacity, std::shared_ptr<Clock> clock);
  ~PeerPool();
  PeerPool(const PeerPool&) = delete;
  PeerPool& operator=(const PeerPool&) = delete;

  /// Queue `task`, waiting until `deadline` (by the clock) for room in the queue:
  /// kDeadlineExceeded if none came by then, kUnavailable once the pool is stopping. A task
  /// queued is always run exactly once.
  [[nodiscard]] Status Submit(Task task, Clock::time_point deadline);
  /// Take no more tasks, run those queued with `stopping` set, and join the threads. Waits for
  /// the tasks running, which end within their own bounds.
  void Stop();

  size_t threads() const { return size_; }
  size_t capacity() const { return capacity_; }

 private:
  void Run();

  const size_t size_;
  const size_t capacity_;
  const std::shared_ptr<Clock> clock_;
  std::mutex mutex_;
  std::condition_variable work_;  // a task queued, or the pool stopping: for the threads
  std::condition_variable room_;  // a task taken, or the pool stopping: for Submit
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::mutex join_mutex_;  // one Stop joins at a time
  std::vector<std::thread> threads_;
};

}  // namespace ferry::flight::internal
