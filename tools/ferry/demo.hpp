// `ferry demo`: the end-to-end job of the README.
#pragma once

#include <cstdint>

#include "ferry/format/array.hpp"

namespace ferry::cli {

/// Options of `ferry demo`.
struct DemoOptions {
  /// Rows in the generated table.
  int64_t rows = 100000;
};

/// Build a table of every type, pass it through the C data interface, validate it fully and
/// print a summary. Returns the process exit code.
int RunDemo(const DemoOptions& options);

/// Serve `table` from a `ferry serve` process to a `ferry get` process over every transport and
/// body type this build has, check what arrives value by value and print each path's throughput.
int ProcessTransfers(const Array& table);

}  // namespace ferry::cli
