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

// The pipe SIGINT's and SIGTERM's handler writes to; WaitForSignal reads it.
int g_stop[2] = {-1, -1};

void OnSignal(int /*sig*/) {
  const char byte = 1;
  [[maybe_unused]] const ssize_t w = write(g_stop[1], &byte, 1);
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
  char byte = 0;
  while (read(g_stop[0], &byte, 1) < 0 && errno == EINTR) {
  }
}

}  // namespace ferry::cli
