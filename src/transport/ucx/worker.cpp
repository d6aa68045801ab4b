// The UCP worker and its event-driven progress thread.
#if FERRY_WITH_UCX

#include "transport/ucx/worker.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <utility>

namespace ferry::transport::internal::ucx {

namespace {

// Whether this UCX replays a missed event to whichever handler holds its descriptor number now.
bool ReplaysStaleEvents() {
  static const bool stale = !LoadedUcxAtLeast(1, 17);
  return stale;
}

// Never destroyed: progress threads may still run while the process exits.
DescriptorLock& Descriptors() {
  static auto* lock = new DescriptorLock;
  return *lock;
}

}  // namespace

DescriptorLock::DescriptorLock() {
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&lock_, &attr);
  pthread_rwlockattr_destroy(&attr);
}

DescriptorLock::~DescriptorLock() { pthread_rwlock_destroy(&lock_); }
void DescriptorLock::lock() { pthread_rwlock_wrlock(&lock_); }
bool DescriptorLock::try_lock() { return pthread_rwlock_trywrlock(&lock_) == 0; }
void DescriptorLock::unlock() { pthread_rwlock_unlock(&lock_); }
void DescriptorLock::lock_shared() { pthread_rwlock_rdlock(&lock_); }
bool DescriptorLock::try_lock_shared() { return pthread_rwlock_tryrdlock(&lock_) == 0; }
void DescriptorLock::unlock_shared() { pthread_rwlock_unlock(&lock_); }

std::shared_lock<DescriptorLock> ReplayGuard() {
  if (!ReplaysStaleEvents()) return {};
  return std::shared_lock<DescriptorLock>(Descriptors());
}

std::unique_lock<DescriptorLock> RegisterGuard() {
  if (!ReplaysStaleEvents()) return {};
  return std::unique_lock<DescriptorLock>(Descriptors());
}

Result<std::unique_ptr<Worker>> Worker::Make(std::shared_ptr<Context> context) {
  std::unique_ptr<Worker> worker(new Worker(std::move(context)));
  FERRY_RETURN_NOT_OK(worker->Init());
  return worker;
}

Status Worker::Init() {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucs_status_t st = [&] {
    auto registering = RegisterGuard();
    return ucp_worker_create(context_->handle(), &params, &worker_);
  }();
  if (st != UCS_OK) {
    worker_ = nullptr;
    return UcxError(StatusCode::kIOError, "cannot create a UCX worker", st);
  }
  ucp_address_t* address = nullptr;
  size_t length = 0;
  st = ucp_worker_get_address(worker_, &address, &length);
  if (st != UCS_OK)
    return UcxError(StatusCode::kIOError, "cannot read the UCX worker's address", st);
  address_.assign(reinterpret_cast<const char*>(address), length);
  ucp_worker_release_address(worker_, address);
  int event_fd = -1;
  st = ucp_worker_get_efd(worker_, &event_fd);
  if (st != UCS_OK)
    return UcxError(StatusCode::kIOError, "cannot get the UCX worker's event descriptor", st);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0)
    return Status::FromErrno(errno, "UCX worker: epoll or eventfd failed");
  for (int fd : {event_fd, wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return Status::FromErrno(errno, "UCX worker: epoll_ctl failed");
    }
  }
  return Status::OK();
}

Worker::~Worker() {
  Destroy();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Worker::Destroy() {
  Stop();
  std::unique_lock ucx(ucx_mutex_);
  if (worker_ == nullptr) return;
  // What never finished (a peer that stopped answering): UCX owns it from here, so destroying
  // the worker does not find requests the user still holds.
  for (auto& [request, drop] : tracked_) {
    released_.insert(request);
    ucp_request_free(request);
  }
  {
    auto replaying = ReplayGuard();
    ucp_worker_destroy(worker_);
  }
  worker_ = nullptr;
  // Those whose callbacks never came: release what they held.
  std::unordered_map<void*, std::function<void()>> rest;
  rest.swap(tracked_);
  released_.clear();
  // Each drop releases one request's own hold, so their order does not matter.
  for (auto& [request, drop] : rest) {  // NOLINT(bugprone-nondeterministic-pointer-iteration-order)
    if (drop) drop();
  }
}

void Worker::Track(void* request, std::function<void()> drop) {
  tracked_[request] = std::move(drop);
}

bool Worker::Untrack(void* request) {
  tracked_.erase(request);
  return released_.erase(request) > 0;
}

void Worker::Start(PollFn poll, bool registers) {
  poll_ = std::move(poll);
  poll_registers_ = registers;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "ferry-ucx");  // for top, perf and tests
    Loop();
  });
  std::lock_guard lock(tasks_mutex_);
  started_ = true;
}

