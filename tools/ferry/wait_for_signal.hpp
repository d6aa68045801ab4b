// How a serving `ferry` process waits for the signal that stops it, or (with --config) reloads it.
#pragma once

namespace ferry::cli {

/// Block until SIGINT or SIGTERM arrives, in any thread. The handlers write to a pipe this reads,
/// so the wait sets no timer and costs nothing until then. Returns at once, with a message on
/// stderr, if no pipe can be made.
void WaitForSignal();

/// What ended a WaitForStopOrReload.
enum class Awoken { kStop, kReload };

/// Like WaitForSignal, and also returns kReload on SIGHUP, which no longer ends the process once
/// this or CatchReload is first called.
Awoken WaitForStopOrReload();

/// Catch SIGINT, SIGTERM and SIGHUP from now on, for a WaitForStopOrReload to come: a server
/// calls it before it tells clients where it listens, so that no SIGHUP finds the default action
/// (the end of the process) in place.
void CatchReload();

}  // namespace ferry::cli
