// `ferry inspect`, `ferry validate`, `ferry cat` and `ferry convert`: the IPC layer on the
// command line.
#pragma once

#include <cstdint>
#include <string>

namespace ferry::cli {

/// Options shared by the IPC subcommands.
struct IpcOptions {
  std::string input;
  std::string output;
  /// Validation level name: none, minimal, default or full.
  std::string validation = "full";
  /// cat: the most rows printed per batch (-1: all), or Arrow integration JSON instead.
  int64_t limit = 20;
  bool json = false;
  /// convert: "stream" or "file", "none", "lz4" or "zstd", 8 or 64, progress on stderr.
  std::string format = "stream";
  std::string compression = "none";
  int32_t alignment = 8;
  bool progress = false;
  /// convert: a dictionary that grows by appending goes as a delta, not a replacement
  /// (ipc::WriteOptions::emit_dictionary_deltas).
  bool emit_dictionary_deltas = false;
};

/// List the messages of a stream or file (kinds, sizes, rows) and its schema.
int RunInspect(const IpcOptions& options);
/// Read every batch at the given validation level; exit 0 when all pass, 1 with the error.
int RunValidate(const IpcOptions& options);
/// Print the schema and the rows of every batch as JSON lines, or (json) the whole input as
/// Arrow integration JSON.
int RunCat(const IpcOptions& options);
/// Rewrite a stream or file in another format, compression or alignment.
int RunConvert(const IpcOptions& options);

}  // namespace ferry::cli
