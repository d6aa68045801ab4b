// The shared-memory transport's listener: a Unix socket (a path, or an abstract name) that
// accepts only this user's processes, and the memfd segments it makes for type-1 bodies.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>  // memfd_create
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "transport/mailbox.hpp"
#include "transport/shm_common.hpp"

namespace ferry::transport {

namespace {

using internal::shm::kOffsetMask;
using internal::shm::MakeAddress;
using internal::shm::ShmRegion;

class ShmListener final : public Listener {
 public:
  ShmListener(int fd, int wake, std::string path, TransportLimits limits)
      : fd_(fd),
        wake_(wake),
        path_(std::move(path)),
        limits_(internal::WithClock(std::move(limits))) {}
  ~ShmListener() override {
    Close();
    close(fd_);
    close(wake_);
  }

  Result<std::unique_ptr<Connection>> Accept(std::chrono::milliseconds timeout) override {
    const Clock& clock = *limits_.clock;
    const Clock::time_point deadline = clock.After(timeout);
    while (true) {
      if (closed_.load()) return Status::Cancelled("the listener is closed");
      pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_, POLLIN, 0}};
      FERRY_ASSIGN_OR_RAISE(const int n, clock.Poll(fds, 2, deadline));
      if (closed_.load()) return Status::Cancelled("the listener is closed");
      if (n > 0 && (fds[0].revents & POLLIN)) {
        const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) {
          // Interrupted, or a client that gave up before it was accepted: wait for the next.
          if (errno == EINTR || StatusCodeFromErrno(errno) == StatusCode::kUnavailable) continue;
          return Status::FromErrno(errno, "accepting a client");
        }
        // Only processes of this user may read our segments.
        ucred cred{};
        socklen_t len = sizeof(cred);
        if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
            (cred.uid != geteuid() && cred.uid != 0)) {
          close(c);
          continue;
        }
        return std::unique_ptr<Connection>(internal::shm::MakeConnection(c, limits_));
      }
      if (clock.Now() >= deadline) {
        return Status::DeadlineExceeded("timed out waiting for a client");
      }
    }
  }

  std::string scheme() const override { return "shm"; }
  std::string address() const override { return path_; }

  Result<std::shared_ptr<Region>> CreateRegion(int64_t size) override {
    if (size <= 0 || static_cast<uint64_t>(size) > kOffsetMask) {
      return Status::Invalid("a shared segment needs 1 byte to 1 TiB, not " + std::to_string(size));
    }
    int f = -1;
    FERRY_ASSIGN_OR_RAISE(
        Mapping pages,
        internal::shm::MakeSealedMemfd("ferry-segment", size,
                                       "a shared segment of " + std::to_string(size) + " bytes", &f,
                                       internal::shm::SegmentHugePages(size),
                                       /*final_seals=*/false));
    return std::shared_ptr<Region>(
        std::make_shared<ShmRegion>(f, std::move(pages), next_region_++));
  }

  Result<std::shared_ptr<Region>> RegisterRegion(LendableBytes memory) override {
    if (memory.fd < 0 || memory.data == nullptr || memory.owner == nullptr) {
      return Status::Invalid("lending memory over shared memory needs its mapping, its owner " +
                             std::string("and the descriptor it maps"));
    }
    if (memory.size <= 0 || static_cast<uint64_t>(memory.size) > kOffsetMask) {
      return Status::Invalid("a shared segment needs 1 byte to 1 TiB, not " +
                             std::to_string(memory.size));
    }
    struct stat st {};
    if (fstat(memory.fd, &st) != 0)
      return Status::FromErrno(errno, "fstat of the lent memory's descriptor");
    if (!S_ISREG(st.st_mode) || st.st_size < memory.size) {
      return Status::Invalid("the lent memory's descriptor is not a regular file of at least " +
                             std::to_string(memory.size) + " bytes");
    }
    // Never written: the const_cast only fits Region's interface.
    auto* data = const_cast<uint8_t*>(memory.data);
    return std::shared_ptr<Region>(std::make_shared<ShmRegion>(
        memory.fd, data, memory.size, next_region_++, std::move(memory.owner)));
  }

  void Close() override {
    if (closed_.exchange(true)) return;
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(wake_, &one, sizeof(one));
    shutdown(fd_, SHUT_RDWR);
    if (!path_.empty() && path_[0] != '@') unlink(path_.c_str());
  }

 private:
  int fd_;
  int wake_;
  std::string path_;
  const TransportLimits limits_;
  std::atomic<bool> closed_{false};
  std::atomic<uint32_t> next_region_{0};
};

std::string FreshPath() {
  static std::atomic<uint32_t> counter{0};
  return "@ferry-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

}  // namespace

Result<Mapping> internal::shm::MakeSealedMemfd(const char* name, int64_t size,
                                               const std::string& what, int* fd, bool huge_pages,
                                               bool final_seals) {
  const int f = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (f < 0) return Status::FromErrno(errno, "memfd_create for " + what);
  if (fchmod(f, 0600) != 0 || ftruncate(f, size) != 0 ||
      fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | (final_seals ? F_SEAL_SEAL : 0)) != 0) {
    const Status st = Status::FromErrno(errno, "preparing " + what);
    close(f);
    return st;
  }
  Result<Mapping> pages =
      Mapping::OfFile(f, size, {.shared = true, .huge_pages = huge_pages}, what.c_str());
  if (!pages.ok()) {
    close(f);
    return pages.status();
  }
  *fd = f;
  return pages;
}

Result<std::unique_ptr<Listener>> ListenShm(const std::string& path, TransportLimits limits) {
  const std::string where = path.empty() ? FreshPath() : path;
  sockaddr_un addr{};
  FERRY_ASSIGN_OR_RAISE(socklen_t len, MakeAddress(where, &addr));
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "socket");
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 64) != 0) {
    const Status st = Status::FromErrno(errno, "listening on " + where);
    close(fd);
    return st;
  }
  const int wake = eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    const Status st = Status::FromErrno(errno, "eventfd");
    close(fd);
    return st;
  }
  return std::unique_ptr<Listener>(
      std::make_unique<ShmListener>(fd, wake, where, std::move(limits)));
}

Result<std::unique_ptr<Connection>> ConnectShm(const std::string& path,
                                               const ConnectOptions& options) {
  sockaddr_un addr{};
  FERRY_ASSIGN_OR_RAISE(socklen_t len, MakeAddress(path, &addr));
  if (options.trace.size() > kMaxTraceBytes) {
    return Status::Invalid("a trace of " + std::to_string(options.trace.size()) +
                           " bytes is over the limit of " + std::to_string(kMaxTraceBytes));
  }
  const TransportLimits limits = internal::WithClock(options.limits);
  const Clock& clock = *limits.clock;
  const Clock::time_point deadline =
      clock.After(options.connect_timeout.count() > 0 ? options.connect_timeout : limits.timeout);
  while (true) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status::FromErrno(errno, "socket");
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
      return internal::shm::MakeClientConnection(fd, limits, options.trace);
    }
    const int err = errno;
    close(fd);
    // The server may not be listening yet: retry every 10 ms until the deadline, and once at it.
    const StatusCode code = StatusCodeFromErrno(err);
    if ((code != StatusCode::kUnavailable && code != StatusCode::kNotFound) ||
        clock.Now() >= deadline) {
      return Status::FromErrno(err, "connecting to shm://" + path);
    }
    clock.SleepUntil(std::min(deadline, clock.After(std::chrono::milliseconds(10))));
  }
}

}  // namespace ferry::transport
