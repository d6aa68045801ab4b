// ShmRegion's seals: a created segment sealed against writes once written (Seal), and its set of
// seals closed before a client holds it (Shareable). The rest of ShmRegion is in shm_common.hpp.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "transport/shm_common.hpp"

namespace ferry::transport::internal::shm {

Status ShmRegion::Seal() {
  const std::string what = "segment " + std::to_string(index_);
  if (lent()) return Status::Invalid(what + " is a lent file, not the server's to seal");
  std::lock_guard lock(seals_mutex_);
  if (seals_closed_) {
    const int seals = fcntl(fd_, F_GET_SEALS);
    if (seals >= 0 && (seals & F_SEAL_WRITE) != 0) return Status::OK();  // sealed before
    return Status::Invalid(what + " was shared already: seal it before it is shared");
  }
  // The memfd's descriptor is read-write, and so is a mapping made from it, even read-only: a
  // description opened read-only gives a mapping that can never be written.
  const std::string self = "/proc/self/fd/" + std::to_string(fd_);
  const int read_only = open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (read_only < 0) return Status::FromErrno(errno, "reopening " + what + " read-only");
  Result<Mapping> pages = Mapping::OfFile(
      read_only, size_,
      {.access = MapAccess::kRead, .shared = true, .huge_pages = SegmentHugePages(size_)},
      "a sealed segment");
  close(read_only);
  if (!pages.ok()) return pages.status().WithContext(what);
  // The writable mapping goes here, before the seal is asked for.
  pages_ = std::move(*pages);
  data_ = pages_.data();
  if (fcntl(fd_, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    return Status::FromErrno(errno, "sealing " + what + " against writes");
  }
  seals_closed_ = true;
  return Status::OK();
}

Status ShmRegion::Shareable() {
  std::lock_guard lock(seals_mutex_);
  if (seals_closed_) return Status::OK();
  if (fcntl(fd_, F_ADD_SEALS, F_SEAL_SEAL) != 0) {
    return Status::FromErrno(errno, "closing the seals of segment " + std::to_string(index_));
  }
  seals_closed_ = true;
  return Status::OK();
}

}  // namespace ferry::transport::internal::shm
