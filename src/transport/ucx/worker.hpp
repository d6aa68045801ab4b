// Internal to the UCX transport: one UCP worker and the thread that progresses it.
#pragma once

#include <pthread.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ferry/core/result.hpp"
#include "transport/ucx/context.hpp"

namespace ferry::transport::internal::ucx {

/// UCX before 1.17 queues an event on a descriptor that came while its worker was busy, and
/// replays it by descriptor number at that worker's next progress, even when the handler was
/// removed meanwhile (an endpoint failed or closed) and another worker's handler took the number,
/// which aborts the process (async.c, `handler->async == async`; openucx/ucx#9942). Progress and
/// closes hold ReplayGuard (shared); what registers descriptors with UCX (a worker, a connect, an
/// accept, a listener) holds RegisterGuard (exclusive), so no number changes hands between a
/// handler's removal and the replay. From UCX 1.17 both are empty locks and cost nothing.
class DescriptorLock;
std::shared_lock<DescriptorLock> ReplayGuard();
/// See ReplayGuard. Never taken while holding ReplayGuard.
std::unique_lock<DescriptorLock> RegisterGuard();

/// The process-wide lock behind ReplayGuard and RegisterGuard: a reader-writer lock where a
/// waiting writer holds new readers back, so a connect waits for the progress rounds already
/// running and not for all that follow. Not recursive.
class DescriptorLock {
 public:
  DescriptorLock();
  ~DescriptorLock();
  DescriptorLock(const DescriptorLock&) = delete;
  DescriptorLock& operator=(const DescriptorLock&) = delete;
  void lock();
  bool try_lock();
  void unlock();
  void lock_shared();
  bool try_lock_shared();
  void unlock_shared();

 private:
  pthread_rwlock_t lock_;
};

class Worker;

/// The worker's lock as held by a thread other than the progress thread (Worker::Lock): a
/// move-only owner. Letting it go wakes the progress thread when work under the lock stopped
/// short for a thread that waited for it (Worker::WakeOnRelease); otherwise it costs what a
/// mutex's unlock costs.
class WorkerLock {
 public:
  WorkerLock(WorkerLock&& other) noexcept = default;
  WorkerLock& operator=(WorkerLock&& other) = delete;
  WorkerLock(const WorkerLock&) = delete;
  WorkerLock& operator=(const WorkerLock&) = delete;
  ~WorkerLock() { unlock(); }
  /// Let the lock go early (idempotent), waking the progress thread if it is owed a wake-up.
  void unlock();

 private:
  friend class Worker;
  WorkerLock(Worker* worker, std::unique_lock<std::mutex> lock)
      : worker_(worker), lock_(std::move(lock)) {}

  Worker* worker_ = nullptr;
  std::unique_lock<std::mutex> lock_;
};

/// A UCP worker and its progress thread. The thread sleeps in epoll on the worker's event
/// descriptor and on an eventfd that Post and Wake write, so an idle worker costs no CPU. UCX is
/// entered by one thread at a time (thread mode SERIALIZED): the progress thread holds the
/// worker's lock while it runs tasks and progress, and any other thread may take it (Lock) to
/// send, receive or progress itself, which saves a trip through the progress thread. A blocking
/// mutex, not UCX's spinlock: on a busy machine a spinning waiter would starve the holder. Owned
/// by one connection (or listener), which stops the thread before it tears its endpoints down on
/// its own thread; the worker is destroyed last.
class Worker {
 public:
  /// How long the progress thread stands back after a caller progressed the worker: long enough
  /// to span a caller's work between two reads, short enough that a caller that stops reading
  /// without sleeping in ferry still has its messages taken off the wire soon.
  static constexpr std::chrono::milliseconds kStandby{10};

  static Result<std::unique_ptr<Worker>> Make(std::shared_ptr<Context> context);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  ucp_worker_h handle() const noexcept { return worker_; }
  const std::shared_ptr<Context>& context() const noexcept { return context_; }
  /// This worker's packed address (what an endpoint made from a worker address needs).
  const std::string& address() const noexcept { return address_; }

