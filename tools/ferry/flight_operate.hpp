// Operating a Flight server from the ferry tool's Flight module: `ferry serve --flight`'s wait,
// drain and systemd notifications, and `ferry status`, which reads the server's stats action
// (and sends its drain action).
#pragma once

#include "ferry/flight/client.hpp"
#include "ferry/flight/server.hpp"
#include "flight_commands.hpp"
#include "serve_log.hpp"
#include "serve_reload.hpp"

namespace ferry::cli {

/// Tell systemd the server is ready, wait for SIGINT, SIGTERM or a drain action (reloading the
/// datasets on each SIGHUP in between, through `reloader`), and on SIGTERM or the action drain
/// `server` for at most `options.drain_timeout_s` (STOPPING=1 first), telling `log` each step;
/// the caller then stops it. Its ServerOptions::on_drain must have been set to RequestStop.
void ServeUntilStopped(flight::Server& server, const ServeOptions& options,
                       DatasetReloader& reloader, const ServeLog& log);

/// `ferry status` with a connected `client`: the drain action first with --drain, then the stats
/// action's document printed as a report or (--json) as JSON. Exit status 0, or 2 with one line
/// on stderr.
int ShowStatus(const FlightOptions& options, flight::Client& client);

}  // namespace ferry::cli
