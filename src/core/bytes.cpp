// SharedBytes: borrowed, copied, gathered and memory-mapped bytes.
#include "ferry/core/bytes.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ferry/core/host_buffer.hpp"

namespace ferry {

namespace {

struct Mapping {
  void* address = nullptr;
  size_t length = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (address != nullptr) munmap(address, length);
  }
};

}  // namespace

SharedBytes SharedBytes::Borrow(const void* data, int64_t size) {
  return SharedBytes{static_cast<const uint8_t*>(data), size, nullptr};
}

Result<SharedBytes> SharedBytes::Copy(const void* data, int64_t size) {
  if (size < 0) return Status::Invalid("SharedBytes::Copy: negative size " + std::to_string(size));
  auto buffer = std::make_shared<HostBuffer>();
  FERRY_RETURN_NOT_OK(buffer->Append(data, size));
  const uint8_t* p = buffer->data();
  return SharedBytes{p, size, std::move(buffer)};
}

Result<SharedBytes> SharedBytes::Gather(const ByteSpan* pieces, size_t count) {
  int64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    const ByteSpan& p = pieces[i];
    if (p.size < 0 || (p.size > 0 && p.data == nullptr)) {
      return Status::Invalid("piece " + std::to_string(i) + " is NULL or has a negative size");
    }
    total += p.size;
  }
  auto buffer = std::make_shared<HostBuffer>();
  FERRY_RETURN_NOT_OK(buffer->Reserve(total));
  for (size_t i = 0; i < count; ++i) {
    FERRY_RETURN_NOT_OK(buffer->Append(pieces[i].data, pieces[i].size));
  }
  const uint8_t* data = buffer->data();
  return SharedBytes{data, total, std::move(buffer)};
}

Result<SharedBytes> SharedBytes::MapFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Status(err == ENOENT ? ENOENT : EIO,
                  "cannot open \"" + path + "\": " + std::strerror(err));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return Status::IOError("cannot stat \"" + path + "\": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Status::Invalid("\"" + path + "\" is not a regular file");
  }
  auto mapping = std::make_shared<Mapping>();
  if (st.st_size > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      close(fd);
      return Status::IOError("cannot map \"" + path + "\": " + std::strerror(err));
    }
    mapping->address = p;
    mapping->length = static_cast<size_t>(st.st_size);
  }
  close(fd);
  const auto* data = static_cast<const uint8_t*>(mapping->address);
  return SharedBytes{data, static_cast<int64_t>(st.st_size), std::move(mapping)};
}

}  // namespace ferry
