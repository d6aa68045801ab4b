// Mapping: mmap, mremap, madvise and munmap in one place (include/ferry/core/mapping.hpp).
#include "ferry/core/mapping.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace ferry {

namespace {

int Protection(MapAccess access) {
  switch (access) {
    case MapAccess::kNone:
      return PROT_NONE;
    case MapAccess::kRead:
      return PROT_READ;
    case MapAccess::kReadWrite:
      return PROT_READ | PROT_WRITE;
  }
  return PROT_NONE;
}

int Flags(const MappingOptions& options) {
  return (options.shared ? MAP_SHARED : MAP_PRIVATE) | (options.populate ? MAP_POPULATE : 0);
}

Status Refused(int err, const std::string& what) { return Status::FromErrno(err, what); }

}  // namespace

Result<Mapping> Mapping::Anonymous(int64_t size, MappingOptions options) {
  if (size < 0)
    return Status::Invalid("a mapping of a negative size (" + std::to_string(size) + ")");
  if (size == 0) return Mapping();
  void* p = mmap(nullptr, static_cast<size_t>(size), Protection(options.access),
                 Flags(options) | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Refused(errno, "cannot map " + std::to_string(size) + " bytes of memory");
  }
  Mapping m(p, size);
  if (options.huge_pages) (void)m.Advise(MADV_HUGEPAGE);
  return m;
}

Result<Mapping> Mapping::OfFile(int fd, int64_t size, MappingOptions options, const char* what) {
  if (size < 0)
    return Status::Invalid("a mapping of a negative size (" + std::to_string(size) + ")");
  if (size == 0) return Mapping();
  void* p =
      mmap(nullptr, static_cast<size_t>(size), Protection(options.access), Flags(options), fd, 0);
  if (p == MAP_FAILED) {
    return Refused(errno, std::string("cannot map ") + std::to_string(size) + " bytes of " + what);
  }
  Mapping m(p, size);
  if (options.huge_pages) (void)m.Advise(MADV_HUGEPAGE);
  return m;
}

Mapping::Mapping(Mapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    Mapping old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Mapping::~Mapping() {
  if (data_ != nullptr) munmap(data_, static_cast<size_t>(size_));
}

Status Mapping::Resize(int64_t size, MappingOptions options) {
  if (size < 0)
    return Status::Invalid("a mapping of a negative size (" + std::to_string(size) + ")");
  if (data_ == nullptr) {
    FERRY_ASSIGN_OR_RAISE(*this, Anonymous(size, options));
    return Status::OK();
  }
  if (size == 0) {
    *this = Mapping();
    return Status::OK();
  }
  void* p = mremap(data_, static_cast<size_t>(size_), static_cast<size_t>(size), MREMAP_MAYMOVE);
  if (p == MAP_FAILED) {
    return Refused(errno, "cannot grow a mapping from " + std::to_string(size_) + " to " +
                              std::to_string(size) + " bytes");
  }
  data_ = p;
  size_ = size;
  if (options.huge_pages) (void)Advise(MADV_HUGEPAGE);
  return Status::OK();
}

Status Mapping::Advise(int advice) const {
  if (data_ == nullptr) return Status::OK();
  if (madvise(data_, static_cast<size_t>(size_), advice) != 0) {
    return Status::FromErrno(errno, "madvise");
  }
  return Status::OK();
}

void* Mapping::Release() && noexcept {
  size_ = 0;
  return std::exchange(data_, nullptr);
}

}  // namespace ferry
