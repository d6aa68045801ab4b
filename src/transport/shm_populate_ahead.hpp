// Internal to the shared-memory transport: a client's page tables filled ahead of its reads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "ferry/core/mapping.hpp"

namespace ferry::transport::internal::shm {

/// Fills a client's page tables for the pages of a segment ahead of its reads, on a thread of its
/// own, so that the pages of a kept dataset are mapped before its caller reads them instead of by
/// page faults on the caller's thread (a quarter of a small-batch reader's time). Only for a
/// segment sealed against writes, which its server wrote whole: every page it maps exists. Told
/// where each read ends (Note), it maps up to kWindow bytes past the furthest, once: a segment's
/// pages stay mapped until it is unmapped. Reads nothing of the pages (MADV_POPULATE_READ); where
/// the kernel lacks that (before Linux 5.14) it does nothing. Thread-safe; its thread starts at the
/// first Note that needs it and stops with it.
class PopulateAhead {
 public:
  /// How far past the furthest read the pages are mapped.
  static constexpr uint64_t kWindow = uint64_t{8} << 20;
  /// What the thread maps at once: a read that catches up with it waits no longer than this.
  static constexpr uint64_t kStep = uint64_t{1} << 20;

  PopulateAhead();
  ~PopulateAhead();
  PopulateAhead(const PopulateAhead&) = delete;
  PopulateAhead& operator=(const PopulateAhead&) = delete;

  /// A read of `segment` reached `end` (bytes from its start): map its pages up to kWindow past
  /// that, from where the last Note of this segment left off. Cheap when nothing is to be done.
  void Note(const std::shared_ptr<const Mapping>& segment, uint64_t end);

  /// Bytes of the current segment the thread has mapped; for tests.
  uint64_t mapped() const;
  /// Bytes of the current segment the Notes so far asked to be mapped (0 before any); for tests.
  uint64_t asked() const;

 private:
  void Run();

  // Note's test without the lock: the segment and the mark of its last Note (set under mutex_).
  std::atomic<const Mapping*> noted_{nullptr};
  std::atomic<uint64_t> noted_asked_{0};
  const uint64_t page_;  // the system's page size: each step starts on a page, as madvise asks
  std::atomic<uint64_t> read_{0};  // the last Note's end
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::shared_ptr<const Mapping> segment_;  // the segment being mapped (its last Note's)
  uint64_t asked_ = 0;                      // map [0, asked_) of it
  uint64_t mapped_ = 0;                     // what is mapped of it
  bool stop_ = false;
  bool unsupported_ = false;  // the kernel refused MADV_POPULATE_READ
  std::thread thread_;
};

}  // namespace ferry::transport::internal::shm
