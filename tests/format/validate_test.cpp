// Graded validation: hand-corrupted arrays fail at the right level, with the path in the message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "ferry/format/array_view.hpp"
#include "format/utf8.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

using ::testing::HasSubstr;

// Writable access to a buffer of an array this test owns.
template <typename T>
T* Mut(const ArrowArray* array, int64_t buffer) {
  return static_cast<T*>(const_cast<void*>(array->buffers[buffer]));
}

// Passes every level below `fails_at`, then fails there with `message`.
void ExpectFailsAt(const Array& array, ValidationLevel fails_at, const std::string& message) {
  for (auto level :
       {ValidationLevel::kMinimal, ValidationLevel::kDefault, ValidationLevel::kFull}) {
    Status st = array.Validate(level);
    if (level < fails_at) {
      EXPECT_TRUE(st.ok()) << "level " << static_cast<int>(level) << ": " << st.message();
    } else {
      ASSERT_FALSE(st.ok()) << "level " << static_cast<int>(level) << " passed";
      EXPECT_THAT(st.message(), HasSubstr(message));
    }
  }
}

Array Build(const Field& f, const std::string& json) {
  auto r = testing::ArrayFromJson(f, json);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).ValueOrDie();
}

TEST(Validate, StringOffsetsGoingBackwards) {
  Array a = Build(Field::Make("u", "s"), R"(["ab", "cd", "ef"])");
  Mut<int32_t>(a.array(), 1)[2] = 0;  // offsets 0, 2, 0, 6
  ExpectFailsAt(a, ValidationLevel::kFull, "field \"s\" > element 1: offset 0 < previous offset 2");
}

TEST(Validate, StringOffsetPastTheData) {
  Array a = Build(Field::Make("u", "s"), R"(["ab", "cd", "ef"])");
  Mut<int32_t>(a.array(), 1)[2] = 8;  // offsets 0, 2, 8, 6
  ExpectFailsAt(a, ValidationLevel::kFull, "element 1: offset 8 > data size 6");
}

TEST(Validate, NegativeFirstOffsetFailsAtDefault) {
  Array a = Build(Field::Make("z", "b"), R"(["00", "0102"])");
  Mut<int32_t>(a.array(), 1)[0] = -4;
  ExpectFailsAt(a, ValidationLevel::kDefault, "first offset -4 is negative");
}

TEST(Validate, ListOffsetBeyondChildFailsAtDefault) {
  Array a = Build(Field::Make("+l", "l", {Field::Make("i", "item")}), "[[1, 2], [3, 4]]");
  Mut<int32_t>(a.array(), 1)[2] = 5;
  ExpectFailsAt(a, ValidationLevel::kDefault, "field \"l\": last offset 5 > child length 4");
}

TEST(Validate, ListOffsetsBackwardsFailAtFull) {
  Array a = Build(Field::Make("+L", "l", {Field::Make("i", "item")}), "[[1, 2], [3], [4]]");
  Mut<int64_t>(a.array(), 1)[2] = 1;  // 0, 2, 1, 4
  ExpectFailsAt(a, ValidationLevel::kFull, "element 1: offset 1 < previous offset 2");
}

TEST(Validate, LargeListViewOffsetPlusSizeOverflowIsAnError) {
  // Found by the ipc_stream fuzzer: offset + size wrapped around int64 (UB, and a false pass).
  Array a = Build(Field::Make("+vL", "lv", {Field::Make("i", "item")}), "[[1, 2], [3]]");
  Mut<int64_t>(a.array(), 1)[1] = 599;
  Mut<int64_t>(a.array(), 2)[1] = INT64_MAX - 2;
  ExpectFailsAt(a, ValidationLevel::kFull, "element 1: list view [offset 599, size ");
}

TEST(Validate, RequiredBufferIsNull) {
  Array a = Build(Field::Make("i", "x"), "[1, 2, 3]");
  const_cast<ArrowArray*>(a.array())->buffers[1] = nullptr;
  ASSERT_OK(const_cast<ArrayView&>(a.view()).SetArrayMinimal(a.array()));
  ExpectFailsAt(a, ValidationLevel::kMinimal, "buffer 1 is NULL but 12 bytes are required");
}

TEST(Validate, NullCountWithoutValidity) {
  Array a = Build(Field::Make("i", "x"), "[1, 2, 3]");
  const_cast<ArrowArray*>(a.array())->null_count = 1;
  ASSERT_OK(const_cast<ArrayView&>(a.view()).SetArray(a.array()));
  ExpectFailsAt(a, ValidationLevel::kMinimal, "null_count is 1 but there is no validity buffer");
}

TEST(Validate, NullCountMismatch) {
  Array a = Build(Field::Make("i", "x"), "[1, null, 3, null]");
  const_cast<ArrowArray*>(a.array())->null_count = 1;
  ASSERT_OK(const_cast<ArrayView&>(a.view()).SetArray(a.array()));
  ExpectFailsAt(a, ValidationLevel::kFull, "null_count is 1 but the validity buffer has 2 nulls");
}