  /// What a poll returns: how long the thread may sleep before polling again without an event
  /// (a negative value: until an event).
  using PollFn = std::function<std::chrono::milliseconds()>;
  /// Start the progress thread; `poll` runs on it after every round of progress. Tasks, progress
  /// and the poll run under ReplayGuard, except a poll that `registers` descriptors (a
  /// listener's, which accepts).
  void Start(PollFn poll, bool registers = false);
  /// Stop and join the progress thread (idempotent); tasks not run yet are dropped. The caller's
  /// thread then owns the worker.
  void Stop();
  /// The worker's lock, for a thread other than the progress thread that calls into UCX. Tasks
  /// and polls run with it held already; they must not take it again.
  WorkerLock Lock() {
    lock_waiters_.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock(ucx_mutex_);
    lock_waiters_.fetch_sub(1, std::memory_order_relaxed);
    return WorkerLock(this, std::move(lock));
  }
  /// Whether a thread waits in Lock() now: work under the lock that can wait (a poll's
  /// read-ahead) stops early for it. A relaxed load.
  bool LockWanted() const { return lock_waiters_.load(std::memory_order_relaxed) > 0; }
  /// With the lock held, from work that stopped short for a thread waiting in Lock() and left
  /// work behind that no event will announce (messages already in UCX's queue): the next
  /// WorkerLock to let the lock go wakes the progress thread, which then does that work. The
  /// waiter's own release comes after this (it gets the lock only once it is let go).
  void WakeOnRelease() { wake_on_release_ = true; }
  /// Run `task` on the progress thread soon, in posting order. Once the thread is stopped (or
  /// if Stop drops it before it ran), `dropped` runs instead, on the stopping thread.
  void Post(std::function<void()> task, std::function<void()> dropped = {});
  /// Run `task` on the progress thread and wait for it; false when the thread is stopped or was
  /// never started.
  bool Run(const std::function<void()>& task);
  /// Make the progress thread look again (a receive started waiting, room was freed); this ends
  /// a standby at once.
  void Wake();
  /// From a thread that has just progressed the worker itself (a caller spinning for its
  /// message or its send): the progress thread stands back for kStandby, neither progressing
  /// nor armed, so what arrives meanwhile wakes no thread and the two do not take turns at the
  /// lock. Costs a clock read and an atomic store.
  void CallerProgressed();
  /// From a caller about to sleep on what the progress thread delivers: end a standby, waking
  /// the thread (a write to its eventfd) only if it stood back.
  void CallerSleeps();
  /// Stop the thread and destroy the UCP worker (idempotent): what was in flight on it ends
  /// without its callbacks. Posting afterwards drops the task; waking is harmless.
  void Destroy();
  /// Requests in flight. An operation that UCX did not finish at once is tracked until its
  /// callback untracks it; `drop` releases what the callback would have, should it never come
  /// (a stopped peer). Destroy releases every request still tracked (ucp_request_free), so UCX
  /// may end them at its leisure, runs the drops of those that never called back, and only then
  /// destroys the worker. Call with the worker's lock held.
  void Track(void* request, std::function<void()> drop);
  /// From a request's callback: stop tracking it. True if Destroy released it already, in which
  /// case the callback must not free it.
  bool Untrack(void* request);
  /// With the thread stopped: progress until `done()` or `deadline`, whichever comes first.
  void Drain(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline);

 private:
  explicit Worker(std::shared_ptr<Context> context) : context_(std::move(context)) {}
  Status Init();
  void Loop();

  std::shared_ptr<Context> context_;
  ucp_worker_h worker_ = nullptr;
  std::string address_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  PollFn poll_;
  bool poll_registers_ = false;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  // Until when (steady clock, ns) the progress thread stands back; 0: it does not.
  std::atomic<int64_t> standby_until_{0};
  friend class WorkerLock;
  std::mutex ucx_mutex_;
  std::atomic<int> lock_waiters_{0};                          // threads inside Lock()
  bool wake_on_release_ = false;                              // under ucx_mutex_ (WakeOnRelease)
  std::unordered_map<void*, std::function<void()>> tracked_;  // under ucx_mutex_
  std::unordered_set<void*> released_;                        // by Destroy, under ucx_mutex_
  std::mutex tasks_mutex_;
  struct Task {
    std::function<void()> run;
    std::function<void()> dropped;
  };
  std::vector<Task> tasks_;
  bool stopped_ = false;  // guarded by tasks_mutex_
  bool started_ = false;  // guarded by tasks_mutex_: Start ran, so a task posted will run
};

}  // namespace ferry::transport::internal::ucx
