// Prometheus' process_* metrics from /proc/self, and the heap in use from the allocator.
#include "process_collector.hpp"

#include <dirent.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace ferry::cli {

namespace {

prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type,
                                double value) {
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return prometheus::MetricFamily{name, help, type, {metric}};
}

double Number(const std::string& text) { return std::strtod(text.c_str(), nullptr); }

// The fields of /proc/self/stat after the command's name (which may hold spaces): field 3 of
// proc(5) is element 0.
std::vector<std::string> StatFields() {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  std::vector<std::string> fields;
  if (close == std::string::npos) return fields;
  std::istringstream rest(text.substr(close + 1));
  std::string f;
  while (rest >> f) fields.push_back(f);
  return fields;
}

// The system's boot time in seconds since the epoch (/proc/stat's btime), or -1.
double BootTime() {
  std::ifstream in("/proc/stat");
  std::string key;
  while (in >> key) {
    if (key == "btime") {
      double t = -1;
      in >> t;
      return t;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

// Open descriptors: the entries of /proc/self/fd, less the one reading it; -1 if unreadable.
int64_t OpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int64_t n = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n - 1;
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  const std::vector<std::string> f = StatFields();
  // proc(5): utime 14, stime 15, starttime 22, vsize 23, rss 24 (1-based; f[0] is field 3).
  if (f.size() > 21) {
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    const double cpu = (Number(f[11]) + Number(f[12])) / ticks;
    out.push_back(Family("process_cpu_seconds_total",
                         "Total user and system CPU time spent in seconds.", MetricType::Counter,
                         cpu));
    out.push_back(Family("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                         MetricType::Gauge, Number(f[20])));
    out.push_back(Family("process_resident_memory_bytes", "Resident memory size in bytes.",
                         MetricType::Gauge, Number(f[21]) * page));
    if (const double boot = BootTime(); boot >= 0) {
      out.push_back(Family("process_start_time_seconds",
                           "Start time of the process since unix epoch in seconds.",
                           MetricType::Gauge, boot + Number(f[19]) / ticks));
    }
  }
  if (const int64_t fds = OpenFds(); fds >= 0) {
    out.push_back(Family("process_open_fds", "Number of open file descriptors.", MetricType::Gauge,
                         static_cast<double>(fds)));
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    out.push_back(Family("process_max_fds", "Maximum number of open file descriptors.",
                         MetricType::Gauge, static_cast<double>(limit.rlim_cur)));
  }
  // The allocator's own count: unlike the resident size, it does not move when the allocator
  // trims or grows its heap's top, nor with the shared region's pages.
  const struct mallinfo2 heap = mallinfo2();
  out.push_back(Family("ferry_heap_in_use_bytes",
                       "Bytes of the C heap in use: allocated chunks of every malloc arena, and "
                       "those allocated with mmap (glibc's mallinfo2).",
                       MetricType::Gauge, static_cast<double>(heap.uordblks + heap.hblkhd)));
  return out;
}

}  // namespace ferry::cli
