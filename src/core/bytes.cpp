// SharedBytes: borrowed, copied, gathered and memory-mapped bytes.
#include "ferry/core/bytes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ferry/core/host_buffer.hpp"
#include "ferry/core/mapping.hpp"

namespace ferry {

SharedBytes SharedBytes::Borrow(ByteSpan bytes) {
  return SharedBytes{bytes.data, bytes.size, nullptr};
}

Result<SharedBytes> SharedBytes::Copy(ByteSpan bytes) {
  if (bytes.size < 0) {
    return Status::Invalid("SharedBytes::Copy: negative size " + std::to_string(bytes.size));
  }
  auto buffer = std::make_shared<HostBuffer>();
  FERRY_RETURN_NOT_OK(buffer->Append(bytes));
  const uint8_t* p = buffer->data();
  return SharedBytes{p, bytes.size, std::move(buffer)};
}

Result<SharedBytes> SharedBytes::Gather(std::span<const ByteSpan> pieces) {
  int64_t total = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const ByteSpan& p = pieces[i];
    if (p.size < 0 || (p.size > 0 && p.data == nullptr)) {
      return Status::Invalid("piece " + std::to_string(i) + " is NULL or has a negative size");
    }
    total += p.size;
  }
  auto buffer = std::make_shared<HostBuffer>();
  FERRY_RETURN_NOT_OK(buffer->Reserve(total));
  for (const ByteSpan& p : pieces) FERRY_RETURN_NOT_OK(buffer->Append(p));
  const uint8_t* data = buffer->data();
  return SharedBytes{data, total, std::move(buffer)};
}

Result<SharedBytes> SharedBytes::MapFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::FromErrno(errno, "cannot open \"" + path + "\"");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return Status::FromErrno(err, "cannot stat \"" + path + "\"");
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Status::Invalid("\"" + path + "\" is not a regular file");
  }
  Result<Mapping> mapped =
      Mapping::OfFile(fd, st.st_size, {.access = MapAccess::kRead}, "the file");
  close(fd);
  if (!mapped.ok()) return mapped.status().WithContext("\"" + path + "\"");
  auto mapping = std::make_shared<Mapping>(std::move(*mapped));
  const uint8_t* data = mapping->data();
  return SharedBytes{data, static_cast<int64_t>(st.st_size), std::move(mapping)};
}

}  // namespace ferry
