// How a serving `ferry` process waits for the signal that stops it.
#include "wait_for_signal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace ferry::cli {

namespace {

// The pipe the handlers write the signal's number to; the waits read it. Made once.
int g_stop[2] = {-1, -1};

void OnSignal(int sig) {
  const char byte = static_cast<char>(sig);
  [[maybe_unused]] const ssize_t w = write(g_stop[1], &byte, 1);
}

// Catch SIGINT, SIGTERM, and SIGHUP with `hup`; false when no pipe can be made.
bool Catch(bool hup) {
  if (g_stop[0] < 0 && pipe2(g_stop, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "ferry: cannot wait for a signal: %s\n", std::strerror(errno));
    return false;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  if (hup) std::signal(SIGHUP, OnSignal);
  return true;
}

// The next signal caught (SIGINT, SIGTERM, and SIGHUP with `hup`); 0 when no pipe can be made.
int WaitForOne(bool hup) {
  if (!Catch(hup)) return 0;
  char byte = 0;
  while (read(g_stop[0], &byte, 1) < 0 && errno == EINTR) {
  }
  return byte;
}

}  // namespace

void WaitForSignal() { (void)WaitForOne(false); }

void CatchReload() { (void)Catch(true); }

Awoken WaitForStopOrReload() {
  return WaitForOne(true) == SIGHUP ? Awoken::kReload : Awoken::kStop;
}

}  // namespace ferry::cli
