// Shared test support: status assertions, arrays from JSON, array equality and test data paths.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "ferry/core/result.hpp"
#include "ferry/format/array.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"

#define FERRY_TEST_CONCAT_INNER(a, b) a##b
#define FERRY_TEST_CONCAT(a, b) FERRY_TEST_CONCAT_INNER(a, b)

/// Assert that a Status or Result expression is OK, printing its message otherwise.
#define ASSERT_OK(expr)                                             \
  do {                                                              \
    const ::ferry::Status _st = ::ferry::testing::ToStatus((expr)); \
    ASSERT_TRUE(_st.ok()) << #expr << " failed: " << _st.message(); \
  } while (false)

#define EXPECT_OK(expr)                                             \
  do {                                                              \
    const ::ferry::Status _st = ::ferry::testing::ToStatus((expr)); \
    EXPECT_TRUE(_st.ok()) << #expr << " failed: " << _st.message(); \
  } while (false)

#define ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, rexpr)                          \
  auto tmp = (rexpr);                                                       \
  ASSERT_TRUE(tmp.ok()) << #rexpr << " failed: " << tmp.status().message(); \
  lhs = std::move(tmp).value()

/// Assert that a Result is OK and move its value into `lhs`.
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  ASSERT_OK_AND_ASSIGN_IMPL(FERRY_TEST_CONCAT(_res_, __LINE__), lhs, rexpr)

/// Assert that an expression fails with errno-style `code` and a message containing `substr`.
#define ASSERT_RAISES_WITH(expected_code, substr, expr)             \
  do {                                                              \
    const ::ferry::Status _st = ::ferry::testing::ToStatus((expr)); \
    ASSERT_FALSE(_st.ok()) << #expr << " unexpectedly succeeded";   \
    EXPECT_EQ(_st.code(), (expected_code)) << _st.message();        \
    EXPECT_THAT(_st.message(), ::testing::HasSubstr(substr));       \
  } while (false)

namespace ferry::testing {

/// How long a test's UCX connect may take to wire up (ConnectOptions::connect_timeout), apart
/// from the connection's own timeout: a loaded host takes seconds (UCX 1.22 beside CI's other
/// suites: over 5 s), and the wait ends as soon as the endpoint is up.
constexpr std::chrono::milliseconds kUcxWireUp{30000};

/// Whether `holds()` becomes true within `limit`, looked at every millisecond: for counters
/// (servers' stats) that have no waiter of their own. Real time, so only for what other
/// threads do, never for a timeout of ferry's (those run on a ManualClock).
template <typename F>
bool Within(std::chrono::milliseconds limit, F holds) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!holds()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

/// Whether `holds()` stays true for all of `span`: a bounded watch for what must not happen.
template <typename F>
bool Throughout(std::chrono::milliseconds span, F holds) {
  return !Within(span, [&] { return !holds(); });
}

inline Status ToStatus(const Status& st) { return st; }
template <typename T>
Status ToStatus(const Result<T>& r) {
  return r.status();
}

/// Build an owned array of `field`'s type from JSON values; fails the test on error.
Result<Array> ArrayFromJson(const Field& field, const std::string& json);

/// Render an array's values as JSON (see ferry/format/json.hpp).
std::string ToJson(const ArrayView& view);

/// Expect two views to hold the same type and values.
void ExpectArraysEqual(const ArrayView& expected, const ArrayView& actual);

/// The repository's root, where the tests were built from (its fuzz corpora, its scripts).
std::string SourceDir();

/// `../shared/testdata` beside the repository (or $FERRY_SHARED_DIR/testdata).
std::string SharedTestDataDir();

/// A path for a test's scratch file `name`, in gtest's temporary directory and unique to this
/// process, so that two runs of one suite at once never share a file. The caller removes it.
std::string ScratchPath(const std::string& name);

}  // namespace ferry::testing

namespace ferry::testing {

/// A node of `length` rows at `offset` over `buffers` and `children`, owned by nobody: its
/// release only marks it released. For tests that lay out an array by hand (a malformed one,
/// exact bits); every pointer must outlive it.
ArrowArray HandMadeArray(int64_t length, int64_t offset, const void** buffers, int64_t n_buffers,
                         ArrowArray** children = nullptr, int64_t n_children = 0);

/// A dense union<a: int32> of 2 rows whose second row's offset (5) points past its child's 2
/// rows: malformed where default validation does not read. Made in place, so neither copied nor
/// moved; its release only marks it released.
struct DenseUnionPastItsChild {
  DenseUnionPastItsChild();
  DenseUnionPastItsChild(const DenseUnionPastItsChild&) = delete;
  DenseUnionPastItsChild& operator=(const DenseUnionPastItsChild&) = delete;
  UniqueSchema schema;
  int32_t values[2] = {7, 8};
  const void* child_buffers[2] = {nullptr, values};
  ArrowArray child{};
  ArrowArray* children[1] = {&child};
  int8_t ids[2] = {0, 0};
  int32_t offsets[2] = {1, 5};
  const void* buffers[2] = {ids, offsets};
  ArrowArray array{};
};

/// A view of rows [offset, offset + length) of `parent`: a new ArrowArray that shares the
/// parent's buffers and children (no copy) and releases the parent when released.
UniqueArray SliceArray(UniqueArray parent, int64_t offset, int64_t length);

/// Build, slice and import: rows [offset, offset + length) of the array built from `json`.
Result<Array> SlicedArrayFromJson(const Field& field, const std::string& json, int64_t offset,
                                  int64_t length);

}  // namespace ferry::testing

namespace ferry::testing {

/// This process's threads now, thread id to name (/proc/self/task/*/stat). A thread takes the
/// name of the thread that starts it until it names itself, so a test can tell whose threads a
/// piece of code started. A thread that is exiting (joined, say, but not yet reaped by the
/// kernel) is left out.
std::map<int, std::string> ThreadNames();
/// The ids of this process's threads named `name` now. Taken just after a component names the
/// threads it starts, it tells them from threads they start later, which bear the name until they
/// rename themselves.
std::set<int> ThreadIdsNamed(const std::string& name);
/// Which of `tids` are still threads of this process (not exiting).
std::set<int> ThreadsAlive(const std::set<int>& tids);

/// The /proc/self/maps entry of the mapping that holds an address: its permissions ("r--s",
/// "rw-p") and the file it maps ("/memfd:ferry-segment (deleted)"; empty for anonymous memory).
struct MapsEntry {
  std::string permissions;
  std::string path;
};
/// The entry of the mapping that holds `address` now; both fields empty when none holds it.
MapsEntry MapsEntryOf(const void* address);

}  // namespace ferry::testing