void Worker::Stop() {
  std::vector<Task> dropped;
  {
    std::lock_guard lock(tasks_mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  stop_ = true;
  Wake();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lock(tasks_mutex_);
    dropped.swap(tasks_);
  }
  for (Task& t : dropped) {
    if (t.dropped) t.dropped();
  }
}

void Worker::Post(std::function<void()> task, std::function<void()> dropped) {
  {
    std::unique_lock lock(tasks_mutex_);
    if (stopped_) {
      lock.unlock();
      if (dropped) dropped();
      return;
    }
    tasks_.push_back(Task{std::move(task), std::move(dropped)});
  }
  Wake();
}

bool Worker::Run(const std::function<void()>& task) {
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    bool finished = false;
    bool ran = false;
  };
  // Marks the task finished when the queued function goes, whether it ran or Stop dropped it.
  struct Finisher {
    std::shared_ptr<State> state;
    ~Finisher() {
      if (!state) return;
      {
        std::lock_guard lock(state->mutex);
        state->finished = true;
      }
      state->changed.notify_all();
    }
  };
  auto state = std::make_shared<State>();
  auto finisher = std::make_shared<Finisher>();
  finisher->state = state;
  {
    std::lock_guard lock(tasks_mutex_);
    if (stopped_ || !started_) return false;  // nobody would run it
    tasks_.push_back(Task{[&task, state, finisher]() mutable {
                            task();
                            {
                              std::lock_guard ran_lock(state->mutex);
                              state->ran = true;
                            }
                            finisher.reset();
                          },
                          {}});
  }
  finisher.reset();
  Wake();
  std::unique_lock lock(state->mutex);
  state->changed.wait(lock, [&] { return state->finished; });
  return state->ran;
}

namespace {

int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void WorkerLock::unlock() {
  if (!lock_.owns_lock()) return;
  const bool wake = std::exchange(worker_->wake_on_release_, false);
  lock_.unlock();
  if (wake) worker_->Wake();
}

void Worker::CallerProgressed() {
  standby_until_.store(
      SteadyNanos() + std::chrono::duration_cast<std::chrono::nanoseconds>(kStandby).count(),
      std::memory_order_release);
}

void Worker::CallerSleeps() {
  if (standby_until_.exchange(0, std::memory_order_acq_rel) != 0) Wake();
}

void Worker::Wake() {
  standby_until_.store(0, std::memory_order_release);
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

void Worker::Drain(const std::function<bool()>& done,
                   std::chrono::steady_clock::time_point deadline) {
  std::unique_lock ucx(ucx_mutex_);
  while (worker_ != nullptr && !done() && std::chrono::steady_clock::now() < deadline) {
    {
      auto replaying = ReplayGuard();
      if (ucp_worker_progress(worker_) != 0) continue;
    }
    if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) continue;
    epoll_event events[2];
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    (void)epoll_wait(epoll_fd_, events, 2, static_cast<int>(std::max<int64_t>(left.count(), 1)));
  }
}

void Worker::Loop() {
  while (!stop_) {
    std::chrono::milliseconds again(-1);
    int64_t standby_ns = 0;
    {
      std::unique_lock ucx(ucx_mutex_);
      std::vector<Task> tasks;
      {
        std::lock_guard lock(tasks_mutex_);
        tasks.swap(tasks_);
      }
      {
        auto replaying = ReplayGuard();
        for (Task& task : tasks) task.run();
        while (ucp_worker_progress(worker_) != 0) {
        }
        if (poll_ && !poll_registers_) again = poll_();
      }
      if (poll_ && poll_registers_) again = poll_();
      {
        std::lock_guard lock(tasks_mutex_);
        if (!tasks_.empty()) continue;
      }
      standby_ns = standby_until_.load(std::memory_order_acquire) - SteadyNanos();
      // Sleep until the network or a poster wakes us, or the poll's deadline; BUSY means events
      // arrived since progress. Standing back, the worker is not armed: its caller progresses it.
      if (standby_ns <= 0 && ucp_worker_arm(worker_) == UCS_ERR_BUSY) continue;
    }
    if (standby_ns > 0) {
      int ms = static_cast<int>((standby_ns + 999'999) / 1'000'000);
      if (again.count() >= 0) ms = std::min<int>(ms, static_cast<int>(again.count()));
      pollfd woken{wake_fd_, POLLIN, 0};
      if (::poll(&woken, 1, ms) > 0) {
        uint64_t count = 0;
        [[maybe_unused]] const ssize_t r = ::read(wake_fd_, &count, sizeof(count));
      }
      continue;
    }
    epoll_event events[2];
    const int n =
        epoll_wait(epoll_fd_, events, 2, again.count() < 0 ? -1 : static_cast<int>(again.count()));
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wake_fd_) {
        uint64_t count = 0;
        [[maybe_unused]] const ssize_t r = ::read(wake_fd_, &count, sizeof(count));
      }
    }
  }
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
