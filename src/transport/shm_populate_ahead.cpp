// PopulateAhead: a client's page tables filled ahead of its reads (shm_populate_ahead.hpp).
#include "transport/shm_populate_ahead.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "ferry/core/status_code.hpp"

namespace ferry::transport::internal::shm {

PopulateAhead::PopulateAhead()
    : page_(sysconf(_SC_PAGESIZE) > 0 ? static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 4096) {}

PopulateAhead::~PopulateAhead() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PopulateAhead::Note(const std::shared_ptr<const Mapping>& segment, uint64_t end) {
  read_.store(end, std::memory_order_relaxed);
  // Asked again only once a read has used half of what was asked: most Notes cost two loads.
  if (noted_.load(std::memory_order_relaxed) == segment.get() &&
      end + kWindow / 2 <= noted_asked_.load(std::memory_order_relaxed)) {
    return;
  }
  const auto size = static_cast<uint64_t>(segment->size());
  {
    std::lock_guard lock(mutex_);
    if (unsupported_ || stop_) return;
    if (segment_ != segment) {
      // Another segment: mapped from the page this read ends in on (what it read, it faulted
      // in itself).
      segment_ = segment;
      mapped_ = end & ~(page_ - 1);
      asked_ = mapped_;
    }
    if (end + kWindow / 2 <= asked_ || asked_ >= size) return;
    // Whole pages: each step starts on one, as madvise requires.
    asked_ = std::min(size, (end + kWindow + page_ - 1) & ~(page_ - 1));
    noted_.store(segment.get(), std::memory_order_relaxed);
    noted_asked_.store(asked_, std::memory_order_relaxed);
    if (!thread_.joinable()) {
      thread_ = std::thread([this] { Run(); });
      pthread_setname_np(thread_.native_handle(), "ferry-shm-ahead");  // for top, perf and tests
    }
  }
  work_.notify_one();
}

uint64_t PopulateAhead::mapped() const {
  std::lock_guard lock(mutex_);
  return mapped_;
}

uint64_t PopulateAhead::asked() const {
  std::lock_guard lock(mutex_);
  return asked_;
}

void PopulateAhead::Run() {
  std::unique_lock lock(mutex_);
  while (true) {
    work_.wait(lock, [&] { return stop_ || (segment_ != nullptr && mapped_ < asked_); });
    if (stop_) return;
    // The segment is held while its pages are mapped, and the lock let go: a read that needs
    // a page before its turn faults it in itself, as without this.
    const std::shared_ptr<const Mapping> segment = segment_;
    // Behind the reads (a busy machine: the reader and a server on the cores), mapping pages
    // beside them only contends for them: skip to a step past them.
    const uint64_t read = read_.load(std::memory_order_relaxed);
    if (read > mapped_) {
      mapped_ = std::min(asked_, (read + kStep + page_ - 1) & ~(page_ - 1));
      if (mapped_ >= asked_) continue;
    }
    const uint64_t from = mapped_;
    const uint64_t to = std::min(asked_, from + kStep);
    lock.unlock();
    // The segment is sealed: its server wrote all of it, so no page mapped here is one it has
    // not written yet (which the kernel would make, zeroed, in the server's memory).
    uint8_t* base = const_cast<uint8_t*>(segment->data());
    const int error = madvise(base + from, to - from, MADV_POPULATE_READ) == 0 ? 0 : errno;
    lock.lock();
    if (error == EINTR) continue;  // a signal came: that step again
    if (error != 0 && StatusCodeFromErrno(error) == StatusCode::kInvalidArgument) {
      unsupported_ = true;  // a kernel before 5.14: the reads fault their pages in, as before
      return;
    }
    // Another error (a page the server's file no longer has) leaves that step to the reads,
    // which report it their own way.
    if (segment_ == segment && mapped_ == from) mapped_ = to;
  }
}

}  // namespace ferry::transport::internal::shm
