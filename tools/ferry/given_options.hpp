// Which options a subcommand's command line gave, so that a command can refuse, by name, an
// option that would do nothing in the mode it runs in (a Flight option without --flight, a
// Flight client's option with a shm:// URI, ...) instead of ignoring it.
#pragma once

#include <CLI/CLI.hpp>
#include <initializer_list>
#include <set>
#include <string>

namespace ferry::cli {

/// The long names ("--columns") of the options given on a subcommand's command line.
using Given = std::set<std::string>;

/// The options `cmd`'s command line gave, by long name (a short alias counts as its long name).
Given GivenOptions(const CLI::App& cmd);

/// An option that a command does not honour in the mode it runs in, and why.
struct Unhonoured {
  const char* option;
  std::string why;
};

/// The first of `options` that `given` holds, refused: "ferry: OPTION: WHY" on stderr and the
/// exit status 2. Returns 0 when none of them was given.
int RefuseGiven(const Given& given, std::initializer_list<Unhonoured> options);

}  // namespace ferry::cli
