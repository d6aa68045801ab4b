// Structured log records: their JSON form, checked against hand-written lines, and where they
// go (a structured sink, else the text lines).
#include "ferry/core/log.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace ferry {
namespace {

using std::chrono::microseconds;
using std::chrono::seconds;
using std::chrono::system_clock;

// 2026-11-28T08:35:16Z is 1795854916 s after the epoch (date -u -d @1795854916).
const system_clock::time_point kTime =
    system_clock::time_point(seconds(1795854916)) + microseconds(123456);

TEST(LogRecordJson, AFullRecordIsOneObjectInFieldOrder) {
  LogRecord r;
  r.level = LogLevel::kWarning;
  r.event = "session_end";
  r.message = "client pid 7: served 3 messages";
  r.session = "shm-1";
  r.peer = "pid 7";
  r.plane = "shm";
  r.trace_id = "0af7651916cd43dd8448eb211c80319c";
  r.span_id = "b7ad6b7169203331";
  EXPECT_EQ(LogRecordJson(r, kTime),
            R"({"time":"2026-11-28T08:35:16.123456Z","level":"warning","event":"session_end",)"
            R"("message":"client pid 7: served 3 messages","session":"shm-1","peer":"pid 7",)"
            R"("plane":"shm","trace_id":"0af7651916cd43dd8448eb211c80319c",)"
            R"("span_id":"b7ad6b7169203331"})");
}

TEST(LogRecordJson, UnknownFieldsAreLeftOut) {
  LogRecord r;
  r.event = "flight_served";
  r.message = "m";
  EXPECT_EQ(LogRecordJson(r, system_clock::time_point(seconds(0))),
            R"({"time":"1970-01-01T00:00:00.000000Z","level":"info","event":"flight_served",)"
            R"("message":"m"})");
}

// Quotes, backslashes, control characters and bytes that are not UTF-8 (a peer's words) still
// make one line of valid JSON.
TEST(LogRecordJson, MessagesAreEscaped) {
  LogRecord r;
  r.level = LogLevel::kDebug;
  r.event = "e";
  r.message = std::string("a\"b\\c\nd\x01") + "\xff";
  EXPECT_EQ(LogRecordJson(r, system_clock::time_point(seconds(0))),
            R"({"time":"1970-01-01T00:00:00.000000Z","level":"debug","event":"e",)"
            R"("message":"a\"b\\c\nd\u0001)"
            "\xef\xbf\xbd"  // U+FFFD, the replacement character
            R"("})");
}

TEST(EmitLog, ASinkTakesEveryRecordElseLinesTakeInfoAndAbove) {
  std::vector<std::string> records;
  std::vector<std::string> lines;
  const LogSink sink = [&](const LogRecord& r) { records.push_back(r.event); };
  const LogLines text = [&](const std::string& line) { lines.push_back(line); };
  LogRecord debug;
  debug.level = LogLevel::kDebug;
  debug.event = "flight_call";
  debug.message = "a call";
  LogRecord info;
  info.event = "session_end";
  info.message = "served";
  EmitLog(sink, text, debug);
  EmitLog(sink, text, info);
  EXPECT_EQ(records, (std::vector<std::string>{"flight_call", "session_end"}));
  EXPECT_TRUE(lines.empty());
  EmitLog(nullptr, text, debug);
  EmitLog(nullptr, text, info);
  EXPECT_EQ(lines, (std::vector<std::string>{"served"}));
  EmitLog(nullptr, nullptr, info);  // nowhere: nothing happens
}

TEST(LogLevelName, NamesEveryLevel) {
  EXPECT_STREQ(LogLevelName(LogLevel::kDebug), "debug");
  EXPECT_STREQ(LogLevelName(LogLevel::kInfo), "info");
  EXPECT_STREQ(LogLevelName(LogLevel::kWarning), "warning");
  EXPECT_STREQ(LogLevelName(LogLevel::kError), "error");
}

}  // namespace
}  // namespace ferry
