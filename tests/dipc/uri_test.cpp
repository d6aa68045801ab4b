// Dissociated IPC URIs: parsing, printing, round trips and errors; base64 against RFC 4648's
// test vectors.
#include "ferry/dipc/uri.hpp"

#include "support/test_util.hpp"

namespace ferry::dipc {
namespace {

TEST(UriTest, ParsesTheSpecificationsShape) {
  ASSERT_OK_AND_ASSIGN(Uri u,
                       Uri::Parse("ucx://127.0.0.1:8080?want_data=14627933043253008&free_data=3"));
  EXPECT_EQ(u.scheme, "ucx");
  EXPECT_EQ(u.authority, "127.0.0.1:8080");
  EXPECT_EQ(u.path, "");
  EXPECT_EQ(u.want_data, 14627933043253008u);
  ASSERT_TRUE(u.free_data.has_value());
  EXPECT_EQ(*u.free_data, 3u);
  EXPECT_FALSE(u.remote_handle.has_value());
}

TEST(UriTest, RemoteHandleIsBase64AndRoundTrips) {
  Uri u;
  u.scheme = "shm";
  u.path = "/run/ferry/dataset";
  u.want_data = 1;
  u.remote_handle = std::string("\x00\xff+/=?&", 7);  // bytes that need escaping once encoded
  u.other = {{"x", "a b"}};
  const std::string text = u.ToString();
  EXPECT_EQ(text.find('+'), std::string::npos);
  ASSERT_OK_AND_ASSIGN(Uri back, Uri::Parse(text));
  EXPECT_EQ(back, u);
  for (const char* s : {"inproc:name?want_data=5", "ucx://h:1/p?want_data=0&k=v",
                        "shm://?want_data=18446744073709551615"}) {
    ASSERT_OK_AND_ASSIGN(Uri a, Uri::Parse(s));
    ASSERT_OK_AND_ASSIGN(Uri b, Uri::Parse(a.ToString()));
    EXPECT_EQ(a, b) << s;
  }
}

TEST(UriTest, BadUrisSayWhatIsWrong) {
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "has no scheme",
                     Uri::Parse("127.0.0.1?want_data=1"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "lacks the required want_data",
                     Uri::Parse("ucx://h:1"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "is not an unsigned 64-bit integer",
                     Uri::Parse("ucx://h?want_data=-1"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "is not an unsigned 64-bit integer",
                     Uri::Parse("ucx://h?want_data=18446744073709551616"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "given twice",
                     Uri::Parse("ucx://h?want_data=1&want_data=2"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "remote_handle: base64",
                     Uri::Parse("ucx://h?want_data=1&remote_handle=a*b"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "bad percent-escape",
                     Uri::Parse("ucx://h?want_data=1&x=%zz"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "truncated percent-escape",
                     Uri::Parse("ucx://h?want_data=1&x=%4"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "bad character",
                     Uri::Parse("u c x://h?want_data=1"));
}

TEST(UriTest, Base64MatchesRfc4648) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(Base64Encode(plain), encoded);
    ASSERT_OK_AND_ASSIGN(std::string back, Base64Decode(encoded));
    EXPECT_EQ(back, plain);
  }
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "unexpected '!' at position 2",
                     Base64Decode("Zm!v"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "data after padding", Base64Decode("Zg=a"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "cannot be a complete encoding",
                     Base64Decode("Z"));
}

}  // namespace
}  // namespace ferry::dipc
