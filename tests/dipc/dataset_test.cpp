// Datasets served from IPC files: every element is checked until one pass has read the whole file,
// then passes run the default checks. A string byte changed on disk is the oracle: full validation
// names it, the default checks do not read string data.
#include "ferry/dipc/dataset.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::dipc {
namespace {

using Json = nlohmann::json;

constexpr int kMarkedBatches = 3;
constexpr int kMarkedRows = 40;

// An IPC file of kMarkedBatches batches (an int64 and a string column); batch 1 holds the string
// "MARKER" once. Returns its path and the file offset of that string's first byte; the file is
// removed with its last owner.
struct MarkedFile {
  std::string path;
  off_t marker = -1;

  MarkedFile() = default;
  MarkedFile(MarkedFile&& other) noexcept
      : path(std::exchange(other.path, {})), marker(other.marker) {}
  MarkedFile& operator=(MarkedFile&&) = delete;
  ~MarkedFile() {
    if (!path.empty()) std::remove(path.c_str());
  }
};

Result<MarkedFile> WriteMarkedFile(const std::string& name) {
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches;
  for (int b = 0; b < kMarkedBatches; ++b) {
    Json rows = Json::array();
    for (int i = 0; i < kMarkedRows; ++i) {
      const bool marked = b == 1 && i == kMarkedRows / 2;
      // Appended, not "v" + std::string: GCC 12's bogus -Wrestrict in Release (GCC PR 105651).
      std::string value = "v";
      value += std::to_string(i);
      rows.push_back(Json{{"x", b * kMarkedRows + i}, {"s", marked ? "MARKER" : value}});
    }
    FERRY_ASSIGN_OR_RAISE(
        Array a,
        testing::ArrayFromJson(testing::BatchField({Field::Make("l", "x"), Field::Make("u", "s")}),
                               rows.dump()));
    UniqueSchema s;
    batches.push_back(testing::ToCpuDeviceArray(std::move(a), &s));
    schema = std::move(s);
  }
  std::vector<const ArrowArray*> arrays;
  for (const UniqueDeviceArray& b : batches) arrays.push_back(&b->array);
  FERRY_ASSIGN_OR_RAISE(SharedBytes bytes, testing::WriteIpc(schema.get(), arrays, true));
  MarkedFile out;
  out.path = testing::ScratchPath(name);
  const std::string text(reinterpret_cast<const char*>(bytes.data),
                         static_cast<size_t>(bytes.size));
  const size_t at = text.find("MARKER");
  if (at == std::string::npos || text.find("MARKER", at + 1) != std::string::npos) {
    return Status::Invalid("the written file does not hold MARKER exactly once");
  }
  out.marker = static_cast<off_t>(at);
  FILE* f = std::fopen(out.path.c_str(), "wb");
  if (f == nullptr) return Status::Invalid("cannot write " + out.path);
  const size_t wrote = std::fwrite(bytes.data, 1, static_cast<size_t>(bytes.size), f);
  std::fclose(f);
  if (wrote != static_cast<size_t>(bytes.size)) return Status::Invalid("short write");
  return out;
}

// Write one byte of the file in place (the server's shared mapping sees it at once).
void Poke(const MarkedFile& f, uint8_t byte) {
  const int fd = open(f.path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, &byte, 1, f.marker), 1);
  close(fd);
}

// Read up to `limit` batches of a fresh pass: the batches read, and the status that ended it
// (OK at the end of the file or at the limit).
struct Pass {
  int batches = 0;
  Status status;
};

Pass ReadPass(Dataset& dataset, int limit = kMarkedBatches + 1) {
  Pass out;
  Result<std::unique_ptr<DatasetReader>> reader = dataset.Open();
  if (!reader.ok()) {
    out.status = reader.status();
    return out;
  }
  while (out.batches < limit) {
    Result<const ArrowDeviceArray*> next = (*reader)->Next();
    if (!next.ok()) {
      out.status = next.status();
      return out;
    }
    if (*next == nullptr) break;
    EXPECT_EQ((*next)->array.length, kMarkedRows);
    ++out.batches;
  }
  return out;
}

TEST(PathDataset, EveryElementIsCheckedUntilOnePassReadsTheWholeFile) {
  ASSERT_OK_AND_ASSIGN(MarkedFile f, WriteMarkedFile("dataset_checked_once.arrow"));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Dataset> dataset, Dataset::FromPath(f.path));

  // A pass left after its first batch checked only that batch: the file is not yet trusted.
  Pass partial = ReadPass(*dataset, 1);
  ASSERT_OK(partial.status);
  EXPECT_EQ(partial.batches, 1);
  Poke(f, 0xFF);
  Pass refused = ReadPass(*dataset);
  EXPECT_EQ(refused.batches, 1);
  ASSERT_FALSE(refused.status.ok());
  EXPECT_NE(refused.status.message().find("invalid UTF-8"), std::string::npos)
      << refused.status.message();

  // A whole pass over the good file, with every element checked.
  Poke(f, 'M');
  Pass whole = ReadPass(*dataset);
  ASSERT_OK(whole.status);
  EXPECT_EQ(whole.batches, kMarkedBatches);

  // Later passes run the default checks, which do not read string data: the byte changed on
  // disk (a documented limit) now goes through to the client, whose own checks are its own.
  Poke(f, 0xFF);
  Pass later = ReadPass(*dataset);
  ASSERT_OK(later.status);
  EXPECT_EQ(later.batches, kMarkedBatches);
}

TEST(PathDataset, AFileThatFailsIsCheckedInFullOnEveryPass) {
  ASSERT_OK_AND_ASSIGN(MarkedFile f, WriteMarkedFile("dataset_never_checked.arrow"));
  Poke(f, 0xFF);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Dataset> dataset, Dataset::FromPath(f.path));
  for (int pass = 0; pass < 3; ++pass) {
    Pass p = ReadPass(*dataset);
    EXPECT_EQ(p.batches, 1) << "pass " << pass;
    ASSERT_FALSE(p.status.ok()) << "pass " << pass;
    EXPECT_NE(p.status.message().find("invalid UTF-8"), std::string::npos) << p.status.message();
  }
}

}  // namespace
}  // namespace ferry::dipc
