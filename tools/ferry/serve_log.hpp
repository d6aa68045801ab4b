// How `ferry serve` logs: --log-format text (the servers' lines with -v, and the command's own
// lines, "ferry serve: ..." on stderr) or json (every record of the servers and of the command,
// one JSON object a line on stderr: ferry/core/log.hpp).
#pragma once

#include <string>

#include "ferry/core/log.hpp"

namespace ferry::cli {

/// The log of one `ferry serve`. Plain values; copyable.
struct ServeLog {
  /// --log-format json.
  bool json = false;
  /// -v: the text format tells the servers' lines too.
  bool verbose = false;

  /// For the servers' options: the structured sink (json), else none.
  LogSink sink() const;
  /// For the servers' options: the text lines (text with -v), else none.
  LogLines lines() const;
  /// One line of the command's own (a dataset served, the summary at the end), with `event`.
  void Tell(const char* event, const std::string& message) const;
};

/// Whether `format` is one --log-format takes ("text" or "json").
bool IsLogFormat(const std::string& format);

}  // namespace ferry::cli
