// W3C Trace Context: traceparent parsing as the recommendation's examples and rules have it, and
// the child spans ferry starts.
#include "ferry/core/trace.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "support/test_util.hpp"

namespace ferry {
namespace {

// The recommendation's own example (W3C Trace Context, section 3.2.2.1).
constexpr const char* kExample = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

TEST(Traceparent, TheRecommendationsExampleParses) {
  ASSERT_OK_AND_ASSIGN(TraceContext t, ParseTraceparent(kExample, "congo=t61rcWkgMzE"));
  EXPECT_EQ(t.trace_id, "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(t.span_id, "b7ad6b7169203331");
  EXPECT_EQ(t.flags, "01");
  EXPECT_EQ(t.tracestate, "congo=t61rcWkgMzE");
  EXPECT_EQ(t.traceparent(), kExample);
}

TEST(Traceparent, BadOnesAreRefusedNamingWhatIsWrong) {
  struct Case {
    std::string text;
    std::string why;
  };
  const std::string id = "0af7651916cd43dd8448eb211c80319c";
  const std::string parent = "b7ad6b7169203331";
  const Case cases[] = {
      {"", "has 0 characters, not 55"},
      {"00-" + id + "-" + parent + "-0", "has 54 characters"},
      {"00-" + id + "-" + parent + "-01-extra", "version 00 has 55"},
      {"ff-" + id + "-" + parent + "-01", "version ff"},
      {"0g-" + id + "-" + parent + "-01", "version that is not two lowercase hex digits"},
      {"00-00000000000000000000000000000000-" + parent + "-01", "all-zero trace-id"},
      {"00-" + id + "-0000000000000000-01", "all-zero parent-id"},
      {"00-0AF7651916CD43DD8448EB211C80319C-" + parent + "-01", "trace-id that is not 32"},
      {"00-" + id + "-B7AD6B7169203331-01", "parent-id that is not 16"},
      {"00-" + id + "-" + parent + "-0x", "trace flags"},
      {"00_" + id + "-" + parent + "-01", "separated by '-'"},
      {"00-" + id + "_" + parent + "-01", "separated by '-'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, c.why, ParseTraceparent(c.text).status());
  }
}

// A later version is read by version 00's four fields, whatever follows after a '-'.
TEST(Traceparent, ALaterVersionIsReadByItsFirstFourFields) {
  const std::string later = "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-comes";
  ASSERT_OK_AND_ASSIGN(TraceContext t, ParseTraceparent(later));
  EXPECT_EQ(t.trace_id, "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(t.traceparent(), kExample);  // ferry writes version 00
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "does not start with '-'",
                     ParseTraceparent(later.substr(0, 55) + "x").status());
}

// A tracestate that could not travel in metadata or a hello (too long, a control character)
// is dropped; the traceparent still holds.
TEST(Traceparent, AnUncarriableTracestateIsDropped) {
  ASSERT_OK_AND_ASSIGN(TraceContext t, ParseTraceparent(kExample, std::string(513, 'a')));
  EXPECT_EQ(t.tracestate, "");
  ASSERT_OK_AND_ASSIGN(t, ParseTraceparent(kExample, "a=1\nb=2"));
  EXPECT_EQ(t.tracestate, "");
  ASSERT_OK_AND_ASSIGN(t, ParseTraceparent(kExample, std::string(512, 'a')));
  EXPECT_EQ(t.tracestate.size(), 512u);
}

TEST(TraceContext, AChildKeepsTheTraceWithAFreshSpan) {
  ASSERT_OK_AND_ASSIGN(TraceContext parent, ParseTraceparent(kExample, "k=v"));
  std::set<std::string> spans;
  for (int i = 0; i < 100; ++i) {
    const TraceContext child = parent.Child();
    EXPECT_EQ(child.trace_id, parent.trace_id);
    EXPECT_EQ(child.flags, parent.flags);
    EXPECT_EQ(child.tracestate, "k=v");
    EXPECT_NE(child.span_id, parent.span_id);
    // What ferry sends on parses as W3C has it.
    ASSERT_OK(ParseTraceparent(child.traceparent()).status());
    spans.insert(child.span_id);
  }
  EXPECT_EQ(spans.size(), 100u);  // 64 random bits each
}

TEST(TraceContext, NoTraceHasNoChildAndNoHeader) {
  const TraceContext none;
  EXPECT_FALSE(none.valid());
  EXPECT_FALSE(none.Child().valid());
  EXPECT_EQ(none.traceparent(), "");
}

// What a client is given to send: nothing, a sound traceparent with its tracestate, or an error
// that names the option at fault.
TEST(CheckClientTrace, NamesTheOptionAtFault) {
  ASSERT_OK(CheckClientTrace("", ""));
  ASSERT_OK(CheckClientTrace(kExample, "congo=t61rcWkgMzE"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "ClientOptions::traceparent",
                     CheckClientTrace("00-" + std::string(32, '0') + "-b7ad6b7169203331-01", ""));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "ClientOptions::tracestate",
                     CheckClientTrace(kExample, std::string(600, 'a')));
}

}  // namespace
}  // namespace ferry
