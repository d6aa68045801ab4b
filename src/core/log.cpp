// Structured log records and their JSON form.
#include "ferry/core/log.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>

namespace ferry {

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

void EmitLog(const LogSink& sink, const LogLines& lines, const LogRecord& record) {
  if (sink) {
    sink(record);
  } else if (lines && record.level >= LogLevel::kInfo) {
    lines(record.message);
  }
}

std::string LogRecordJson(const LogRecord& record, std::chrono::system_clock::time_point time) {
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  const auto since = duration_cast<microseconds>(time.time_since_epoch()).count();
  auto seconds = static_cast<time_t>(since / 1000000);
  auto micros = static_cast<long>(since % 1000000);
  if (micros < 0) {  // before 1970: the fraction counts up from the earlier second
    micros += 1000000;
    --seconds;
  }
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[40];
  const size_t n = std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(stamp + n, sizeof(stamp) - n, ".%06ldZ", micros);
  nlohmann::ordered_json doc = {{"time", stamp},
                                {"level", LogLevelName(record.level)},
                                {"event", record.event},
                                {"message", record.message}};
  auto add = [&doc](const char* key, const std::string& value) {
    if (!value.empty()) doc[key] = value;
  };
  add("session", record.session);
  add("peer", record.peer);
  add("plane", record.plane);
  add("trace_id", record.trace_id);
  add("span_id", record.span_id);
  return doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

LogSink JsonStderrSink() {
  return [](const LogRecord& record) {
    std::string line = LogRecordJson(record, std::chrono::system_clock::now());
    line += '\n';
    // Whole lines: one writer at a time in this process, and one write call per line where
    // the pipe takes it.
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      const ssize_t w = write(STDERR_FILENO, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;  // stderr is gone: nothing to tell anyone
      p += w;
      left -= static_cast<size_t>(w);
    }
  };
}

}  // namespace ferry
