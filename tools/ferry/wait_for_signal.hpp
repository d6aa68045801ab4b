// How a serving `ferry` process waits for the signal that stops it, or (with --config) reloads it.
#pragma once

namespace ferry::cli {

/// Catch SIGINT and SIGTERM from now on: their handlers write to a pipe WaitForSignal reads.
/// A server calls it before it prints where it listens, so a client that reads that line and
/// signals the server at once finds the handlers in place. Idempotent and thread-safe; false,
/// with a message on stderr, if no pipe can be made (the signals then keep their default action).
bool CatchStopSignals();

/// Catch SIGHUP too from now on (it then no longer ends the process): WaitForSignal returns it.
/// Called, like CatchStopSignals, before the server prints where it listens.
void CatchReload();

/// Block until SIGINT or SIGTERM arrives, in any thread, SIGHUP once CatchReload was called, or
/// RequestStop is called (CatchStopSignals first, if not yet called): the signal's number, or 0
/// for RequestStop. The wait sets no timer and costs nothing until then. From the first SIGINT or
/// SIGTERM on, a second one ends the process at once (exit status 128 + the signal): how an
/// operator cuts a drain short. Returns SIGTERM at once if the signals cannot be caught.
int WaitForSignal();

/// Make WaitForSignal return 0 as if a signal had come (a drain asked for over the network), from
/// any thread but a signal handler. It does not count as the first signal: only a second signal
/// ends the process at once.
void RequestStop();

}  // namespace ferry::cli
