// Graded validation: hand-corrupted arrays fail at the right level, with the path in the message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

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

// A list's and a binary column's 32-bit offsets are compared eight pairs at a time: an offset
// going backwards at each place of the vector loop and of its scalar tail is found and named as
// a walk one offset at a time names it.
TEST(Validate, LongListAndBinaryOffsetsBackwardsFailAtFull) {
  constexpr int kRows = 37;  // four vectors of eight pairs and a tail of four
  std::string lists = "[";
  std::string binaries = "[";
  for (int i = 0; i < kRows; ++i) {
    lists += std::string(i == 0 ? "" : ", ") + "[" + std::to_string(i) + "]";
    binaries += std::string(i == 0 ? "" : ", ") + "\"0a\"";  // one byte each
  }
  lists += "]";
  binaries += "]";
  const Field list = Field::Make("+l", "l", {Field::Make("i", "item")});
  const Field binary = Field::Make("z", "b");
  ASSERT_OK(Build(list, lists).Validate(ValidationLevel::kFull));
  ASSERT_OK(Build(binary, binaries).Validate(ValidationLevel::kFull));
  for (int at = 1; at < kRows - 1; ++at) {
    SCOPED_TRACE(at);
    // Offsets are 0, 1, 2, ...: offset at + 1 set to at - 1 takes element `at` backwards.
    const std::string message = "element " + std::to_string(at) + ": offset " +
                                std::to_string(at - 1) + " < previous offset " + std::to_string(at);
    Array l = Build(list, lists);
    Mut<int32_t>(l.array(), 1)[at + 1] = at - 1;
    ExpectFailsAt(l, ValidationLevel::kFull, message);
    Array b = Build(binary, binaries);
    Mut<int32_t>(b.array(), 1)[at + 1] = at - 1;
    ExpectFailsAt(b, ValidationLevel::kFull, message);
  }
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

// A dictionary taken as checked already (a decoder's) is not walked again: bad UTF-8 in its
// values passes, where walking it finds it; an index past its end fails either way.
TEST(Validate, DictionaryValuesAlreadyCheckedAreNotWalkedButIndicesAre) {
  Array a = Build(Field::Dictionary("d", "c", Field::Make("u", "values")), R"(["ab", "cd", "ab"])");
  Mut<char>(a.array()->dictionary, 2)[1] = static_cast<char>(0xC3);  // "a\xC3": truncated
  Status walked = a.Validate(ValidationLevel::kFull);
  ASSERT_FALSE(walked.ok());
  EXPECT_THAT(walked.message(), HasSubstr("dictionary > element 0: invalid UTF-8"));
  EXPECT_OK(a.Validate(ValidationLevel::kFull, DictionaryValues::kAlreadyChecked));
  Mut<int8_t>(a.array(), 1)[1] = 2;
  Status index = a.Validate(ValidationLevel::kFull, DictionaryValues::kAlreadyChecked);
  ASSERT_FALSE(index.ok());
  EXPECT_THAT(index.message(), HasSubstr("element 1: dictionary index 2 is outside [0, 2)"));
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

TEST(Validate, RunEndsWithAnUnknownNullCountAreReadForNullsAtFull) {
  // Default validation refuses run ends whose null count says they hold nulls; with the count
  // unknown (-1), full validation reads their bitmap, whatever the parent's length.
  Field f = Field::Make("+r", "r",
                        {Field::Make("i", "run_ends").WithFlags(0), Field::Make("u", "values")});
  Array a = Build(f, R"(["a", "a", "b", "c", "c", "c"])");  // run ends 2, 3, 6
  auto* root = const_cast<ArrowArray*>(a.array());
  ArrowArray* run_ends = root->children[0];
  static const uint8_t one_null = 0b101;  // run end 1 is null
  static const uint8_t none_null = 0b111;
  const void* own_validity = run_ends->buffers[0];
  run_ends->buffers[0] = &one_null;
  run_ends->null_count = -1;
  auto validate = [&](ValidationLevel level) {
    auto view = ArrayView::Make(a.schema());
    EXPECT_OK(view.status());
    Status st = view->SetArray(root);
    return st.ok() ? view->Validate(level) : st;
  };
  EXPECT_OK(validate(ValidationLevel::kDefault));
  Status full = validate(ValidationLevel::kFull);
  ASSERT_FALSE(full.ok());
  EXPECT_THAT(full.message(), HasSubstr("field \"r\": run ends must not contain nulls"));
  root->length = 0;  // no run is visible: the run ends must still hold no null
  EXPECT_OK(validate(ValidationLevel::kDefault));
  EXPECT_FALSE(validate(ValidationLevel::kFull).ok());
  run_ends->buffers[0] = &none_null;
  EXPECT_OK(validate(ValidationLevel::kFull));
  run_ends->buffers[0] = own_validity;  // the array's release sees its own buffers again
  run_ends->null_count = 0;
  root->length = 6;
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

// Long string columns are checked a chunk of strings at a time: every fault is found in any
// chunk, and at the places where chunks meet. 20,000 strings "éa" (3 bytes each).
TEST(Validate, LongStringColumnsFindFaultsInEveryChunk) {
  constexpr int kStrings = 20000;
  std::string json = "[";
  for (int i = 0; i < kStrings; ++i) json += i == 0 ? "\"éa\"" : ", \"éa\"";
  json += "]";
  const Field f = Field::Make("u", "s");
  ASSERT_OK(Build(f, json).Validate(ValidationLevel::kFull));
  for (int at : {0, 1, 8191, 8192, 8193, 16384, kStrings - 1}) {
    SCOPED_TRACE(at);
    {  // a byte that is no UTF-8 inside string `at`
      Array a = Build(f, json);
      Mut<uint8_t>(a.array(), 2)[3 * at + 2] = 0xFF;
      ExpectFailsAt(a, ValidationLevel::kFull, "element " + std::to_string(at) + ": invalid UTF-8");
    }
    if (at > 0) {  // string `at` starts inside the é of its own bytes
      Array a = Build(f, json);
      Mut<int32_t>(a.array(), 1)[at] = 3 * at + 1;
      ExpectFailsAt(a, ValidationLevel::kFull,
                    "element " + std::to_string(at - 1) + ": invalid UTF-8");
    }
    if (at > 0 && at < kStrings - 1) {  // offsets out of order
      Array a = Build(f, json);
      Mut<int32_t>(a.array(), 1)[at + 1] = 3 * at - 1;
      ExpectFailsAt(a, ValidationLevel::kFull,
                    "element " + std::to_string(at) + ": offset " + std::to_string(3 * at - 1) +
                        " < previous offset " + std::to_string(3 * at));
    }
  }
}

// A chunk whose bytes are all ASCII checks only its offsets' order: a string that starts inside a
// character is still found where such a chunk meets one that is not ASCII, and order faults in
// either kind of chunk, for string and large_string. 20,000 strings: "ab" up to string 8,192
// (the first chunk), then "éa" (3 bytes each).
TEST(Validate, AsciiAndOtherChunksFindFaultsWhereTheyMeet) {
  constexpr int kStrings = 20000;
  constexpr int kAscii = 8192;
  std::string json = "[";
  for (int i = 0; i < kStrings; ++i) {
    json += i == 0 ? "" : ", ";
    json += i < kAscii ? "\"ab\"" : "\"éa\"";
  }
  json += "]";
  auto start = [&](int i) { return i <= kAscii ? 2 * i : 2 * kAscii + 3 * (i - kAscii); };
  for (const char* format : {"u", "U"}) {
    SCOPED_TRACE(format);
    const Field f = Field::Make(format, "s");
    auto set_offset = [&](Array& a, int i, int64_t value) {
      if (format[0] == 'u') {
        Mut<int32_t>(a.array(), 1)[i] = static_cast<int32_t>(value);
      } else {
        Mut<int64_t>(a.array(), 1)[i] = value;
      }
    };
    ASSERT_OK(Build(f, json).Validate(ValidationLevel::kFull));
    {  // string 8,192 starts inside its own é: string 8,191 ends with a lead byte
      Array a = Build(f, json);
      set_offset(a, kAscii, start(kAscii) + 1);
      ExpectFailsAt(a, ValidationLevel::kFull, "element 8191: invalid UTF-8");
    }
    {  // string 8,193 starts inside the é of string 8,192, in the chunk that is not ASCII
      Array a = Build(f, json);
      set_offset(a, kAscii + 1, start(kAscii + 1) + 1);
      ExpectFailsAt(a, ValidationLevel::kFull, "element 8192: invalid UTF-8");
    }
    for (int at : {1, 100, kAscii - 1, kAscii + 100}) {  // offsets out of order in either kind
      SCOPED_TRACE(at);
      Array a = Build(f, json);
      set_offset(a, at + 1, start(at) - 1);
      ExpectFailsAt(a, ValidationLevel::kFull,
                    "element " + std::to_string(at) + ": offset " + std::to_string(start(at) - 1) +
                        " < previous offset " + std::to_string(start(at)));
    }
    {  // a byte that is no UTF-8 in the ASCII chunk
      Array a = Build(f, json);
      Mut<uint8_t>(a.array(), 2)[2 * 500 + 1] = 0xFF;
      ExpectFailsAt(a, ValidationLevel::kFull, "element 500: invalid UTF-8");
    }
  }
}

// String views are checked through their data buffers: a buffer the views take at least half of
// is checked whole once (then an ASCII buffer needs nothing more, and a UTF-8 one only each view's
// two ends), any other view by its own bytes. Random views over random bytes (UTF-8 text of every
// width, sometimes broken; dense and sparse buffers; inline views among them) agree with the
// rule written out: each valid view's own bytes are UTF-8.
TEST(Validate, StringViewsAgreeWithTheirOwnBytesUnderEveryBufferShortcut) {
  constexpr int kViews = 64;
  constexpr int kLong = 20;  // the builder's strings, whose bytes become the data buffer
  std::string json = "[";
  for (int i = 0; i < kViews; ++i) json += (i ? ", \"" : "\"") + std::string(kLong, 'a') + "\"";
  json += "]";
  const std::vector<std::string> chars = {"a", "b", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};
  std::mt19937_64 rng(11);
  int failed = 0;
  for (int round = 0; round < 3000; ++round) {
    Array a = Build(Field::Make("vu", "s"), json);
    ASSERT_EQ(a.array()->n_buffers, 4);  // validity, views, one data buffer, sizes
    uint8_t* data = Mut<uint8_t>(a.array(), 2);
    const int64_t size = int64_t{kViews} * kLong;
    // The data: ASCII only, or mixed text; a byte spoiled in some rounds.
    const bool ascii = rng() % 3 == 0;
    std::string text;
    while (static_cast<int64_t>(text.size()) < size) text += chars[rng() % (ascii ? 2 : 5)];
    std::memcpy(data, text.data(), static_cast<size_t>(size));
    if (rng() % 2 == 0) data[rng() % size] = static_cast<uint8_t>(rng());
    // The views: most out of line (a dense buffer) or most inline (a sparse one).
    const bool dense = rng() % 2 == 0;
    uint8_t* views = Mut<uint8_t>(a.array(), 1);
    bool want = true;
    for (int i = 0; i < kViews; ++i) {
      uint8_t* view = views + 16 * i;
      const bool out_of_line = dense ? rng() % 8 != 0 : rng() % 8 == 0;
      const auto length = static_cast<int32_t>(out_of_line ? 13 + rng() % 40 : rng() % 13);
      std::memcpy(view, &length, 4);
      if (out_of_line) {
        const auto offset = static_cast<int32_t>(rng() % static_cast<uint64_t>(size - length + 1));
        std::memcpy(view + 4, data + offset, 4);  // the prefix
        const int32_t index = 0;
        std::memcpy(view + 8, &index, 4);
        std::memcpy(view + 12, &offset, 4);
        want = want && internal::ValidateUtf8(data + offset, length);
      } else {
        std::memset(view + 4, 0, 12);
        const int64_t from = static_cast<int64_t>(rng() % static_cast<uint64_t>(size - 12));
        std::memcpy(view + 4, data + from, static_cast<size_t>(length));
        want = want && internal::ValidateUtf8(view + 4, length);
      }
    }
    const Status st = a.Validate(ValidationLevel::kFull);
    ASSERT_EQ(st.ok(), want) << "round " << round << ": " << st.message();
    if (!want) {
      EXPECT_THAT(st.message(), HasSubstr("invalid UTF-8")) << round;
      ++failed;
    }
  }
  EXPECT_GT(failed, 500);
  EXPECT_LT(failed, 2500);
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

}  // namespace
}  // namespace ferry
