// Where `ferry get --to` writes a regular file: whole, or not at all.
#pragma once

#include <memory>
#include <string>

#include "ferry/core/result.hpp"
#include "ferry/ipc/sink.hpp"

namespace ferry::cli {

/// A file written out of sight and put in place when complete. Preferably an unnamed file
/// (O_TMPFILE) in the target's directory, linked to its name by Commit, so that a process killed
/// at any point (SIGKILL included) leaves nothing behind. Where the filesystem has no O_TMPFILE,
/// a hidden `.NAME.ferry-PID.partial` beside the target, renamed into place by Commit: then
/// SIGKILL leaves that file (a caught signal or a failure removes it). Destroyed before Commit,
/// it leaves nothing. Owns its descriptor.
class OutputFile {
 public:
  /// Start writing what will be `path`. With `replace`, Commit replaces an existing file (linked
  /// to a hidden name first, then renamed over it); without, Commit fails if `path` exists.
  static Result<std::unique_ptr<OutputFile>> Create(const std::string& path, bool replace);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// What the IPC writer writes to.
  ipc::FileSink* sink() { return sink_.get(); }
  /// The `.partial` file's path where the fallback is in use, else "" (an unnamed file).
  const std::string& partial() const { return partial_; }
  /// Close the file and give it its name: errors name the path.
  [[nodiscard]] Status Commit();

 private:
  OutputFile() = default;
  std::string path_;
  std::string partial_;
  bool replace_ = false;
  int fd_ = -1;  // the unnamed file's descriptor; -1 with the fallback
  std::unique_ptr<ipc::FileSink> sink_;
};

}  // namespace ferry::cli
