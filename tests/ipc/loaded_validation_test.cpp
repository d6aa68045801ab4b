// Validation of a loaded batch: the one-pass default check (PassesDefaultQuickly) accepts a batch
// only when ArrayView's validation does, on batches whose IPC sizes are written out by hand and
// damaged one way at a time, and the decoder's verdicts and messages are the same with it and
// without it on the Arrow test vectors, their malformed files and the fuzz corpus. The writer's
// check of a producer's batch (no IPC sizes) says what its view says too, on batches damaged one
// field at a time.
#include "ipc/loaded_validation.hpp"

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ferry/ipc/decoder.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/ipc/writer.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using ipc::internal::BufferSizes;
using ipc::internal::PassesDefaultQuickly;
using ipc::internal::ValidateLoaded;

// Turns the one-pass check off for a scope.
struct WithoutOnePass {
  WithoutOnePass() { ipc::internal::SetQuickValidation(false); }
  ~WithoutOnePass() { ipc::internal::SetQuickValidation(true); }
  WithoutOnePass(const WithoutOnePass&) = delete;
  WithoutOnePass& operator=(const WithoutOnePass&) = delete;
};

// x int64, s string, l list<int32>, ls large string: three rows.
Result<Array> PlainBatch() {
  const Field root = testing::BatchField({Field::Make("l", "x"), Field::Make("u", "s"),
                                          Field::Make("+l", "l", {Field::Make("i", "item")}),
                                          Field::Make("U", "ls")});
  return testing::ArrayFromJson(root, R"([
    {"x": 1, "s": "a", "l": [1, 2], "ls": "a"},
    {"x": 2, "s": "bc", "l": [], "ls": "bc"},
    {"x": 3, "s": "", "l": [3], "ls": ""}])");
}

// PlainBatch's IPC sizes, computed by hand, the root's left out (as the decoder records them):
// x: validity, 3 x 8 bytes; s: validity, 4 x 4 offsets, 3 bytes; l: validity, 4 x 4 offsets;
// l's item: validity, 3 x 4 bytes; ls: validity, 4 x 8 offsets, 3 bytes.
BufferSizes PlainSizes() {
  BufferSizes sizes;
  sizes.sizes = {0, 24, 0, 16, 3, 0, 16, 0, 12, 0, 32, 3};
  sizes.starts = {0, 2, 5, 7, 9, 12};
  return sizes;
}

// The view's verdict (the one-pass check off) and the verdict with it on, which must agree.
Status BothVerdicts(const Array& batch, const BufferSizes& sizes) {
  Status without;
  {
    const WithoutOnePass off;
    without = ValidateLoaded(batch.schema(), batch.array(), sizes, true, ValidationLevel::kDefault,
                             ipc::internal::MessageLabel(1));
  }
  const Status with = ValidateLoaded(batch.schema(), batch.array(), sizes, true,
                                     ValidationLevel::kDefault, ipc::internal::MessageLabel(1));
  EXPECT_EQ(with.ok(), without.ok());
  EXPECT_EQ(with.message(), without.message());
  return without;
}

ArrowArray* Column(const Array& batch, int64_t i) {
  return const_cast<ArrowArray*>(batch.array())->children[i];
}

TEST(LoadedValidationTest, OnePassAcceptsAPlainBatch) {
  ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
  ASSERT_OK_AND_ASSIGN(ArrayView types, ArrayView::Make(batch.schema()));
  EXPECT_TRUE(PassesDefaultQuickly(types, batch.array(), PlainSizes(), true));
  EXPECT_OK(BothVerdicts(batch, PlainSizes()));
}

TEST(LoadedValidationTest, AStringPastItsDataFailsAsTheViewSays) {
  ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
  ASSERT_OK_AND_ASSIGN(ArrayView types, ArrayView::Make(batch.schema()));
  BufferSizes sizes = PlainSizes();
  sizes.sizes[4] = 2;  // s's data: 2 bytes, but the last offset is 3
  EXPECT_FALSE(PassesDefaultQuickly(types, batch.array(), sizes, true));
  const Status st = BothVerdicts(batch, sizes);
  EXPECT_NE(st.message().find("last offset 3 > data size 2"), std::string::npos) << st.message();

  sizes = PlainSizes();
  sizes.sizes[11] = 1;  // ls's data
  EXPECT_FALSE(PassesDefaultQuickly(types, batch.array(), sizes, true));
  EXPECT_NE(BothVerdicts(batch, sizes).message().find("last offset 3 > data size 1"),
            std::string::npos);
}

