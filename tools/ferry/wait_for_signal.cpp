// How a serving `ferry` process waits for the signal that stops it, or reloads it.
#include "wait_for_signal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace ferry::cli {

namespace {

// The pipe the handlers (and RequestStop) write to; WaitForSignal reads it. Each writes one
// byte: the signal's number, or 0.
int g_stop[2] = {-1, -1};
// Stop signals caught so far: the second one ends the process.
std::atomic<int> g_stops{0};

void OnSignal(int sig) {
  if (sig != SIGHUP && g_stops.fetch_add(1) > 0) _exit(128 + sig);
  const char byte = static_cast<char>(sig);
  [[maybe_unused]] const ssize_t w = write(g_stop[1], &byte, 1);
}

}  // namespace

bool CatchStopSignals() {
  static std::once_flag once;
  static bool caught = false;
  std::call_once(once, [] {
    if (pipe2(g_stop, O_CLOEXEC) != 0) {
      std::fprintf(stderr, "ferry: cannot wait for a signal: %s\n", std::strerror(errno));
      return;
    }
    caught = true;
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
  });
  return caught;
}

void CatchReload() {
  if (CatchStopSignals()) std::signal(SIGHUP, OnSignal);
}

int WaitForSignal() {
  if (!CatchStopSignals()) return SIGTERM;
  char byte = 0;
  while (read(g_stop[0], &byte, 1) < 0 && errno == EINTR) {
  }
  return static_cast<unsigned char>(byte);
}

void RequestStop() {
  // Not counted as a signal: a SIGTERM after a drain asked for over the network (a service
  // manager stopping the process the drain was for) is a first signal, and waits for the drain.
  if (!CatchStopSignals()) return;
  const char byte = 0;
  [[maybe_unused]] const ssize_t w = write(g_stop[1], &byte, 1);
}

}  // namespace ferry::cli
