// `ferry serve`'s log: text lines or JSON records on stderr.
#include "serve_log.hpp"

#include <cstdio>

namespace ferry::cli {

LogSink ServeLog::sink() const { return json ? JsonStderrSink() : LogSink(); }

LogLines ServeLog::lines() const {
  if (json || !verbose) return {};
  return [](const std::string& line) { std::fprintf(stderr, "ferry serve: %s\n", line.c_str()); };
}

void ServeLog::Tell(const char* event, const std::string& message) const {
  if (!json) {
    std::fprintf(stderr, "ferry serve: %s\n", message.c_str());
    return;
  }
  LogRecord r;
  r.event = event;
  r.message = message;
  JsonStderrSink()(r);
}

bool IsLogFormat(const std::string& format) { return format == "text" || format == "json"; }

}  // namespace ferry::cli
