// `ferry demo`: the end-to-end job of the README.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ferry/format/array.hpp"

namespace ferry::cli {

/// Options of `ferry demo`.
struct DemoOptions {
  /// Rows in the generated table.
  int64_t rows = 100000;
  /// MiB moved by each timed process-to-process transfer (after a warm-up).
  int64_t transfer_mib = 512;
  /// Let the `ferry serve` and `ferry get` child processes log to stderr.
  bool verbose = false;
};

/// One line of the demo's closing summary table. Empty cells print as "-".
struct DemoRow {
  std::string step;
  /// Bytes the step moved or checked (-1: not applicable).
  int64_t bytes = -1;
  /// Process start-up, shown apart from the timed work (empty: no process started).
  std::string startup;
  /// Seconds of the timed work (< 0: not timed).
  double seconds = -1;
  /// "identical", "OK", "skipped: <why>", "FAILED: <why>".
  std::string result;
};

/// Build a table of every type, pass it through the C data interface, validate it fully, send
/// it to every device and process path, and print one summary table. Returns the exit code.
int RunDemo(const DemoOptions& options);

/// Serve `table` from a `ferry serve` process to `ferry get` processes over every transport and
/// body type this build has: a warm-up that checks what arrives value by value, then a timed
/// transfer of at least `options.transfer_mib` MiB. Appends one row per path; returns the exit
/// code.
int ProcessTransfers(const Array& table, const DemoOptions& options, std::vector<DemoRow>* rows);

}  // namespace ferry::cli
