// Internal to the shared-memory transport: what its connection and its listener share.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "ferry/core/mapping.hpp"
#include "ferry/core/status_code.hpp"
#include "ferry/transport/shm.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::transport::internal::shm {

constexpr uint64_t kOffsetMask = (uint64_t{1} << kShmOffsetBits) - 1;

/// Fill a sockaddr_un for `path`; a leading '@' names the abstract namespace, which vanishes
/// with the process (no socket file survives a SIGKILL).
Result<socklen_t> MakeAddress(const std::string& path, sockaddr_un* addr);

/// A memfd segment the server created, mapped read-write until Seal (the region owns the
/// descriptor and the mapping); or memory lent to it (a served file's mapping), which `owner`
/// keeps and which is never written. A created segment's set of seals stays open until it is
/// first shared (Shareable), so that Seal can add F_SEAL_WRITE before then.
class ShmRegion final : public Region {
 public:
  ShmRegion(int fd, Mapping pages, uint32_t index)
      : fd_(fd),
        data_(pages.data()),
        size_(pages.size()),
        index_(index),
        pages_(std::move(pages)) {}
  ShmRegion(int fd, uint8_t* data, int64_t size, uint32_t index, std::shared_ptr<const void> owner)
      : fd_(fd), data_(data), size_(size), index_(index), owner_(std::move(owner)) {}
  ~ShmRegion() override {
    if (owner_ == nullptr) close(fd_);  // lent: the owner closes it
  }
  uint8_t* data() const noexcept override { return data_; }
  int64_t size() const noexcept override { return size_; }
  uint64_t WireAddress(int64_t offset) const noexcept override {
    return (uint64_t{index_} << kShmOffsetBits) | static_cast<uint64_t>(offset);
  }
  std::string remote_handle() const override { return {}; }
  /// Remaps the segment read-only from a read-only descriptor (/proc/self/fd: a writable
  /// shared mapping, even one made read-only since, blocks the seal) and seals it against
  /// writes and further seals. A lent file is not the region's to seal: refused.
  Status Seal() override;
  /// Closes the segment's set of seals (F_SEAL_SEAL) if Seal has not: called before each share,
  /// so that no one adds a seal once a client holds the descriptor.
  Status Shareable();
  int fd() const noexcept { return fd_; }
  uint32_t index() const noexcept { return index_; }
  bool lent() const noexcept { return owner_ != nullptr; }

 private:
  int fd_;
  uint8_t* data_;
  int64_t size_;
  uint32_t index_;
  Mapping pages_;
  std::shared_ptr<const void> owner_;
  std::mutex seals_mutex_;
  bool seals_closed_ = false;  // with seals_mutex_: F_SEAL_SEAL is set
};

/// `size` bytes of a fresh memfd named `name`: mode 0600, sealed against shrinking and growing
/// (and, when `final_seals`, against further seals), mapped read-write and shared, with
/// MADV_HUGEPAGE when `huge_pages` (SegmentHugePages). Its descriptor goes to `*fd`, the
/// caller's to pass and close. Errors name `what`.
Result<Mapping> MakeSealedMemfd(const char* name, int64_t size, const std::string& what, int* fd,
                                bool huge_pages = false, bool final_seals = true);

/// Whether a segment of `size` bytes asks for huge pages, on both sides: a shared segment of
/// 2 MiB or more, in memory (a memfd, not a served file). Where the kernel's
/// transparent_hugepage/shmem_enabled is `advise` (or `within_size`, `always`), the pages the
/// server writes are 2 MiB each, and a client maps and unmaps each with one entry, not 512;
/// where it is `never` (Debian's default) the hint does nothing.
inline bool SegmentHugePages(int64_t size) { return size >= (int64_t{2} << 20); }

/// A connection over `fd`, a connected Unix stream socket it then owns.
std::unique_ptr<Connection> MakeConnection(int fd, TransportLimits limits);
/// A client's end over `fd`, as MakeConnection, that sends a non-empty `trace`
/// (ConnectOptions::trace) first, in a trace frame.
Result<std::unique_ptr<Connection>> MakeClientConnection(int fd, TransportLimits limits,
                                                         const std::string& trace);

}  // namespace ferry::transport::internal::shm
