// Parses: a CLI11 check made from one of the library's name parsers (ipc::ParseCompression,
// dipc::ParseBodyType), so the command line accepts exactly the spellings every other face
// accepts, and refuses the rest with the parser's own message; and the one parser of the
// validation levels `validate` and `get` take.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "ferry/core/result.hpp"
#include "ferry/format/array_view.hpp"

namespace ferry::cli {

/// A CLI11 validator that accepts what `parse` accepts; it parses each value once more when the
/// command runs, which costs nothing worth counting.
template <typename T>
CLI::Validator Parses(Result<T> (*parse)(std::string_view)) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        Result<T> parsed = parse(text);
        return parsed.ok() ? std::string() : parsed.status().message();
      },
      "");
}

/// A validation level by the name its ValidationLevel has (none, minimal, default, full), as
/// `--validation` takes it on every subcommand.
inline Result<ValidationLevel> ParseValidation(std::string_view name) {
  if (name == "none") return ValidationLevel::kNone;
  if (name == "minimal") return ValidationLevel::kMinimal;
  if (name == "default") return ValidationLevel::kDefault;
  if (name == "full") return ValidationLevel::kFull;
  return Status::Invalid("unknown validation level \"" + std::string(name) +
                         "\" (none, minimal, default, full)");
}

}  // namespace ferry::cli