TEST(LoadedValidationTest, ANegativeFirstOffsetFailsAsTheViewSays) {
  ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
  ASSERT_OK_AND_ASSIGN(ArrayView types, ArrayView::Make(batch.schema()));
  auto* offsets = static_cast<int32_t*>(const_cast<void*>(Column(batch, 1)->buffers[1]));
  offsets[0] = -1;
  EXPECT_FALSE(PassesDefaultQuickly(types, batch.array(), PlainSizes(), true));
  EXPECT_NE(BothVerdicts(batch, PlainSizes()).message().find("first offset -1 is negative"),
            std::string::npos);
  offsets[0] = 2;  // now above the next offsets, and the last (3) is still above the first
  EXPECT_TRUE(PassesDefaultQuickly(types, batch.array(), PlainSizes(), true));
  EXPECT_OK(BothVerdicts(batch, PlainSizes()));  // the middle offsets are the full level's
}

TEST(LoadedValidationTest, AListPastItsChildFailsAsTheViewSays) {
  ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
  ASSERT_OK_AND_ASSIGN(ArrayView types, ArrayView::Make(batch.schema()));
  Column(batch, 2)->children[0]->length = 2;  // the last offset is 3
  EXPECT_FALSE(PassesDefaultQuickly(types, batch.array(), PlainSizes(), true));
  const Status st = BothVerdicts(batch, PlainSizes());
  EXPECT_NE(st.message().find("last offset 3 > child length 2"), std::string::npos) << st.message();
}

TEST(LoadedValidationTest, AShortColumnFailsAsTheViewSays) {
  ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
  ASSERT_OK_AND_ASSIGN(ArrayView types, ArrayView::Make(batch.schema()));
  Column(batch, 0)->length = 2;  // the batch has 3 rows
  EXPECT_FALSE(PassesDefaultQuickly(types, batch.array(), PlainSizes(), true));
  const Status st = BothVerdicts(batch, PlainSizes());
  EXPECT_NE(st.message().find("child 0 has length 2 < offset + length 3"), std::string::npos)
      << st.message();
}

TEST(LoadedValidationTest, NullsWithoutABitmapFailAsTheViewSays) {
  ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
  ASSERT_OK_AND_ASSIGN(ArrayView types, ArrayView::Make(batch.schema()));
  ArrowArray* x = Column(batch, 0);
  const void* bitmap = x->buffers[0];
  x->buffers[0] = nullptr;
  x->null_count = 1;
  EXPECT_FALSE(PassesDefaultQuickly(types, batch.array(), PlainSizes(), true));
  const Status st = BothVerdicts(batch, PlainSizes());
  EXPECT_NE(st.message().find("no validity buffer"), std::string::npos) << st.message();
  x->buffers[0] = bitmap;  // the builder's release frees what it made
  x->null_count = 0;
}

TEST(LoadedValidationTest, WhatTheOnePassDoesNotCoverGoesToTheView) {
  // Fewer recorded sizes than nodes: the view keeps the sizes it derives, and passes.
  ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
  ASSERT_OK_AND_ASSIGN(ArrayView types, ArrayView::Make(batch.schema()));
  BufferSizes sizes = PlainSizes();
  sizes.starts.resize(3);
  sizes.sizes.resize(5);
  EXPECT_FALSE(PassesDefaultQuickly(types, batch.array(), sizes, true));
  EXPECT_OK(BothVerdicts(batch, sizes));

  // A dictionary and a union, both valid: left to the view, which accepts them.
  const Field root = testing::BatchField(
      {Field::Dictionary("d", "i", Field::Make("u", "")),
       Field::Make("+us:0,1", "u", {Field::Make("i", "a"), Field::Make("u", "b")})});
  ASSERT_OK_AND_ASSIGN(Array other, testing::ArrayFromJson(root, R"([
    {"d": "p", "u": [0, 5]}, {"d": "q", "u": [1, "z"]}])"));
  ASSERT_OK_AND_ASSIGN(ArrayView other_types, ArrayView::Make(other.schema()));
  // d: validity, 2 x 4 indices; u: type ids (2), children a (validity, 2 x 4) and b (validity,
  // 3 x 4 offsets, 1 byte).
  BufferSizes other_sizes;
  other_sizes.sizes = {0, 8, 2, 0, 8, 0, 12, 1};
  other_sizes.starts = {0, 2, 3, 5, 8};
  EXPECT_FALSE(PassesDefaultQuickly(other_types, other.array(), other_sizes, true));
  EXPECT_OK(BothVerdicts(other, other_sizes));
}

