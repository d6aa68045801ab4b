// The worker pool and the eventfd completion queues of ferry.aio.
#include "aio_queue.hpp"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>

namespace ferry::python::aio {
namespace {

/// A pool of worker threads running jobs in order. Made once and never destroyed: its threads
/// outlive static destruction (a joinable std::thread destroyed at exit would terminate the
/// process).
class Pool {
 public:
  /// look: an idle worker looks for its next job for kLookFor before it sleeps.
  // `name`: its threads' (top, perf and a debugger show it).
  Pool(bool look, const char* name) : look_(look), name_(name) {}

  Status SetWorkers(int workers) {
    std::lock_guard<std::mutex> lock(mu_);
    if (workers < 1 || workers > 64) return Status::Invalid("workers must be 1 to 64");
    if (!threads_.empty()) {
      return Status::FailedPrecondition(
          "ferry.aio: set_workers comes before the first call; the worker pool already runs, "
          "with " +
          std::to_string(threads_.size()) + " worker(s)");
    }
    workers_ = workers;
    return Status::OK();
  }
  int workers() {
    std::lock_guard<std::mutex> lock(mu_);
    return workers_;
  }
  int started() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(threads_.size());
  }

  void Submit(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(job));
      queued_.fetch_add(1, std::memory_order_release);
      while (static_cast<int>(threads_.size()) < workers_) {
        threads_.emplace_back([this] {
          pthread_setname_np(pthread_self(), name_);
          Run();
        });
      }
    }
    ready_.notify_one();
  }

 private:
  void Run() {
    for (;;) {
      // A loop's next call usually follows the last one's result within tens of µs (its own
      // wake-up, then Python): a worker that looks for it that long before it sleeps is not
      // woken for it, and waking a thread whose core went idle costs about 40 µs here.
      const auto until =
          std::chrono::steady_clock::now() + (look_ ? kLookFor : std::chrono::microseconds(0));
      while (queued_.load(std::memory_order_acquire) == 0 &&
             std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [this] { return !jobs_.empty(); });
        job = std::move(jobs_.front());
        jobs_.pop_front();
        queued_.fetch_sub(1, std::memory_order_relaxed);
      }
      job();
    }
  }

  /// How long an idle worker looks for a job before it sleeps.
  static constexpr std::chrono::microseconds kLookFor{100};

  const bool look_;
  const char* const name_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::atomic<int> queued_{0};  // jobs_.size(), read without the lock by a worker looking
  std::vector<std::thread> threads_;
  int workers_ = 1;
};

/// The pools, made on first use: the workers, and the one thread that releases batches. A forked
/// child has none of their threads (and a lock may have been held at the fork): the child starts
/// fresh pools on its first call, leaking the copies.
std::atomic<Pool*> the_pool{nullptr};
std::atomic<Pool*> the_releaser{nullptr};

void ForgetPoolsInChild() {
  the_pool.store(nullptr);
  the_releaser.store(nullptr);
}

Pool& Get(std::atomic<Pool*>& slot, bool look, const char* name) {
  Pool* pool = slot.load();
  if (pool != nullptr) return *pool;
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, &ForgetPoolsInChild); });
  auto* fresh = new Pool(look, name);  // never destroyed: see Pool
  if (!slot.compare_exchange_strong(pool, fresh)) {
    delete fresh;  // another thread made it first
    return *pool;
  }
  return *fresh;
}

Pool& ThePool() { return Get(the_pool, true, "ferry-aio"); }

}  // namespace

Result<std::shared_ptr<Completions>> Completions::Make() {
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "ferry.aio: eventfd failed");
  return std::shared_ptr<Completions>(new Completions(fd));
}

Completions::~Completions() { ::close(fd_); }

void Completions::Post(uint64_t id, Maker maker) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_.emplace_back(id, std::move(maker));
  }
  const uint64_t one = 1;
  // Only an overflowing counter fails (EAGAIN), and the loop is then already woken.
  [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
}

std::vector<std::pair<uint64_t, Maker>> Completions::Take() {
  uint64_t count = 0;
  // Reset before taking: a Post between the two leaves the counter set, which costs at most
  // one wakeup that finds nothing.
  [[maybe_unused]] const ssize_t n = ::read(fd_, &count, sizeof count);
  std::vector<std::pair<uint64_t, Maker>> out;
  std::lock_guard<std::mutex> lock(mu_);
  out.swap(done_);
  return out;
}

void Submit(std::function<void()> job) { ThePool().Submit(std::move(job)); }
// The release thread looks for its next job too: a stream's batches are released one after the
// other, and a thread that slept after each had to be woken for the next, a futex call on the
// loop's thread a batch (16 int64 batches of a GiB: 124-142 us to hand out, 82-119 us so).
void Release(std::function<void()> job) {
  Get(the_releaser, true, "ferry-aio-free").Submit(std::move(job));
}
Status SetWorkers(int workers) { return ThePool().SetWorkers(workers); }
int Workers() { return ThePool().workers(); }
int StartedWorkers() { return ThePool().started(); }

}  // namespace ferry::python::aio
