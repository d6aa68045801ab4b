// Flatbuffer vectors of 64-bit structs (Block, FieldNode) that do not start on an 8-byte
// boundary: flatbuffers' verifier lets them through (it checks 4), and reading their fields in
// place is undefined behaviour, so ferry refuses them and names the vector. The damaged copies of
// an official vector are made here by hand, from the flatbuffers layout: a table starts with the
// signed distance back to its vtable, the vtable lists each field's offset in the table, and a
// vector field holds the distance forward to the vector (a uint32 count, then the elements).
#include <cstring>

#include "ferry/ipc/reader.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void Store32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// The position of the slot of field `field` in the table at `table`: the table's first word is
// the distance back to its vtable, whose entries from its fifth byte are the slots' offsets.
size_t FieldSlot(const std::vector<uint8_t>& b, size_t table, int field) {
  const size_t vtable = table - static_cast<size_t>(static_cast<int32_t>(Load32(&b[table])));
  uint16_t at = 0;
  std::memcpy(&at, &b[vtable + 4 + 2 * static_cast<size_t>(field)], 2);
  EXPECT_NE(at, 0) << "field " << field << " is absent";
  return table + at;
}

// The position of the table or vector that field `field` of the table at `table` points to.
size_t FieldTarget(const std::vector<uint8_t>& b, size_t table, int field) {
  const size_t slot = FieldSlot(b, table, field);
  return slot + Load32(&b[slot]);
}

// Copy the vector of `element_size`-byte elements that field `field` of the table at `table`
// points to onto the end of `b`, with its elements 4 bytes past an 8-byte boundary, and point the
// field at the copy. Returns where the elements now start.
size_t MisalignVector(std::vector<uint8_t>* b, size_t table, int field, size_t element_size) {
  const size_t slot = FieldSlot(*b, table, field);
  const size_t vector = slot + Load32(&(*b)[slot]);
  const size_t bytes = 4 + Load32(&(*b)[vector]) * element_size;
  const std::vector<uint8_t> copy(b->begin() + static_cast<ptrdiff_t>(vector),
                                  b->begin() + static_cast<ptrdiff_t>(vector + bytes));
  b->resize((b->size() + 7) / 8 * 8, 0);
  const size_t moved = b->size();
  b->insert(b->end(), copy.begin(), copy.end());
  b->resize((b->size() + 7) / 8 * 8, 0);
  Store32(&(*b)[slot], static_cast<uint32_t>(moved - slot));
  return moved + 4;
}

std::vector<uint8_t> Load(const std::string& name) {
  const std::string path =
      testing::SharedTestDataDir() + "/arrow-testing/ipc-integration/1.0.0-littleendian/" + name;
  Result<SharedBytes> bytes = SharedBytes::MapFile(path);
  EXPECT_TRUE(bytes.ok()) << path;
  if (!bytes.ok()) return {};
  return std::vector<uint8_t>(bytes->data, bytes->data + bytes->size);
}

TEST(FlatbufferAlignment, FooterBlocksOffTheBoundaryAreRefused) {
  const std::vector<uint8_t> file = Load("generated_primitive.arrow_file");
  ASSERT_GT(file.size(), 16u);
  const size_t length = Load32(&file[file.size() - 10]);
  const size_t start = file.size() - 10 - length;
  std::vector<uint8_t> footer(file.begin() + static_cast<ptrdiff_t>(start), file.end() - 10);
  // Footer: version, schema, dictionaries, recordBatches (Block: 24 bytes).
  const size_t elements = MisalignVector(&footer, Load32(footer.data()), 3, 24);
  ASSERT_EQ(elements % 8, 4u);
  std::vector<uint8_t> damaged(file.begin(), file.begin() + static_cast<ptrdiff_t>(start));
  damaged.insert(damaged.end(), footer.begin(), footer.end());
  damaged.resize(damaged.size() + 4);
  Store32(&damaged[damaged.size() - 4], static_cast<uint32_t>(footer.size()));
  damaged.insert(damaged.end(), file.end() - 6, file.end());

  Result<ipc::FileReader> reader = ipc::FileReader::Open(SharedBytes::Borrow(damaged));
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().message(),
            "the footer's recordBatches vector starts at byte " + std::to_string(elements) +
                " of its flatbuffer, not on the 8-byte boundary its 64-bit fields need");
}

TEST(FlatbufferAlignment, BatchNodesOffTheBoundaryAreRefused) {
  const std::vector<uint8_t> stream = Load("generated_primitive.stream");
  ASSERT_GT(stream.size(), 16u);
  // The schema message (no body), then the first record batch's metadata.
  const size_t batch = 8 + Load32(&stream[4]);
  ASSERT_EQ(Load32(&stream[batch]), 0xFFFFFFFFu);
  const size_t length = Load32(&stream[batch + 4]);
  std::vector<uint8_t> metadata(stream.begin() + static_cast<ptrdiff_t>(batch + 8),
                                stream.begin() + static_cast<ptrdiff_t>(batch + 8 + length));
  // Message: version, header_type, header (the RecordBatch); RecordBatch: length, nodes
  // (FieldNode: 16 bytes).
  const size_t record_batch = FieldTarget(metadata, Load32(metadata.data()), 2);
  const size_t elements = MisalignVector(&metadata, record_batch, 1, 16);
  ASSERT_EQ(elements % 8, 4u);
  std::vector<uint8_t> damaged(stream.begin(), stream.begin() + static_cast<ptrdiff_t>(batch));
  damaged.insert(damaged.end(), {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0});
  Store32(&damaged[damaged.size() - 4], static_cast<uint32_t>(metadata.size()));
  damaged.insert(damaged.end(), metadata.begin(), metadata.end());
  damaged.insert(damaged.end(), stream.begin() + static_cast<ptrdiff_t>(batch + 8 + length),
                 stream.end());

  Result<std::vector<std::string>> read = testing::ReadIpcAsJson(SharedBytes::Borrow(damaged));
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(
                "the metadata's nodes vector starts at byte " + std::to_string(elements) +
                " of its flatbuffer, not on the 8-byte boundary its 64-bit fields need"),
            std::string::npos)
      << read.status().message();
}

// A union whose type is set and whose table is absent also passes flatbuffers' verifier (the
// ipc_stream fuzzer found a DictionaryBatch without its table); it is refused, not read.
TEST(FlatbufferAlignment, AMessageWithoutItsHeaderIsRefused) {
  std::vector<uint8_t> stream = Load("generated_dictionary.stream");
  ASSERT_GT(stream.size(), 16u);
  // The schema message (no body), then the first dictionary batch's metadata; its Message table
  // loses field 2 (header) from its vtable.
  const size_t dictionary = 8 + Load32(&stream[4]);
  ASSERT_EQ(Load32(&stream[dictionary]), 0xFFFFFFFFu);
  const size_t metadata = dictionary + 8;
  const size_t message = metadata + Load32(&stream[metadata]);
  const size_t vtable =
      message - static_cast<size_t>(static_cast<int32_t>(Load32(&stream[message])));
  ASSERT_EQ(stream[FieldSlot(stream, message, 1)], 2)  // DictionaryBatch
      << "the second message is not a DictionaryBatch";
  stream[vtable + 4 + 2 * 2] = 0;
  stream[vtable + 4 + 2 * 2 + 1] = 0;

  Result<std::vector<std::string>> read = testing::ReadIpcAsJson(SharedBytes::Borrow(stream));
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(
                "the message says its header is a DictionaryBatch but carries none"),
            std::string::npos)
      << read.status().message();
}

}  // namespace
}  // namespace ferry