// Every stream the decoder reads at the default level: its batch count and first error.
std::string DecodeAtDefault(const SharedBytes& bytes) {
  ipc::ReadOptions options;
  options.validation = ValidationLevel::kDefault;
  ipc::Decoder decoder(options);
  const Status st = decoder.Consume(bytes);
  int64_t batches = 0;
  while (auto m = decoder.Next()) {
    if (m->kind == ipc::MessageKind::kRecordBatch) ++batches;
  }
  return std::to_string(batches) + " batches; " + (st.ok() ? "ok" : st.message());
}

std::vector<fs::path> StreamsToDecode() {
  std::vector<fs::path> out;
  const std::string vectors = testing::SharedTestDataDir() + "/arrow-testing";
  if (fs::exists(vectors + "/ipc-integration")) {
    for (const auto& f : fs::recursive_directory_iterator(vectors + "/ipc-integration")) {
      if (f.path().extension() == ".stream") out.push_back(f.path());
    }
  }
  if (fs::exists(vectors + "/ipc-malformed")) {
    for (const auto& f : fs::directory_iterator(vectors + "/ipc-malformed")) {
      out.push_back(f.path());
    }
  }
  const std::string corpus = testing::SourceDir() + "/fuzz/corpus/ipc_stream";
  for (const auto& f : fs::directory_iterator(corpus)) out.push_back(f.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(LoadedValidationTest, TheDecoderSaysTheSameWithAndWithoutTheOnePass) {
  const std::vector<fs::path> streams = StreamsToDecode();
  if (streams.size() < 20) GTEST_SKIP() << "../shared/testdata/arrow-testing is not present";
  int decoded = 0;
  for (const fs::path& path : streams) {
    ASSERT_OK_AND_ASSIGN(SharedBytes bytes, SharedBytes::MapFile(path.string()));
    std::string without;
    {
      const WithoutOnePass off;
      without = DecodeAtDefault(bytes);
    }
    EXPECT_EQ(DecodeAtDefault(bytes), without) << path;
    if (without.find("; ok") != std::string::npos && without.rfind("0 batches", 0) != 0) {
      ++decoded;
    }
  }
  EXPECT_GT(decoded, 40);  // the integration cases with batches
}

// What the writer says of `batch` (its first error, or "ok"), with the one-pass check off and on:
// the two must agree.
std::string WriterVerdict(const Array& batch) {
  const auto write = [&] {
    ipc::MemorySink sink;
    Result<ipc::StreamWriter> writer = ipc::StreamWriter::Open(&sink, batch.schema());
    if (!writer.ok()) return writer.status().message();
    const Status st = writer->WriteBatch(batch.array());
    return st.ok() ? std::string("ok") : st.message();
  };
  std::string without;
  {
    const WithoutOnePass off;
    without = write();
  }
  EXPECT_EQ(write(), without);
  return without;
}

TEST(LoadedValidationTest, AProducersPlainBatchPassesInOnePass) {
  ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
  ASSERT_OK_AND_ASSIGN(ArrayView types, ArrayView::Make(batch.schema()));
  EXPECT_TRUE(PassesDefaultQuickly(types, batch.array()));
  EXPECT_EQ(WriterVerdict(batch), "ok");
  // A slice (an offset) is the view's to check.
  Column(batch, 0)->offset = 1;
  Column(batch, 0)->length = 2;
  const_cast<ArrowArray*>(batch.array())->length = 2;
  EXPECT_FALSE(PassesDefaultQuickly(types, batch.array()));
}

TEST(LoadedValidationTest, AProducersDamagedBatchFailsAsTheWritersViewSays) {
  ASSERT_OK_AND_ASSIGN(ArrayView types, ArrayView::Make(PlainBatch()->schema()));
  struct Damage {
    const char* what;
    std::function<void(Array&)> apply;
    const char* says;
  };
  const std::vector<Damage> damages = {
      {"a negative first offset",
       [](Array& b) { static_cast<int32_t*>(const_cast<void*>(Column(b, 1)->buffers[1]))[0] = -1; },
       "first offset -1 is negative"},
      {"offsets going backwards",
       [](Array& b) {
         auto* offsets = static_cast<int32_t*>(const_cast<void*>(Column(b, 1)->buffers[1]));
         offsets[0] = 1;
         offsets[3] = 0;
       },
       "last offset 0 < first offset 1"},
      {"a large string's offsets going backwards",
       [](Array& b) { static_cast<int64_t*>(const_cast<void*>(Column(b, 3)->buffers[1]))[3] = -4; },
       "last offset -4 < first offset"},
      {"a list past its child", [](Array& b) { Column(b, 2)->children[0]->length = 2; },
       "last offset 3 > child length 2"},
      {"a short column", [](Array& b) { Column(b, 0)->length = 2; },
       "child 0 has length 2 < offset + length 3"},
      {"nulls without a bitmap", [](Array& b) { Column(b, 0)->null_count = 1; },
       "no validity buffer"},
      {"a null count below -1", [](Array& b) { Column(b, 1)->null_count = -2; },
       "null_count is -2"},
      {"a buffer too few", [](Array& b) { Column(b, 1)->n_buffers = 2; }, "n_buffers is 2"},
      {"no values", [](Array& b) { Column(b, 0)->buffers[1] = nullptr; }, "buffer 1 is NULL"},
      {"a negative length", [](Array& b) { Column(b, 0)->length = -1; }, "length is negative"},
  };
  for (const Damage& d : damages) {
    ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
    // Nulls without a bitmap: the column's bitmap goes (its builder made none for no nulls).
    d.apply(batch);
    EXPECT_FALSE(PassesDefaultQuickly(types, batch.array())) << d.what;
    const std::string says = WriterVerdict(batch);
    EXPECT_NE(says.find(d.says), std::string::npos) << d.what << ": " << says;
    EXPECT_NE(says.find("does not match the schema or is invalid"), std::string::npos) << says;
  }
}

TEST(LoadedValidationTest, TheWriterSaysTheSameWithAndWithoutTheOnePass) {
  // Every column's length, null count and first and last offsets, and the list's child's length,
  // set in turn to values around the ones that pass: the writer's verdict must not depend on the
  // one-pass check. (Values past the buffers' ends are left out: a producer's C array does not
  // say how long its buffers are, so a length or offset that lies beyond them is read there.)
  const std::vector<int64_t> values = {-2, -1, 0, 1, 2, 3};
  int failed = 0;
  int passed = 0;
  const auto count = [&](const std::string& verdict) { ++(verdict == "ok" ? passed : failed); };
  for (int64_t c = 0; c < 4; ++c) {
    for (const int64_t v : values) {
      {
        ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
        Column(batch, c)->length = v;
        count(WriterVerdict(batch));
      }
      {
        ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
        Column(batch, c)->null_count = v;
        count(WriterVerdict(batch));
      }
      if (c == 0) continue;  // x has no offsets
      for (const int64_t at : {int64_t{0}, int64_t{3}}) {
        ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
        void* offsets = const_cast<void*>(Column(batch, c)->buffers[1]);
        if (c == 3) {
          static_cast<int64_t*>(offsets)[at] = v;
        } else {
          static_cast<int32_t*>(offsets)[at] = static_cast<int32_t>(v);
        }
        count(WriterVerdict(batch));
      }
    }
  }
  for (const int64_t v : values) {
    ASSERT_OK_AND_ASSIGN(Array batch, PlainBatch());
    Column(batch, 2)->children[0]->length = v;
    count(WriterVerdict(batch));
  }
  EXPECT_GT(failed, 30);
  EXPECT_GT(passed, 8);
}

}  // namespace
}  // namespace ferry
