// `ferry serve`'s settings as one table (serve_config.cpp's Keys): each row is one setting's TOML
// key, command-line flag, type, help and default. The table registers the flags on CLI11 (their
// --help), reads a TOML file with toml++ (`--config`, `--check-config`), prints the effective
// configuration and writes the reference that docs/operations.md shows; tests/cli/test_config.py
// checks that the three agree.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "dipc_commands.hpp"
#include "ferry/core/result.hpp"

namespace ferry::cli {

/// Register every row of the table on `serve` (flags, the datasets positional, and --config,
/// --check-config, --config-reference), filling `options`.
void AddServeKeys(CLI::App* serve, ServeOptions* options);

/// `ferry serve` as the command line gave it: --config-reference prints the table (Markdown) and
/// exits 0; --check-config FILE checks FILE, prints the effective configuration (TOML) and exits
/// 0, or 2 with "ferry: FILE:LINE:COLUMN: ..." on stderr; --config FILE reads FILE under the
/// flags given, then serves (RunServe).
int RunServeCommand(ServeOptions options);

/// Read TOML file `path` into `options`: every key of the file, except those whose flag
/// `options->given` holds (the command line overrides them), which are kept as given. The file's
/// keys set to other values than their defaults join `options->given` by flag, so that the
/// modes' refusals see them. Datasets: the file's
/// [datasets], then the command line's NAME=FILE, which replace a file's dataset of that name.
/// Relative paths in the file are taken from the file's directory. An unknown key, a value of
/// another type or out of range, or a dataset whose file does not exist is refused: EINVAL or
/// ENOENT, the message beginning "PATH:LINE:COLUMN: ".
[[nodiscard]] Status LoadServeConfig(const std::string& path, ServeOptions* options);

/// The effective configuration: every key of the table with its value in `options`, as TOML.
std::string FormatServeConfig(const ServeOptions& options);

/// The table as the Markdown reference of docs/operations.md (between its config-reference
/// markers).
std::string ServeConfigReference();

/// The datasets `options` serves: NAME -> FILE (a file, directory or pattern; ExpandFiles).
std::map<std::string, std::string> DatasetMap(const std::vector<std::string>& specs);

/// The keys whose values differ between `a` and `b`, [datasets] left out (what a reload cannot
/// change).
std::vector<std::string> ChangedKeys(const ServeOptions& a, const ServeOptions& b);

}  // namespace ferry::cli
