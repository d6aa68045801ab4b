// systemd's readiness protocol for `ferry serve` (notify.hpp), through libsystemd.
#include "notify.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <systemd/sd-daemon.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace ferry::cli {

namespace {

// The watchdog's thread and what ends it.
struct Watchdog {
  std::mutex mutex;
  std::condition_variable stop_changed;
  bool stop = false;
  std::thread thread;
};

Watchdog& TheWatchdog() {
  static Watchdog watchdog;
  return watchdog;
}

// libsystemd's two functions, loaded when the service manager gave a socket: a process that
// runs outside systemd (the wheel's, a container's) neither needs nor loads the library.
struct Systemd {
  decltype(&sd_notify) notify = nullptr;
  decltype(&sd_watchdog_enabled) watchdog_enabled = nullptr;
};

const Systemd& TheSystemd() {
  static const Systemd systemd = [] {
    Systemd s;
    if (std::getenv("NOTIFY_SOCKET") == nullptr) return s;
    void* handle = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return s;
    s.notify = reinterpret_cast<decltype(&sd_notify)>(dlsym(handle, "sd_notify"));
    s.watchdog_enabled =
        reinterpret_cast<decltype(&sd_watchdog_enabled)>(dlsym(handle, "sd_watchdog_enabled"));
    return s;
  }();
  return systemd;
}

}  // namespace

void Notify(const char* state) {
  if (const Systemd& s = TheSystemd(); s.notify != nullptr) (void)s.notify(0, state);
}

void StartWatchdog() {
  const Systemd& s = TheSystemd();
  uint64_t usec = 0;
  if (s.watchdog_enabled == nullptr || s.watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
  Watchdog& w = TheWatchdog();
  std::lock_guard lock(w.mutex);
  if (w.thread.joinable()) return;
  w.stop = false;
  const auto period = std::chrono::microseconds(usec / 2);
  w.thread = std::thread([&w, period] {
    pthread_setname_np(pthread_self(), "ferry-watchdog");  // for top, perf and tests
    std::unique_lock held(w.mutex);
    while (!w.stop) {
      held.unlock();
      Notify("WATCHDOG=1");
      held.lock();
      w.stop_changed.wait_for(held, period, [&] { return w.stop; });
    }
  });
}

void StopWatchdog() {
  Watchdog& w = TheWatchdog();
  std::thread thread;
  {
    std::lock_guard lock(w.mutex);
    w.stop = true;
    thread = std::move(w.thread);
  }
  w.stop_changed.notify_all();
  if (thread.joinable()) thread.join();
}

}  // namespace ferry::cli
