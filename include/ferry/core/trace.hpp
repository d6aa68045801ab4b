// W3C Trace Context: the `traceparent` (and `tracestate`) a caller sends with a request, parsed
// and checked as the recommendation says, so that ferry can tell which trace its work belongs to
// and hand the trace on. ferry records trace and span ids in its logs; it exports no spans.
#pragma once

#include <string>
#include <string_view>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"

namespace ferry {

/// One trace context: a traceparent's fields in lowercase hex, and the tracestate passed along
/// as it came. Plain values; empty (valid() false) when no trace is known.
struct FERRY_EXPORT TraceContext {
  /// 32 hex digits, not all zero.
  std::string trace_id;
  /// The span that is the parent of whatever the holder does next: 16 hex digits, not all zero.
  std::string span_id;
  /// The trace flags' two hex digits ("01": sampled).
  std::string flags = "00";
  /// The vendors' tracestate, carried as it came (W3C: list members, at most 512 characters
  /// kept); empty for none.
  std::string tracestate;

  bool valid() const { return !trace_id.empty(); }
  /// The traceparent header: "00-<trace_id>-<span_id>-<flags>"; empty when not valid().
  std::string traceparent() const;
  /// The same trace with a fresh span id: the context of one piece of work (a call, a session)
  /// whose parent is this one's span. Draws 64 random bits; empty when not valid().
  TraceContext Child() const;
};

/// Parse a `traceparent` header (and its `tracestate`, kept as it is when the traceparent is
/// valid). Version 00 must be exactly 55 characters; a later version (01-fe) is read by its
/// first four fields, as W3C asks of a version it does not know. kInvalid, naming what is wrong,
/// for: a bad length or separator, upper-case or non-hex digits, version ff, an all-zero
/// trace-id or parent-id. Cost: one pass over the text.
FERRY_EXPORT Result<TraceContext> ParseTraceparent(std::string_view traceparent,
                                                   std::string_view tracestate = {});

/// Check the trace a client was given to send (its options' `traceparent` and `tracestate`):
/// OK when the traceparent is empty, or ParseTraceparent accepts it and keeps the tracestate
/// whole; else kInvalid naming the option at fault. Cost: one parse.
FERRY_EXPORT Status CheckClientTrace(std::string_view traceparent, std::string_view tracestate);

/// 64 random bits as 16 lowercase hex digits, never all zero: a new span id.
FERRY_EXPORT std::string NewSpanId();

}  // namespace ferry
