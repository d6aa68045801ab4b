// The error table against hand-written expectations: each code's name, C return code and gRPC
// status as documented (docs/architecture.md, "Errors"), errnos mapped to codes, and the errno
// kept as a detail.
#include "ferry/core/status_code.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <set>
#include <string>

namespace ferry {
namespace {

struct Expected {
  StatusCode code;
  const char* name;
  int c_code;
  int grpc_code;  // grpc::StatusCode's canonical values, written out
};

// The oracle: written from the documentation, not from the table.
constexpr Expected kExpected[] = {
    {StatusCode::kInvalidArgument, "InvalidArgument", EINVAL, 3},
    {StatusCode::kNotFound, "NotFound", ENOENT, 5},
    {StatusCode::kAlreadyExists, "AlreadyExists", EEXIST, 6},
    {StatusCode::kFailedPrecondition, "FailedPrecondition", EBUSY, 9},
    {StatusCode::kOutOfRange, "OutOfRange", ERANGE, 11},
    {StatusCode::kUnavailable, "Unavailable", ECONNREFUSED, 14},
    {StatusCode::kDeadlineExceeded, "DeadlineExceeded", ETIMEDOUT, 4},
    {StatusCode::kCancelled, "Cancelled", ECANCELED, 1},
    {StatusCode::kPermissionDenied, "PermissionDenied", EACCES, 7},
    {StatusCode::kUnauthenticated, "Unauthenticated", EPERM, 16},
    {StatusCode::kResourceExhausted, "ResourceExhausted", ENOMEM, 8},
    {StatusCode::kDataLoss, "DataLoss", EBADMSG, 15},
    {StatusCode::kUnimplemented, "Unimplemented", ENOTSUP, 12},
    {StatusCode::kInternal, "Internal", ENOTRECOVERABLE, 13},
    {StatusCode::kIOError, "IOError", EIO, 2},
};

TEST(StatusCode, EveryRowIsAsDocumented) {
  ASSERT_EQ(StatusCodeTable().size(), std::size(kExpected));
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    const StatusCodeInfo& row = StatusCodeInfoOf(e.code);
    EXPECT_EQ(row.code, e.code);
    EXPECT_STREQ(row.name, e.name);
    EXPECT_STREQ(StatusCodeName(e.code), e.name);
    EXPECT_EQ(
        std::string(row.error_class),
        std::string(e.name == std::string("IOError") ? "IOError" : std::string(e.name) + "Error"));
    EXPECT_EQ(row.c_code, e.c_code);
    EXPECT_EQ(row.grpc_code, e.grpc_code);
    // Each face's code maps back to the same StatusCode.
    EXPECT_EQ(StatusCodeFromErrno(e.c_code), e.code);
    EXPECT_EQ(StatusCodeFromGrpc(e.grpc_code), e.code);
    EXPECT_EQ(CErrorCodeOf(Status(e.code, "x")), e.c_code);
  }
  EXPECT_STREQ(StatusCodeName(StatusCode::kOk), "OK");
  EXPECT_EQ(CErrorCodeOf(Status::OK()), 0);
}

TEST(StatusCode, CodesAreDistinctOnEveryFace) {
  std::set<int> c_codes, grpc_codes;
  std::set<std::string> classes;
  for (const StatusCodeInfo& row : StatusCodeTable()) {
    EXPECT_TRUE(c_codes.insert(row.c_code).second) << row.name;
    EXPECT_TRUE(grpc_codes.insert(row.grpc_code).second) << row.name;
    EXPECT_TRUE(classes.insert(row.error_class).second) << row.name;
  }
}

TEST(StatusCode, OtherErrnosMapByMeaning) {
  EXPECT_EQ(StatusCodeFromErrno(0), StatusCode::kOk);
  EXPECT_EQ(StatusCodeFromErrno(EPIPE), StatusCode::kUnavailable);
  EXPECT_EQ(StatusCodeFromErrno(ECONNRESET), StatusCode::kUnavailable);
  EXPECT_EQ(StatusCodeFromErrno(ENOSPC), StatusCode::kResourceExhausted);
  EXPECT_EQ(StatusCodeFromErrno(EMFILE), StatusCode::kResourceExhausted);
  EXPECT_EQ(StatusCodeFromErrno(EOPNOTSUPP), StatusCode::kUnimplemented);
  EXPECT_EQ(StatusCodeFromErrno(EROFS), StatusCode::kPermissionDenied);
  EXPECT_EQ(StatusCodeFromErrno(EISDIR), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusCodeFromErrno(EXDEV), StatusCode::kIOError);  // no closer meaning
  // gRPC's codes that are no row's own.
  EXPECT_EQ(StatusCodeFromGrpc(0), StatusCode::kOk);
  EXPECT_EQ(StatusCodeFromGrpc(10), StatusCode::kUnavailable);  // ABORTED
  EXPECT_EQ(StatusCodeFromGrpc(99), StatusCode::kIOError);
}

TEST(StatusCode, FromErrnoKeepsTheErrnoAsADetail) {
  const Status st = Status::FromErrno(ENOENT, "cannot open \"/nope\"");
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(st.os_error(), ENOENT);
  EXPECT_EQ(st.message(), "cannot open \"/nope\": No such file or directory");
  const Status framed = st.WithContext("reading the dataset");
  EXPECT_EQ(framed.code(), StatusCode::kNotFound);
  EXPECT_EQ(framed.os_error(), ENOENT);
  EXPECT_EQ(framed.message(),
            "reading the dataset: cannot open \"/nope\": No such file or directory");
  // A made string frames it the same; an OK status stays OK whatever the context.
  EXPECT_EQ(st.WithContext(std::string("reading ") + "it").message(),
            "reading it: cannot open \"/nope\": No such file or directory");
  EXPECT_TRUE(Status::OK().WithContext("reading the dataset").ok());
  EXPECT_EQ(Status::OK().WithContext(std::string("x")).message(), "");
  // A failure without an errno is still a failure, never OK.
  EXPECT_EQ(Status::FromErrno(0, "nothing said").code(), StatusCode::kInternal);
  // The factories say which code they make.
  EXPECT_EQ(Status::Invalid("x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Status::NotSupported("x").code(), StatusCode::kUnimplemented);
  EXPECT_EQ(Status::OutOfMemory("x").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(Status::Unavailable("x").os_error(), 0);
}

}  // namespace
}  // namespace ferry
