// W3C Trace Context parsing and fresh span ids.
#include "ferry/core/trace.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "ferry/core/hex.hpp"

namespace ferry {

namespace {

constexpr size_t kVersion00Length = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2
constexpr size_t kMaxTracestate = 512;

bool LowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool AllZero(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

// A tracestate is carried only when it is short printable ASCII: it travels in gRPC metadata
// and in hello frames, where a newline or a NUL must not go.
bool Carriable(std::string_view s) {
  return s.size() <= kMaxTracestate &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

std::string Random64Hex() {
  uint8_t bits[8] = {};
  // getrandom of 8 bytes never returns short; a failure leaves zeros, replaced below.
  if (getrandom(bits, sizeof(bits), 0) != static_cast<ssize_t>(sizeof(bits))) bits[7] = 1;
  if (std::all_of(std::begin(bits), std::end(bits), [](uint8_t b) { return b == 0; })) bits[7] = 1;
  return HexEncode(std::string_view(reinterpret_cast<const char*>(bits), sizeof(bits)));
}

}  // namespace

std::string TraceContext::traceparent() const {
  if (!valid()) return {};
  return "00-" + trace_id + "-" + span_id + "-" + flags;
}

TraceContext TraceContext::Child() const {
  if (!valid()) return {};
  TraceContext child = *this;
  child.span_id = NewSpanId();
  return child;
}

Result<TraceContext> ParseTraceparent(std::string_view traceparent, std::string_view tracestate) {
  const std::string shown(traceparent.substr(0, 80));
  auto bad = [&](const std::string& why) {
    return Status::Invalid("traceparent \"" + shown + "\" " + why);
  };
  if (traceparent.size() < kVersion00Length) {
    return bad("has " + std::to_string(traceparent.size()) + " characters, not 55");
  }
  const std::string_view version = traceparent.substr(0, 2);
  if (!LowerHex(version)) return bad("has a version that is not two lowercase hex digits");
  if (version == "ff") return bad("has version ff, which W3C forbids");
  if (version == "00" && traceparent.size() != kVersion00Length) {
    return bad("has " + std::to_string(traceparent.size()) + " characters; version 00 has 55");
  }
  // A later version: its first four fields read as version 00's, and whatever follows starts
  // with a '-'.
  if (traceparent.size() > kVersion00Length && traceparent[kVersion00Length] != '-') {
    return bad("has something after its flags that does not start with '-'");
  }
  if (traceparent[2] != '-' || traceparent[35] != '-' || traceparent[52] != '-') {
    return bad("is not version-traceid-parentid-flags separated by '-'");
  }
  TraceContext out;
  out.trace_id = std::string(traceparent.substr(3, 32));
  out.span_id = std::string(traceparent.substr(36, 16));
  out.flags = std::string(traceparent.substr(53, 2));
  if (!LowerHex(out.trace_id)) return bad("has a trace-id that is not 32 lowercase hex digits");
  if (AllZero(out.trace_id)) return bad("has an all-zero trace-id");
  if (!LowerHex(out.span_id)) return bad("has a parent-id that is not 16 lowercase hex digits");
  if (AllZero(out.span_id)) return bad("has an all-zero parent-id");
  if (!LowerHex(out.flags)) return bad("has trace flags that are not two lowercase hex digits");
  if (Carriable(tracestate)) out.tracestate = std::string(tracestate);
  return out;
}

Status CheckClientTrace(std::string_view traceparent, std::string_view tracestate) {
  if (traceparent.empty()) return Status::OK();
  Result<TraceContext> trace = ParseTraceparent(traceparent, tracestate);
  if (!trace.ok()) return trace.status().WithContext("ClientOptions::traceparent");
  if (trace->tracestate != tracestate) {
    return Status::Invalid(
        "ClientOptions::tracestate is longer than 512 characters or not printable ASCII");
  }
  return Status::OK();
}

std::string NewSpanId() { return Random64Hex(); }

}  // namespace ferry
