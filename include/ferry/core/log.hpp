// Structured log records: what a server tells its operator, with the fields a log pipeline
// filters on (level, event, session, peer, plane, trace). Servers hand records to a LogSink;
// `ferry serve --log-format json` writes each as one JSON object a line, the text format its
// message.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "ferry/abi/export.h"

namespace ferry {

/// How much a record matters. kDebug records (one per call and per session) go only to a
/// structured sink; the text log (a `log` line callback) gets kInfo and above.
enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

/// "debug", "info", "warning" or "error".
FERRY_EXPORT const char* LogLevelName(LogLevel level);

/// One thing a server tells. Plain values; empty fields are unknown and left out of the JSON.
struct FERRY_EXPORT LogRecord {
  LogLevel level = LogLevel::kInfo;
  /// A short, stable snake_case name of what happened ("session_end", "flight_call"), for
  /// filters and alerts; the message may change between versions, the event does not.
  std::string event;
  /// The line a person reads: the text log prints it as it is.
  std::string message;
  /// The session's id on its plane's server (a Dissociated IPC client connection).
  std::string session;
  /// Who is at the other end: "pid N" (shared memory), "host:port" (UCX), gRPC's peer text.
  std::string peer;
  /// "shm", "ucx" or "grpc".
  std::string plane;
  /// W3C Trace Context ids (lowercase hex) when a trace is known: the trace, and this server's
  /// span of it (a Flight call's, or a session's).
  std::string trace_id;
  std::string span_id;
};

/// Where records go: called from any thread, once per record; must not block for long.
using LogSink = std::function<void(const LogRecord&)>;
/// The text log of earlier releases: one line per record (its message).
using LogLines = std::function<void(const std::string&)>;

/// Hand `record` to `sink` when it is set; else its message to `lines` when it is set and the
/// record is kInfo or above. What servers call to log. Cost: the callbacks'.
FERRY_EXPORT void EmitLog(const LogSink& sink, const LogLines& lines, const LogRecord& record);

/// `record` as one JSON object, no newline: "time" (`time` as RFC 3339 UTC with microseconds,
/// e.g. 2026-11-28T08:35:16.123456Z), "level", "event", "message", then each of "session",
/// "peer", "plane", "trace_id" and "span_id" that is not empty. Strings are escaped as JSON
/// wants (invalid UTF-8 replaced), so every line parses.
FERRY_EXPORT std::string LogRecordJson(const LogRecord& record,
                                       std::chrono::system_clock::time_point time);

/// A sink that writes each record as LogRecordJson, now, and a newline on stderr, whole lines
/// only (one write each), so that threads never interleave inside a line.
FERRY_EXPORT LogSink JsonStderrSink();

}  // namespace ferry
