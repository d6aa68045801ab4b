// `ferry serve --flight`, in the ferry tool's Flight module (flight_module.cpp holds the other
// Flight commands).
#pragma once

#include <string>

#include "ferry/core/status.hpp"
#include "flight_commands.hpp"

namespace ferry::cli {

/// `ferry serve --flight`: serves the datasets of `options` as flights until SIGINT, SIGTERM
/// (after a drain) or the drain action. Exit status 0, or 2 with one line on stderr naming what
/// was wrong.
int ServeFlights(const ServeOptions& options);

/// The whole of the file at `path` (a token, TLS certificates, a peers file), or an error naming
/// it as the `what`.
Result<std::string> ReadWholeFile(const std::string& path, const char* what);

}  // namespace ferry::cli
