// flight/sessions and flight/batch_slices: how session options are checked and normalised, how a
// session table opens, sets and closes sessions, and how DoGet cuts an oversized batch's rows,
// against hand-computed values.
#include "flight/sessions.hpp"

#include <gtest/gtest.h>

#include "flight/batch_slices.hpp"
#include "support/test_util.hpp"

namespace ferry::flight::internal {
namespace {

OptionValue Normalised(const std::string& name, const OptionValue& value) {
  std::variant<OptionValue, OptionError> v = NormaliseOption(name, value);
  EXPECT_TRUE(std::holds_alternative<OptionValue>(v)) << name;
  return std::holds_alternative<OptionValue>(v) ? std::get<OptionValue>(v) : OptionValue{};
}

OptionError Refused(const std::string& name, const OptionValue& value) {
  std::variant<OptionValue, OptionError> v = NormaliseOption(name, value);
  EXPECT_TRUE(std::holds_alternative<OptionError>(v)) << name;
  return std::holds_alternative<OptionError>(v) ? std::get<OptionError>(v)
                                                : OptionError::kInvalidName;
}

TEST(SessionOptions, ValuesAreCheckedAndNormalised) {
  EXPECT_EQ(Normalised("compression", std::string(" LZ4 ")), OptionValue(std::string("lz4_frame")));
  EXPECT_EQ(Normalised("compression", std::string("zstd")), OptionValue(std::string("zstd")));
  EXPECT_EQ(Normalised("parallelism", std::string("8")), OptionValue(int64_t{8}));
  EXPECT_EQ(Normalised("parallelism", 2.0), OptionValue(int64_t{2}));
  EXPECT_EQ(Normalised("body_type", int64_t{0}), OptionValue(int64_t{0}));
  EXPECT_EQ(Normalised("target_device", std::string("CUDA:1")), OptionValue(std::string("cuda:1")));
  EXPECT_EQ(Normalised("target_device", std::string("cpu:0")), OptionValue(std::string("cpu")));
  EXPECT_EQ(Normalised("parallelism", std::monostate{}), OptionValue(std::monostate{}));

  EXPECT_EQ(Refused("colour", std::string("blue")), OptionError::kInvalidName);
  EXPECT_EQ(Refused("compression", int64_t{1}), OptionError::kInvalidValue);
  EXPECT_EQ(Refused("compression", std::string("gzip")), OptionError::kInvalidValue);
  EXPECT_EQ(Refused("parallelism", int64_t{0}), OptionError::kInvalidValue);
  EXPECT_EQ(Refused("parallelism", 1.5), OptionError::kInvalidValue);
  EXPECT_EQ(Refused("parallelism", std::string("4x")), OptionError::kInvalidValue);
  EXPECT_EQ(Refused("body_type", int64_t{2}), OptionError::kInvalidValue);
  EXPECT_EQ(Refused("target_device", std::string("tpu:0")), OptionError::kInvalidValue);
  EXPECT_EQ(Refused("target_device", std::string("cuda:")), OptionError::kInvalidValue);
  EXPECT_EQ(Refused("target_device", true), OptionError::kInvalidValue);
}

TEST(SessionTable, OpensSetsAndCloses) {
  SessionTable table;
  std::string id;
  const std::map<std::string, OptionValue> first{{"compression", std::string("zstd")},
                                                 {"nope", int64_t{1}}};
  ASSERT_OK_AND_ASSIGN(auto errors, table.Set(&id, first));
  ASSERT_EQ(id.size(), 32u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors["nope"], OptionError::kInvalidName);
  EXPECT_EQ(table.CompressionOf(id), ipc::Compression::kZstd);
  std::string again = id;
  ASSERT_OK(table.Set(&again, {{"compression", std::monostate{}}}).status());
  EXPECT_EQ(again, id);
  ASSERT_OK_AND_ASSIGN(SessionValues values, table.Get(id));
  EXPECT_TRUE(values.empty());
  EXPECT_EQ(table.size(), 1u);
  ASSERT_OK(table.Close(id));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "names no open session", table.Get(id));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "names no open session", table.Close(id));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "no session to close", table.Close(""));
  ASSERT_OK_AND_ASSIGN(values, table.Get(""));
  EXPECT_TRUE(values.empty());
}

TEST(BatchSlices, RangesAreMultiplesOf64RowsAndCoverEveryRow) {
  using Ranges = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(SliceRanges(1000, 3), (Ranges{{0, 384}, {384, 384}, {768, 232}}));
  EXPECT_EQ(SliceRanges(128, 2), (Ranges{{0, 64}, {64, 64}}));
  EXPECT_EQ(SliceRanges(100, 1), (Ranges{{0, 100}}));
  // 2.5 GiB of int64 in three pieces, as DoGet cuts it.
  const int64_t rows = (int64_t{5} << 30) / 2 / 8;
  const Ranges r = SliceRanges(rows, 3);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].second % 64, 0);
  EXPECT_EQ(r[2].first + r[2].second, rows);
  for (const auto& [offset, length] : r) EXPECT_LT(length * 8, kMaxMessageBody);
}

TEST(BatchSlices, ColumnsSelectTheRowsOfTheBatch) {
  int64_t values[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  const void* column_buffers[2] = {nullptr, values};
  ArrowArray column{};
  column.length = 8;
  column.n_buffers = 2;
  column.buffers = column_buffers;
  column.release = [](ArrowArray* a) { a->release = nullptr; };
  ArrowArray* children[1] = {&column};
  const void* top_buffers[1] = {nullptr};
  ArrowDeviceArray batch{};
  batch.array.length = 6;
  batch.array.offset = 2;  // the batch is itself a slice: rows 2..7
  batch.array.n_buffers = 1;
  batch.array.buffers = top_buffers;
  batch.array.n_children = 1;
  batch.array.children = children;
  batch.array.release = column.release;
  batch.device_type = ARROW_DEVICE_CPU;
  batch.device_id = -1;
  BatchSlice slice(batch, 1, 3);  // rows 3, 4, 5 of the column
  const ArrowArray& s = slice.get()->array;
  EXPECT_EQ(s.length, 3);
  EXPECT_EQ(s.offset, 0);
  ASSERT_EQ(s.n_children, 1);
  EXPECT_EQ(s.children[0]->offset, 3);
  EXPECT_EQ(s.children[0]->length, 3);
  EXPECT_EQ(s.children[0]->buffers[1], values);
  EXPECT_EQ(slice.get()->device_type, ARROW_DEVICE_CPU);
  EXPECT_NE(s.release, nullptr);
}

}  // namespace
}  // namespace ferry::flight::internal
