// How a serving `ferry` process waits for the signal that stops it.
#pragma once

namespace ferry::cli {

/// Block until SIGINT or SIGTERM arrives, in any thread, or RequestStop is called: the signal's
/// number, or 0 for RequestStop. The handlers write to a pipe this reads, so the wait sets no
/// timer and costs nothing until then. From then on a second SIGINT or SIGTERM ends the process
/// at once (exit status 128 + the signal): how an operator cuts a drain short. Returns SIGTERM at
/// once, with a message on stderr, if no pipe can be made.
int WaitForSignal();

/// Make WaitForSignal return 0 as if a signal had come (a drain asked for over the network), from
/// any thread but a signal handler. It does not count as the first signal: only a second signal
/// ends the process at once.
void RequestStop();

}  // namespace ferry::cli
