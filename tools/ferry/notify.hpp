// systemd's readiness protocol (sd_notify(3), through libsystemd) for `ferry serve`: READY=1 once
// it listens, STOPPING=1 when it drains or stops, and WATCHDOG=1 pings while the unit sets
// WatchdogSec. libsystemd.so.0 is loaded (dlopen) only when NOTIFY_SOCKET is set, so the tool
// does not depend on it; outside systemd, or without the library, each call does nothing.
#pragma once

namespace ferry::cli {

/// Send `state` ("READY=1", "STOPPING=1", ...) to the service manager, if NOTIFY_SOCKET names
/// one; errors are ignored (a manager that went away cannot be told). One datagram.
void Notify(const char* state);

/// When the service manager asks for watchdog pings (WATCHDOG_USEC, sd_watchdog_enabled), start a
/// thread that sends WATCHDOG=1 at half that interval until StopWatchdog; otherwise nothing. The
/// thread sleeps on a condition variable between pings.
void StartWatchdog();
void StopWatchdog();

}  // namespace ferry::cli
