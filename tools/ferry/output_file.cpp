// `ferry get --to`'s output file (output_file.hpp): O_TMPFILE and linkat, or a `.partial` file
// renamed into place.
#include "output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace ferry::cli {

namespace {

// The directory part of `path` ("dir/" or ""), and its name.
std::pair<std::string, std::string> Split(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash + 1), path.substr(slash + 1)};
}

}  // namespace

Result<std::unique_ptr<OutputFile>> OutputFile::Create(const std::string& path, bool replace) {
  std::unique_ptr<OutputFile> out(new OutputFile());
  out->path_ = path;
  out->replace_ = replace;
  const auto [dir, base] = Split(path);
  // An unnamed file in the target's directory (the same filesystem, so that it can be linked
  // there). Any failure (a filesystem without O_TMPFILE says EOPNOTSUPP, an old kernel EISDIR)
  // falls back to the named file, whose own error then says what is wrong with the directory.
  const std::string where = dir.empty() ? "." : dir;
  const int fd = open(where.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (fd >= 0) {
    out->fd_ = fd;
    out->sink_ = ipc::FileSink::FromFd(fd, /*owned=*/false);
    return out;
  }
  out->partial_ = dir + "." + base + ".ferry-" + std::to_string(getpid()) + ".partial";
  FERRY_ASSIGN_OR_RAISE(out->sink_, ipc::FileSink::Open(out->partial_));
  return out;
}

OutputFile::~OutputFile() {
  sink_.reset();
  if (fd_ >= 0) close(fd_);  // an unnamed file never linked: the kernel frees it
  if (!partial_.empty()) unlink(partial_.c_str());
}

Status OutputFile::Commit() {
  FERRY_RETURN_NOT_OK(sink_->Close());
  if (fd_ < 0) {
    if (std::rename(partial_.c_str(), path_.c_str()) != 0) {
      return Status::FromErrno(errno, "cannot rename the finished file into place");
    }
    partial_.clear();
    return Status::OK();
  }
  // linkat through /proc: AT_EMPTY_PATH on the descriptor itself would need CAP_DAC_READ_SEARCH.
  const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
  std::string target = path_;
  if (replace_) {
    // link(2) never replaces: link to a hidden name, then rename over the old file.
    const auto [dir, base] = Split(path_);
    target = dir + "." + base + ".ferry-" + std::to_string(getpid()) + ".new";
  }
  if (linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, target.c_str(), AT_SYMLINK_FOLLOW) != 0) {
    return Status::FromErrno(errno, "cannot link the finished file into place");
  }
  if (replace_ && std::rename(target.c_str(), path_.c_str()) != 0) {
    Status st = Status::FromErrno(errno, "cannot rename the finished file into place");
    unlink(target.c_str());
    return st;
  }
  close(fd_);
  fd_ = -1;
  return Status::OK();
}

}  // namespace ferry::cli
