// The segments a server shared with a shared-memory client: checked, mapped read-only, and
// looked up for type-1 bodies.
#include "transport/shm_segments.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "ferry/core/hex.hpp"
#include "ferry/core/host_buffer.hpp"
#include "transport/shm_common.hpp"

namespace ferry::transport::internal::shm {

Status Segments::Map(uint64_t index, uint64_t length, bool file, int fd) {
  struct Closer {
    int f;
    ~Closer() { close(f); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0)
    return Status::FromErrno(errno, "fstat of segment " + std::to_string(index));
  if (length == 0 || length > static_cast<uint64_t>(st.st_size) || length > kOffsetMask) {
    return Status::Invalid("segment " + std::to_string(index) + " claims " +
                           std::to_string(length) + " bytes but holds " +
                           std::to_string(st.st_size));
  }
  // A served file cannot be sealed: it must at least be a plain file (docs/dipc.md names
  // the limit: a file truncated while served faults its readers).
  if (file && !S_ISREG(st.st_mode)) {
    return Status::Invalid("file segment " + std::to_string(index) + " is not a regular file");
  }
  const int got = fcntl(fd, F_GET_SEALS);  // a plain file has none (EINVAL)
  const int seals = file ? F_SEAL_SHRINK : got;
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return Status::Invalid("segment " + std::to_string(index) + " is not sealed against shrinking");
  }
  // A segment the client maps read-only; arrays over it hold it through SharedBytes owners.
  // Huge pages as the server asked for them, so that its 2 MiB pages map whole here.
  const auto size = static_cast<int64_t>(length);
  const bool huge = !file && SegmentHugePages(size);
  Result<Mapping> pages =
      Mapping::OfFile(fd, size, {.access = MapAccess::kRead, .shared = true, .huge_pages = huge},
                      "a shared segment");
  if (!pages.ok()) return pages.status().WithContext("segment " + std::to_string(index));
  auto m = std::make_shared<const Mapping>(std::move(*pages));
  // Mapped ahead: a segment that never changes (sealed against writes), in 4 KiB pages. Where
  // the kernel gives it 2 MiB ones, its reads fault 512x less, and a thread mapping ahead would
  // only take a core from them.
  const bool sealed = got >= 0 && (got & F_SEAL_WRITE) != 0;
  const bool ahead = sealed && !(huge && ShmemHugePagesGiven(ShmemHugePages()));
  std::lock_guard lock(mutex_);
  mapped_[index] = Mapped{std::move(m), ahead};
  return Status::OK();
}

Status Segments::Fetch(std::span<const BufferRef> refs, FetchedBody* body) const {
  FetchedBody& out = *body;
  out.bytes = {};
  out.borrowed = false;
  out.buffers.clear();
  out.buffers.reserve(refs.size());
  std::vector<std::shared_ptr<const Mapping>> of;  // each ref's segment, only when they differ
  {
    std::lock_guard lock(mutex_);
    bool mixed = false;
    // A batch's buffers are nearly always in one segment: each is looked up once in a row, and
    // told apart by index (a mapping's owner is copied once, below, not per buffer).
    uint64_t first_index = 0;
    uint64_t last_index = 0;
    const Mapped* last = nullptr;
    for (size_t i = 0; i < refs.size(); ++i) {
      const uint64_t index = refs[i].address >> kShmOffsetBits;
      const uint64_t offset = refs[i].address & kOffsetMask;
      if (last == nullptr || index != last_index) {
        auto it = mapped_.find(index);
        if (it == mapped_.end()) {
          return Status::Invalid("buffer " + std::to_string(i) + " (address " +
                                 Hex(refs[i].address) + ") names segment " + std::to_string(index) +
                                 ", which the server never shared");
        }
        last_index = index;
        last = &it->second;
      }
      const Mapping& segment = *last->pages;
      uint64_t end = 0;
      if (__builtin_add_overflow(offset, refs[i].length, &end) ||
          end > static_cast<uint64_t>(segment.size())) {
        return Status::Invalid(
            "buffer " + std::to_string(i) + " (offset " + std::to_string(offset) + ", length " +
            std::to_string(refs[i].length) + ") lies outside segment " + std::to_string(index) +
            " of " + std::to_string(segment.size()) + " bytes");
      }
      if (i == 0) first_index = index;
      mixed = mixed || index != first_index;
      out.buffers.push_back(BufferRef{offset, refs[i].length});
    }
    if (refs.empty()) return Status::OK();
    if (!mixed) {
      // In place: the bytes are the whole segment (the last looked up is every ref's), and the
      // arrays keep the mapping.
      const std::shared_ptr<const Mapping>& only = last->pages;
      if (last->ahead) {
        uint64_t end = 0;
        for (const BufferRef& b : out.buffers) end = std::max(end, b.address + b.length);
        ahead_.Note(only, end);
      }
      out.bytes = SharedBytes{only->data(), only->size(), only};
      out.borrowed = true;
      return Status::OK();
    }
    of.reserve(refs.size());
    for (const BufferRef& r : refs) {
      of.push_back(mapped_.find(r.address >> kShmOffsetBits)->second.pages);
    }
  }
  // Buffers in several segments: gather them (one copy) so they share one base.
  auto local = std::make_shared<HostBuffer>();
  for (size_t i = 0; i < refs.size(); ++i) {
    const int64_t at = (local->size() + 7) / 8 * 8;
    FERRY_RETURN_NOT_OK(local->Resize(at));
    FERRY_RETURN_NOT_OK(local->Append(
        {of[i]->data() + out.buffers[i].address, static_cast<int64_t>(out.buffers[i].length)}));
    out.buffers[i].address = static_cast<uint64_t>(at);
  }
  out.bytes = SharedBytes{local->data(), local->size(), local};
  out.borrowed = false;
  return Status::OK();
}

}  // namespace ferry::transport::internal::shm
