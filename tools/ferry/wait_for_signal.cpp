// How a serving `ferry` process waits for the signal that stops it, or reloads it.
#include "wait_for_signal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace ferry::cli {

namespace {

// The pipe the handlers write the signal's number to; the waits read it.
int g_stop[2] = {-1, -1};

void OnSignal(int sig) {
  const char byte = static_cast<char>(sig);
  [[maybe_unused]] const ssize_t w = write(g_stop[1], &byte, 1);
}

// The next signal caught.
int NextSignal() {
  char byte = 0;
  while (read(g_stop[0], &byte, 1) < 0 && errno == EINTR) {
  }
  return byte;
}

}  // namespace

bool CatchStopSignals() {
  if (g_stop[0] >= 0) return true;
  if (pipe2(g_stop, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "ferry: cannot wait for a signal: %s\n", std::strerror(errno));
    return false;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  return true;
}

void WaitForSignal() {
  if (!CatchStopSignals()) return;
  (void)NextSignal();
}

void CatchReload() {
  if (CatchStopSignals()) std::signal(SIGHUP, OnSignal);
}

Awoken WaitForStopOrReload() {
  if (!CatchStopSignals()) return Awoken::kStop;
  CatchReload();
  return NextSignal() == SIGHUP ? Awoken::kReload : Awoken::kStop;
}

}  // namespace ferry::cli
