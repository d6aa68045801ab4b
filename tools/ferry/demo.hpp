// `ferry demo`: the end-to-end job of the README.
#pragma once

#include <cstdint>

namespace ferry::cli {

/// Options of `ferry demo`.
struct DemoOptions {
  /// Rows in the generated table.
  int64_t rows = 100000;
};

/// Build a table of every type, pass it through the C data interface, validate it fully and
/// print a summary. Returns the process exit code.
int RunDemo(const DemoOptions& options);

}  // namespace ferry::cli
