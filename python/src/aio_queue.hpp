// ferry.aio's machinery: a small fixed pool of worker threads that runs the blocking C++ calls
// with the GIL released, and one completion queue per client whose eventfd wakes the event loop.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "common.hpp"

namespace ferry::python::aio {

/// Turns a finished job's C++ result into a Python object, on the event loop's thread under the
/// GIL (raising its error instead where it failed). Holds no Python object itself, so it may be
/// made and dropped on a worker.
using Maker = std::function<nb::object()>;

/// One client's completion queue: workers Post (id, maker) and add 1 to an eventfd, which the
/// event loop watches (loop.add_reader); its reader Takes what finished. Shared by the client,
/// its streams and their jobs in flight: the eventfd closes with the last of them.
class Completions {
 public:
  /// A queue with a fresh non-blocking eventfd.
  static Result<std::shared_ptr<Completions>> Make();
  Completions(const Completions&) = delete;
  Completions& operator=(const Completions&) = delete;
  ~Completions();

  /// The eventfd: readable while completions wait.
  int fd() const noexcept { return fd_; }
  /// Queue job `id`'s result and wake the loop. Any thread, no GIL needed.
  void Post(uint64_t id, Maker maker);
  /// Reset the eventfd and take every queued completion, oldest first.
  std::vector<std::pair<uint64_t, Maker>> Take();

 private:
  explicit Completions(int fd) : fd_(fd) {}

  int fd_;
  std::mutex mu_;
  std::vector<std::pair<uint64_t, Maker>> done_;
};

/// Run `job` on the process's worker pool (started by the first Submit, `Workers()` threads,
/// shared by every client, never stopped: its idle threads wait on a condition variable until
/// the process exits). Jobs run in submission order as workers free up; a job must not touch
/// Python objects (a Maker does that).
void Submit(std::function<void()> job);
/// Run `job` on the process's release thread (one, started by the first Release, never
/// stopped), in order: the release of what a worker read. Apart from the workers, so that a
/// read waiting for room in a server's region (which only releases make) never stands between
/// a release and its turn. Idle, it looks for its next job for 100 µs before it sleeps, as a
/// worker does.
void Release(std::function<void()> job);
/// Size the pool (1-64) before its first job; FailedPrecondition once it runs.
[[nodiscard]] Status SetWorkers(int workers);
/// The pool's size (1 unless SetWorkers said otherwise).
int Workers();
/// Threads the pool has started (0 before its first job).
int StartedWorkers();

}  // namespace ferry::python::aio
