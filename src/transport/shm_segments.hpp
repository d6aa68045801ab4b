// Internal to the shared-memory transport: the segments a server shared with a client, mapped
// read-only, and the type-1 bodies found in them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "ferry/core/mapping.hpp"
#include "ferry/core/result.hpp"
#include "ferry/transport/transport.hpp"
#include "transport/shm_populate_ahead.hpp"

namespace ferry::transport::internal::shm {

/// The segments one connection was shared, each mapped read-only once and kept until the
/// connection goes (arrays over a segment keep its mapping through their owners). Thread-safe:
/// the thread reading the socket maps, any thread fetches. A fetch costs a map lookup per buffer;
/// in a segment sealed against writes (a kept dataset, Region::Seal) that maps in 4 KiB pages,
/// the pages after it are mapped ahead on a thread of their own (PopulateAhead). A live region's
/// pages are left to the reads: its server is still writing them.
class Segments {
 public:
  /// Map segment `index`, `length` bytes of descriptor `fd`, which the call closes. Refused,
  /// naming the segment, unless the server cannot shrink it under its readers: sealed against
  /// shrinking, or, for a served file (`file`), a regular file no shorter than `length`.
  [[nodiscard]] Status Map(uint64_t index, uint64_t length, bool file, int fd);

  /// The body whose buffers `refs` name by wire address (segment index and offset): in place
  /// where they lie in one segment (borrowed: the bytes are the segment's whole mapping), else
  /// gathered into one local buffer (one copy). A buffer in a segment never shared, or past its
  /// end, is refused, naming the buffer. `*out`'s buffers vector keeps its room.
  [[nodiscard]] Status Fetch(std::span<const BufferRef> refs, FetchedBody* out) const;

  /// Bytes of the last segment read in place that fetches asked to be mapped ahead (0 when none
  /// was mapped ahead); for tests.
  uint64_t asked_ahead() const { return ahead_.asked(); }

 private:
  // A mapped segment, and whether its pages are mapped ahead of the reads: its server sealed it
  // against writes (F_SEAL_WRITE), so they never change, and it maps in 4 KiB pages.
  struct Mapped {
    std::shared_ptr<const Mapping> pages;
    bool ahead = false;
  };
  mutable std::mutex mutex_;
  std::map<uint64_t, Mapped> mapped_;
  // The pages of the sealed segment fetches read in place, mapped ahead of them.
  mutable PopulateAhead ahead_;
};

}  // namespace ferry::transport::internal::shm
