// IPC files served as they are: mapped once with their descriptor kept, and encoded into
// type-1 pairs that point into the file.
#include "dipc/served_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ferry/core/mapping.hpp"
#include "ferry/dipc/protocol.hpp"
#include "ferry/ipc/sink.hpp"

namespace ferry::dipc::internal {

namespace {

// The mapping and the descriptor it came from, released together.
struct Held {
  Mapping mapping;
  int fd = -1;
  ~Held() {
    if (fd >= 0) close(fd);
  }
};

// One copy of `fd`'s `size` bytes in a memfd sealed against every change; returns the memfd.
Result<int> CopyToSealedMemfd(int fd, int64_t size, const std::string& path) {
  const int memfd = memfd_create("ferry-served-file", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (memfd < 0) return Status::FromErrno(errno, "memfd_create for \"" + path + "\"");
  std::vector<uint8_t> chunk(size_t{4} << 20);
  int64_t done = 0;
  while (done < size) {
    const ssize_t n = pread(fd, chunk.data(), std::min<size_t>(chunk.size(), size - done), done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(memfd);
      return n == 0 ? Status::IOError("\"" + path + "\" shrank while it was copied")
                    : Status::FromErrno(errno, "reading \"" + path + "\"");
    }
    for (ssize_t w = 0; w < n;) {
      const ssize_t m = pwrite(memfd, chunk.data() + w, static_cast<size_t>(n - w), done + w);
      if (m < 0 && errno == EINTR) continue;
      if (m <= 0) {
        close(memfd);
        return Status::FromErrno(errno, "copying into a memfd \"" + path + "\"");
      }
      w += m;
    }
    done += n;
  }
  if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    close(memfd);
    return Status::FromErrno(errno, "sealing the copy of \"" + path + "\"");
  }
  return memfd;
}

// Collects each message with pairs into the lent file; refuses a buffer it cannot point at.
class FileSink final : public ipc::MessageSink {
 public:
  FileSink(Kept* kept, const DatasetFile& file) : kept_(kept), file_(file) {}

  Status WriteMessage(const ipc::EncodedMessage& m) override {
    KeptMessage k;
    k.metadata.assign(m.metadata.begin(), m.metadata.end());
    k.has_body = m.has_body;
    if (m.has_body) {
      std::vector<BufferRef> pairs;
      pairs.reserve(m.buffers.size());
      const auto begin = reinterpret_cast<uintptr_t>(file_.data);
      // Empty buffers point where the first non-empty one does: no address of their own for the
      // client to free (peers free the addresses of the buffers they read).
      int64_t empty_at = 0;
      for (const ipc::BodyBuffer& b : m.buffers) {
        const auto at = reinterpret_cast<uintptr_t>(b.data);
        if (b.length > 0 && at >= begin && at - begin < static_cast<uintptr_t>(file_.size)) {
          empty_at = static_cast<int64_t>(at - begin);
          break;
        }
      }
      for (size_t i = 0; i < m.buffers.size(); ++i) {
        const ipc::BodyBuffer& b = m.buffers[i];
        const auto at = reinterpret_cast<uintptr_t>(b.data);
        int64_t offset = empty_at;
        if (b.length > 0) {
          if (at < begin || at - begin > static_cast<uintptr_t>(file_.size) ||
              static_cast<int64_t>(at - begin) + b.length > file_.size) {
            return Status::Invalid("message " + std::to_string(kept_->messages.size()) +
                                   ", buffer " + std::to_string(i) +
                                   ": the body is not the file's bytes (compressed?)");
          }
          offset = static_cast<int64_t>(at - begin);
          if (offset % 8 != 0) {
            return Status::Invalid("message " + std::to_string(kept_->messages.size()) +
                                   ", buffer " + std::to_string(i) + " is at offset " +
                                   std::to_string(offset) + " of the file, not 8-byte aligned");
          }
        }
        pairs.push_back(
            BufferRef{kept_->region->WireAddress(offset), static_cast<uint64_t>(b.length)});
      }
      k.SetBody(pairs);
      k.body_length = m.body_length;  // counted in body_bytes_sent; not sent whole from here
    }
    kept_->messages.push_back(std::move(k));
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }

 private:
  Kept* kept_;
  const DatasetFile& file_;
};

}  // namespace

bool OnNetworkFilesystem(int fd) {
  struct statfs fs {};
  if (fstatfs(fd, &fs) != 0) return false;
  switch (static_cast<uint64_t>(fs.f_type)) {
    case 0x6969:      // NFS
    case 0x517B:      // SMB
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x65735546:  // FUSE
    case 0x01021997:  // 9P
    case 0x00C36400:  // Ceph
    case 0x5346414F:  // AFS
      return true;
    default:
      return false;
  }
}

Result<DatasetFile> MapServedFile(const std::string& path, bool copy) {
  auto held = std::make_shared<Held>();
  held->fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (held->fd < 0) return Status::FromErrno(errno, "opening \"" + path + "\"");
  struct stat st {};
  if (fstat(held->fd, &st) != 0) return Status::FromErrno(errno, "stat of \"" + path + "\"");
  if (!S_ISREG(st.st_mode)) return Status::Invalid("\"" + path + "\" is not a regular file");
  if (st.st_size == 0) return Status::Invalid("\"" + path + "\" is empty");
  DatasetFile file;
  file.size = st.st_size;
  file.copied = copy || OnNetworkFilesystem(held->fd);
  if (file.copied) {
    FERRY_ASSIGN_OR_RAISE(const int memfd, CopyToSealedMemfd(held->fd, file.size, path));
    close(held->fd);
    held->fd = memfd;
  }
  Result<Mapping> mapped = Mapping::OfFile(
      held->fd, file.size, {.access = MapAccess::kRead, .shared = true}, "the served file");
  if (!mapped.ok()) return mapped.status().WithContext("\"" + path + "\"");
  held->mapping = std::move(*mapped);
  file.fd = held->fd;
  file.data = held->mapping.data();
  file.owner = std::move(held);
  return file;
}

Result<std::shared_ptr<const Kept>> EncodeFromFile(Dataset& dataset, const DatasetFile& file,
                                                   std::shared_ptr<transport::Region> region,
                                                   const ipc::WriteOptions& options) {
  auto kept = std::make_shared<Kept>();
  kept->region = std::move(region);
  FileSink sink(kept.get(), file);
  FERRY_RETURN_NOT_OK(EncodeAll(dataset, &sink, options));
  // Encoding read the pages (validation): let them go from this process. The page cache keeps
  // them for clients; the server's resident memory stays at what it holds itself.
  madvise(const_cast<uint8_t*>(file.data), static_cast<size_t>(file.size), MADV_DONTNEED);
  return std::shared_ptr<const Kept>(std::move(kept));
}

}  // namespace ferry::dipc::internal