TEST(Validate, UndeclaredUnionTypeId) {
  Array a = Build(Field::Make("+us:3,7", "u", {Field::Make("i", "a"), Field::Make("u", "b")}),
                  R"([[3, 1], [7, "x"]])");
  Mut<int8_t>(a.array(), 0)[1] = 9;
  ExpectFailsAt(a, ValidationLevel::kFull,
                "field \"u\" > element 1: union type id 9 is not declared");
}

TEST(Validate, DenseUnionOffsetOutOfRange) {
  Array a = Build(Field::Make("+ud:0,1", "u", {Field::Make("i", "a"), Field::Make("u", "b")}),
                  R"([[0, 1], [1, "x"], [0, 2]])");
  Mut<int32_t>(a.array(), 1)[2] = 5;
  ExpectFailsAt(a, ValidationLevel::kFull,
                "element 2: dense union offset 5 is outside child 0 of length 2");
}

TEST(Validate, DictionaryIndexOutOfRange) {
  Array a = Build(Field::Dictionary("d", "c", Field::Make("u", "values")), R"(["a", "b", "a"])");
  Mut<int8_t>(a.array(), 1)[2] = 2;
  ExpectFailsAt(a, ValidationLevel::kFull, "element 2: dictionary index 2 is outside [0, 2)");
}

TEST(Validate, RunEndsThatDoNotIncrease) {
  Field f = Field::Make("+r", "r",
                        {Field::Make("i", "run_ends").WithFlags(0), Field::Make("u", "values")});
  Array a = Build(f, R"(["a", "a", "b", "c", "c", "c"])");  // run ends 2, 3, 6
  ArrowArray* run_ends = a.array()->children[0];
  static_cast<int32_t*>(const_cast<void*>(run_ends->buffers[1]))[1] = 2;  // 2, 2, 6
  ExpectFailsAt(a, ValidationLevel::kFull,
                "field \"r\" > field \"run_ends\" > element 1: run end 2 does not increase");
}

TEST(Validate, RunEndsTooShortFailAtDefault) {
  Field f = Field::Make("+r", "r",
                        {Field::Make("s", "run_ends").WithFlags(0), Field::Make("l", "values")});
  Array a = Build(f, "[1, 1, 2, 2]");  // run ends 2, 4
  ArrowArray* run_ends = a.array()->children[0];
  static_cast<int16_t*>(const_cast<void*>(run_ends->buffers[1]))[1] = 3;
  ExpectFailsAt(a, ValidationLevel::kDefault, "last run end 3 < offset + length 4");
}

TEST(Validate, InvalidUtf8InString) {
  Array a = Build(Field::Make("u", "s"), R"(["ok", "bad", "fine"])");
  Mut<char>(a.array(), 2)[3] = static_cast<char>(0xC3);  // truncated 2-byte sequence
  ExpectFailsAt(a, ValidationLevel::kFull, "field \"s\" > element 1: invalid UTF-8");
}

TEST(Validate, InvalidUtf8InStringView) {
  Array a = Build(Field::Make("vu", "s"), R"(["short", "a value longer than twelve"])");
  Mut<char>(a.array(), 2)[20] = static_cast<char>(0xFF);
  ExpectFailsAt(a, ValidationLevel::kFull, "element 1: invalid UTF-8");
}

TEST(Validate, StringSplitInsideACharacter) {
  Array a = Build(Field::Make("u", "s"), R"(["é", "x"])");  // bytes C3 A9 78
  Mut<int32_t>(a.array(), 1)[1] = 1;                        // first string ends inside é
  ExpectFailsAt(a, ValidationLevel::kFull, "element 0: invalid UTF-8");
}

TEST(Validate, ViewBufferIndexOutOfRange) {
  Array a = Build(Field::Make("vz", "b"), R"(["00", "000102030405060708090a0b0c0d"])");
  Mut<int32_t>(a.array(), 1)[4 + 2] = 3;  // element 1's buffer index
  ExpectFailsAt(a, ValidationLevel::kFull, "element 1: view buffer index 3 is outside [0, 1)");
}

TEST(Validate, ListViewOutsideChild) {
  Array a = Build(Field::Make("+vl", "lv", {Field::Make("i", "item")}), "[[1], [2, 3]]");
  Mut<int32_t>(a.array(), 2)[1] = 7;  // size of element 1
  ExpectFailsAt(a, ValidationLevel::kFull,
                "element 1: list view [offset 1, size 7] is outside the child of length 3");
}

TEST(Validate, NestedPathNamesEveryLevel) {
  Field f = Field::Make("+s", "", {Field::Make("+l", "a", {Field::Make("u", "")})});
  Array a = Build(f, R"([{"a": ["x", "y"]}, {"a": ["z"]}])");
  ArrowArray* strings = a.array()->children[0]->children[0];
  static_cast<int32_t*>(const_cast<void*>(strings->buffers[1]))[1] = 3;  // 0, 3, 2, 3
  ExpectFailsAt(a, ValidationLevel::kFull,
                "field \"a\" > child 0 > element 1: offset 2 < previous offset 3");
}

