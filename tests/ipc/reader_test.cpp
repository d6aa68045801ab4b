// Reading the official Arrow IPC vectors (written by Arrow C++ releases 0.14 to 21): the stream
// and file form of every case must read and agree with each other, zero-copy; the malformed
// vectors and damaged copies of good ones must fail with an error, never crash.
#include "ferry/ipc/reader.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

std::string VectorsDir() { return testing::SharedTestDataDir() + "/arrow-testing"; }

std::vector<std::string> VectorFiles() {
  std::vector<std::string> out;
  const fs::path dir = VectorsDir() + "/ipc-integration";
  if (!fs::exists(dir)) return out;
  for (const auto& version : fs::directory_iterator(dir)) {
    for (const auto& f : fs::directory_iterator(version.path())) {
      if (f.path().extension() == ".stream") {
        out.push_back(version.path().filename().string() + "/" + f.path().stem().string());
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

class IntegrationVectorTest : public ::testing::TestWithParam<std::string> {};

TEST_P(IntegrationVectorTest, StreamAndFileAgreeAndReadInPlace) {
  const std::string base = VectorsDir() + "/ipc-integration/" + GetParam();
  ASSERT_OK_AND_ASSIGN(SharedBytes stream, SharedBytes::MapFile(base + ".stream"));
  ASSERT_OK_AND_ASSIGN(SharedBytes file, SharedBytes::MapFile(base + ".arrow_file"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> from_stream, testing::ReadIpcAsJson(stream));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> from_file, testing::ReadIpcAsJson(file));
  EXPECT_EQ(from_stream, from_file);

  // Uncompressed batches point into the mapping.
  ASSERT_OK_AND_ASSIGN(ipc::FileReader reader, ipc::FileReader::Open(file));
  EXPECT_EQ(reader.num_record_batches(), static_cast<int64_t>(from_file.size()));
  const bool compressed = GetParam().find("compression") != std::string::npos;
  for (int64_t i = 0; i < reader.num_record_batches(); ++i) {
    ASSERT_OK_AND_ASSIGN(UniqueArray batch, reader.ReadRecordBatch(i));
    std::vector<const void*> pointers;
    testing::CollectBuffers(batch.get(), &pointers);
    for (const void* p : pointers) {
      if (p == nullptr || compressed) continue;
      const auto* b = static_cast<const uint8_t*>(p);
      const bool inside = b >= file.data && b < file.data + file.size;
      // Outside the mapping are only the zero-length placeholder and the synthesized variadic
      // size arrays of view types.
      if (!inside) continue;
      EXPECT_EQ((b - file.data) % 8, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ArrowTesting, IntegrationVectorTest, ::testing::ValuesIn(VectorFiles()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(IntegrationVectorTest, VectorsArePresent) {
  if (VectorFiles().empty()) GTEST_SKIP() << "../shared/testdata/arrow-testing is not present";
  EXPECT_EQ(VectorFiles().size(), 69u);  // the cases across the six writer versions
}

TEST(IpcReaderTest, PrimitiveValuesMatchTheVector) {
  // From generated_primitive.json.gz: batches of 17 and 20 rows; bool_nonnullable starts
  // false, true, true, true, true.
  const std::string path = VectorsDir() + "/ipc-integration/cpp-21.0.0/generated_primitive.stream";
  if (!fs::exists(path)) GTEST_SKIP() << "vector not present: " << path;
  ASSERT_OK_AND_ASSIGN(SharedBytes bytes, SharedBytes::MapFile(path));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> read, testing::ReadIpcAsJson(bytes));
  ASSERT_EQ(read.size(), 2u);
  const auto first = nlohmann::json::parse(read[0]);
  EXPECT_EQ(first.size(), 17u);
  EXPECT_EQ(nlohmann::json::parse(read[1]).size(), 20u);
  std::vector<bool> head;
  for (size_t i = 0; i < 5; ++i) head.push_back(first[i]["bool_nonnullable"].get<bool>());
  EXPECT_EQ(head, (std::vector<bool>{false, true, true, true, true}));
}

// Read `bytes` completely; the result is an error or a list of batches, never a crash.
Status ReadFully(const SharedBytes& bytes) {
  Result<std::vector<std::string>> r = testing::ReadIpcAsJson(bytes);
  return r.status();
}

TEST(IpcReaderTest, MalformedVectorsFailCleanly) {
  const fs::path dir = VectorsDir() + "/ipc-malformed";
  if (!fs::exists(dir)) GTEST_SKIP() << "no malformed vectors at " << dir;
  int files = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    ASSERT_OK_AND_ASSIGN(SharedBytes bytes, SharedBytes::MapFile(f.path().string()));
    Status st = ReadFully(bytes);
    if (!st.ok()) {
      EXPECT_FALSE(st.message().empty());
    }
    ++files;
  }
  EXPECT_GT(files, 0);
}

TEST(IpcReaderTest, EveryTruncationFailsOrReadsAPrefix) {
  const std::string path =
      VectorsDir() + "/ipc-integration/cpp-21.0.0/generated_nested_dictionary.stream";
  if (!fs::exists(path)) GTEST_SKIP() << "vector not present: " << path;
  ASSERT_OK_AND_ASSIGN(SharedBytes whole, SharedBytes::MapFile(path));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> all, testing::ReadIpcAsJson(whole));
  for (int64_t n = 0; n < whole.size; n += 1 + n / 64) {
    ASSERT_OK_AND_ASSIGN(SharedBytes cut, SharedBytes::Copy({whole.data, n}));
    Result<std::vector<std::string>> r = testing::ReadIpcAsJson(cut);
    if (r.ok()) {
      // A stream may end between messages: what was read is a prefix of the whole.
      ASSERT_LE(r->size(), all.size());
      for (size_t i = 0; i < r->size(); ++i) EXPECT_EQ((*r)[i], all[i]);
    } else {
      EXPECT_FALSE(r.status().message().empty());
    }
  }
}

TEST(IpcReaderTest, DamagedBytesNeverCrash) {
  for (const char* name :
       {"generated_union.stream", "generated_map.arrow_file", "generated_binary_view.stream",
        "generated_run_end_encoded.arrow_file"}) {
    const std::string path = VectorsDir() + "/ipc-integration/cpp-21.0.0/" + name;
    if (!fs::exists(path)) GTEST_SKIP() << "vector not present: " << path;
    ASSERT_OK_AND_ASSIGN(SharedBytes whole, SharedBytes::MapFile(path));
    std::vector<uint8_t> copy(whole.data, whole.data + whole.size);
    // Overwrite bytes across the whole file (metadata, body and footer) with hostile values.
    for (size_t i = 0; i < copy.size(); i += 1 + copy.size() / 800) {
      for (uint8_t value : {uint8_t{0xFF}, uint8_t{0x7F}, uint8_t{0x00}}) {
        const uint8_t saved = copy[i];
        copy[i] = value;
        ASSERT_OK_AND_ASSIGN(SharedBytes damaged, SharedBytes::Copy(copy));
        (void)ReadFully(damaged);
        copy[i] = saved;
      }
    }
  }
}

TEST(IpcReaderTest, FileErrorsNameWhatIsWrong) {
  const uint8_t junk[32] = {'A', 'R', 'R', 'O', 'W', '1', 0, 0};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "does not end with the ARROW1 magic",
                     ipc::FileReader::Open(SharedBytes::Borrow(junk)));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "too few",
                     ipc::FileReader::Open(SharedBytes::Borrow({junk, 10})));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "ends before its Schema",
                     ipc::ReadStream(SharedBytes::Borrow({junk, 0})));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "/no/such/file", ipc::ReadPath("/no/such/file"));
}

}  // namespace
}  // namespace ferry
