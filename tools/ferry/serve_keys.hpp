// `ferry serve`'s settings table: each setting's TOML key, flag, kind, field of ServeOptions,
// checks and help, in one place (serve_keys.cpp). serve_config.cpp drives the flags, the TOML
// file, the effective configuration and the reference from it.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "dipc_commands.hpp"

namespace ferry::cli {

/// How a setting is written, in TOML and on the command line.
enum class Kind {
  kString,    // a TOML string
  kPath,      // a string naming a file; relative ones are taken from the config file's directory
  kBool,      // a TOML boolean; on the command line a flag
  kInt,       // a TOML integer
  kBytes,     // an integer, or a string with a unit suffix ("256MiB"), as the flag takes it
  kSeconds,   // an integer or a float
  kStrings,   // an array of strings; on the command line a repeated flag
  kDatasets,  // the [datasets] table, NAME = "FILE"; on the command line NAME=FILE positionals
};

/// Where a setting lives in ServeOptions.
using Field = std::variant<std::string ServeOptions::*, bool ServeOptions::*, int ServeOptions::*,
                           int64_t ServeOptions::*, double ServeOptions::*,
                           std::vector<std::string> ServeOptions::*>;

/// One setting: its TOML key ("group.name"), its flag (CLI11's name: "--timeout", "-v,--verbose";
/// "datasets" is the positional), how it is written, where it lives, the checks both faces run
/// (a kBytes value is turned into bytes first) and its help. Plain values.
struct Key {
  const char* key;
  const char* flag;
  Kind kind;
  Field field;
  std::vector<CLI::Validator> checks;
  const char* help;
};

/// The table. Its order is --help's, the reference's and the effective configuration's. A new
/// setting of `ferry serve` is one row of it, with its field in ServeOptions. Built once.
const std::vector<Key>& ServeKeys();

}  // namespace ferry::cli
