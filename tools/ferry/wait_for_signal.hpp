// How a serving `ferry` process waits for the signal that stops it, or (with --config) reloads it.
#pragma once

namespace ferry::cli {

/// Catch SIGINT and SIGTERM from now on: their handlers write to a pipe WaitForSignal reads.
/// A server calls it before it prints where it listens, so a client that reads that line and
/// signals the server at once finds the handlers in place. Idempotent; false, with a message on
/// stderr, if no pipe can be made (the signals then keep their default action).
bool CatchStopSignals();

/// Block until SIGINT or SIGTERM arrives, in any thread (CatchStopSignals first, if not yet
/// called). The wait sets no timer and costs nothing until then. Returns at once if the signals
/// cannot be caught.
void WaitForSignal();

/// What ended a WaitForStopOrReload.
enum class Awoken { kStop, kReload };

/// Catch SIGHUP too from now on, for WaitForStopOrReload (it then no longer ends the process);
/// called, like CatchStopSignals, before the server prints where it listens.
void CatchReload();

/// Like WaitForSignal, and also returns kReload on SIGHUP (CatchReload first, if not yet called).
Awoken WaitForStopOrReload();

}  // namespace ferry::cli
