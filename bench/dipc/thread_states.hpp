// The states of a process's threads over a window of the small-batches benchmark: how much of
// it each thread ran on a CPU and how much it waited, runnable, for one (the kernel's
// /proc/PID/task/TID/schedstat, in ns), by thread name. Shows which thread of the server or the
// client sets a case's pace, and whether the two processes and their helpers crowd two cores.
#pragma once

#include <sys/types.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace ferry::bench {

/// One thread's name and its times so far (ns): on a CPU, and runnable but waiting for one.
struct ThreadTimes {
  std::string name;
  int64_t on_cpu_ns = 0;
  int64_t waiting_ns = 0;
};

/// The threads of process `pid` now, by thread id; empty where /proc does not show it (a
/// process gone, or a kernel without schedstat). Costs a few file reads a thread.
inline std::map<int, ThreadTimes> ReadThreadTimes(pid_t pid) {
  std::map<int, ThreadTimes> out;
  std::error_code ec;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& entry : std::filesystem::directory_iterator(tasks, ec)) {
    ThreadTimes t;
    std::ifstream comm(entry.path() / "comm");
    std::ifstream sched(entry.path() / "schedstat");
    if (!std::getline(comm, t.name) || !(sched >> t.on_cpu_ns >> t.waiting_ns)) continue;
    for (char& c : t.name) {
      if (c == '"' || c == '\\' || c < ' ') c = '?';  // printed inside a JSON string
    }
    out[std::stoi(entry.path().filename().string())] = t;
  }
  return out;
}

/// The threads that ran at least half a percent of `window_ns` between `before` and `after`, as
/// a JSON list of {"side", "name", "on_cpu", "waiting"}, the two shares of the window. A thread
/// started within the window counts from zero.
inline std::string ThreadStatesJson(const std::map<int, ThreadTimes>& before,
                                    const std::map<int, ThreadTimes>& after, int64_t window_ns,
                                    const char* side) {
  std::string out;
  for (const auto& [tid, now] : after) {
    const auto then = before.find(tid);
    const int64_t on = now.on_cpu_ns - (then == before.end() ? 0 : then->second.on_cpu_ns);
    const int64_t waited = now.waiting_ns - (then == before.end() ? 0 : then->second.waiting_ns);
    if (window_ns <= 0 || on * 200 < window_ns) continue;
    char entry[256];
    std::snprintf(entry, sizeof(entry),
                  "{\"side\": \"%s\", \"name\": \"%s\", \"on_cpu\": %.3f, \"waiting\": %.3f}", side,
                  now.name.c_str(), static_cast<double>(on) / static_cast<double>(window_ns),
                  static_cast<double>(waited) / static_cast<double>(window_ns));
    out += (out.empty() ? "" : ", ") + std::string(entry);
  }
  return out;
}

}  // namespace ferry::bench
