// Memory and file-descriptor sinks.
#include "ferry/ipc/sink.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace ferry::ipc {

namespace {

constexpr int64_t kPage = 4096;

}  // namespace

Status MemorySink::Grow(int64_t needed) {
  int64_t capacity = std::max<int64_t>(pages_.size() * 2, int64_t{64} << 10);
  while (capacity < needed) capacity *= 2;
  capacity = (capacity + kPage - 1) / kPage * kPage;
  // Fresh anonymous pages come zeroed from the kernel and mremap moves pages, not bytes. Large
  // outputs take huge pages where the kernel offers them: 512x fewer page faults.
  const Status st = pages_.Resize(capacity, {.huge_pages = capacity >= (int64_t{2} << 20)});
  return st.ok() ? st : st.WithContext("MemorySink");
}

Status MemorySink::Write(std::span<const ByteSpan> pieces) {
  int64_t total = size_;
  for (const ByteSpan& p : pieces) {
    if (p.size < 0 || __builtin_add_overflow(total, p.size, &total)) {
      return Status::Invalid("MemorySink: a piece has a negative or overflowing size");
    }
  }
  if (total > pages_.size()) FERRY_RETURN_NOT_OK(Grow(total));
  for (const ByteSpan& p : pieces) {
    if (p.size == 0) continue;
    std::memcpy(pages_.data() + size_, p.data, static_cast<size_t>(p.size));
    size_ += p.size;
  }
  return Status::OK();
}

SharedBytes MemorySink::Finish() {
  auto pages = std::make_shared<Mapping>(std::move(pages_));
  SharedBytes out{pages->data(), size_, std::move(pages)};
  size_ = 0;
  return out;
}

Result<std::unique_ptr<FileSink>> FileSink::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "cannot create \"" + path + "\"");
  return std::unique_ptr<FileSink>(new FileSink(fd, true, path));
}

std::unique_ptr<FileSink> FileSink::FromFd(int fd, bool owned) {
  return std::unique_ptr<FileSink>(new FileSink(fd, owned, "descriptor " + std::to_string(fd)));
}

FileSink::~FileSink() { (void)Close(); }

Status FileSink::Close() {
  if (!owned_ || fd_ < 0) return Status::OK();
  const int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) return Status::FromErrno(errno, "closing " + name_);
  return Status::OK();
}

Status FileSink::Write(std::span<const ByteSpan> pieces) {
  if (fd_ < 0) return Status::Invalid("writing to " + name_ + " after Close");
  std::vector<iovec>& iov = iov_;
  iov.clear();
  for (const ByteSpan& p : pieces) {
    if (p.size > 0) iov.push_back(iovec{const_cast<uint8_t*>(p.data), static_cast<size_t>(p.size)});
  }
  size_t first = 0;
  while (first < iov.size()) {
    const int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
    const ssize_t n = writev(fd_, iov.data() + first, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "writing to " + name_);
    }
    position_ += n;
    // Skip what was written; a short write leaves the rest of one piece.
    auto left = static_cast<size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return Status::OK();
}

}  // namespace ferry::ipc