TEST(SetArray, StructuralErrors) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("u", "s").Export());
  ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(schema.get()));
  ArrowArray released{};
  ASSERT_RAISES_WITH(EINVAL, "field \"s\": array is released", view.SetArray(&released));
  ASSERT_RAISES_WITH(EINVAL, "array is NULL", view.SetArray(nullptr));

  Array a = Build(Field::Make("u", "s"), R"(["x"])");
  ArrowArray copy = *a.array();
  copy.n_buffers = 2;
  ASSERT_RAISES_WITH(EINVAL, "n_buffers is 2 but string needs 3", view.SetArray(&copy));
  copy = *a.array();
  copy.n_children = 1;
  ASSERT_RAISES_WITH(EINVAL, "n_children is 1 but the schema has 0", view.SetArray(&copy));
  copy = *a.array();
  copy.length = -1;
  ASSERT_RAISES_WITH(EINVAL, "length is negative", view.SetArray(&copy));
  copy = *a.array();
  copy.offset = INT64_MAX;
  ASSERT_RAISES_WITH(EINVAL, "offset + length overflows", view.SetArray(&copy));
}

TEST(SetArrayMinimal, ReadsNoDataBuffer) {
  // Buffers that would fault if read: minimal setup and validation must not touch them.
  Array a = Build(Field::Make("u", "s"), R"(["abc", "de"])");
  ArrowArray fake = *a.array();
  const void* bogus[3] = {nullptr, reinterpret_cast<const void*>(0x10),
                          reinterpret_cast<const void*>(0x20)};
  fake.buffers = bogus;
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("u", "s").Export());
  ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArrayMinimal(&fake));
  EXPECT_EQ(view.buffer(1).size_bytes, 12);
  EXPECT_EQ(view.buffer(2).size_bytes, -1);
  ASSERT_OK(view.Validate(ValidationLevel::kMinimal));
}

TEST(SetArray, ListViewBuffersHoldOneEntryPerElement) {
  // Unlike list offsets, list view offsets have no trailing entry: 3 elements, 12 bytes each.
  for (const char* format : {"+vl", "+vL"}) {
    const int64_t width = format[2] == 'l' ? 4 : 8;
    Field f = Field::Make(format, "lv", {Field::Make("i", "item")});
    Array a = Build(f, "[[1], null, [2, 3]]");
    ASSERT_OK_AND_ASSIGN(UniqueSchema schema, f.Export());
    ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(schema.get()));
    ASSERT_OK(view.SetArray(a.array()));
    EXPECT_EQ(view.buffer(1).size_bytes, 3 * width) << format;
    EXPECT_EQ(view.buffer(2).size_bytes, 3 * width) << format;
  }
}

TEST(Utf8, AcceptsAndRejectsByTheStandard) {
  auto ok = [](std::string_view s) {
    return internal::ValidateUtf8(reinterpret_cast<const uint8_t*>(s.data()),
                                  static_cast<int64_t>(s.size()));
  };
  EXPECT_TRUE(ok(""));
  EXPECT_TRUE(ok("plain ascii"));
  EXPECT_TRUE(ok("\xC2\x80"));           // U+0080
  EXPECT_TRUE(ok("\xE0\xA0\x80"));       // U+0800
  EXPECT_TRUE(ok("\xED\x9F\xBF"));       // U+D7FF
  EXPECT_TRUE(ok("\xEE\x80\x80"));       // U+E000
  EXPECT_TRUE(ok("\xF0\x90\x80\x80"));   // U+10000
  EXPECT_TRUE(ok("\xF4\x8F\xBF\xBF"));   // U+10FFFF
  EXPECT_FALSE(ok("\x80"));              // lone continuation
  EXPECT_FALSE(ok("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(ok("\xC1\xBF"));          // overlong
  EXPECT_FALSE(ok("\xE0\x9F\xBF"));      // overlong 3-byte
  EXPECT_FALSE(ok("\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(ok("\xF0\x8F\xBF\xBF"));  // overlong 4-byte
  EXPECT_FALSE(ok("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(ok("\xF5\x80\x80\x80"));
  EXPECT_FALSE(ok("\xE2\x82"));  // truncated
  EXPECT_FALSE(ok("\xC3"));
  EXPECT_FALSE(ok("\xFF"));
  // Errors right at the edges of the 16- and 64-byte ASCII blocks.
  for (size_t pos : {0u, 15u, 16u, 31u, 63u, 64u, 65u, 127u}) {
    std::string s(130, 'a');
    s[pos] = static_cast<char>(0x80);
    EXPECT_FALSE(ok(s)) << pos;
    s[pos] = static_cast<char>(0xC3);
    s[pos + 1] = static_cast<char>(0xA9);
    EXPECT_TRUE(ok(s)) << pos;
  }
}

}  // namespace
}  // namespace ferry
