// systemd's readiness protocol for `ferry serve` (notify.hpp), through libsystemd.
#include "notify.hpp"

#include <systemd/sd-daemon.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
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

}  // namespace

void Notify(const char* state) { (void)sd_notify(0, state); }

void StartWatchdog() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
  Watchdog& w = TheWatchdog();
  std::lock_guard lock(w.mutex);
  if (w.thread.joinable()) return;
  w.stop = false;
  const auto period = std::chrono::microseconds(usec / 2);
  w.thread = std::thread([&w, period] {
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
