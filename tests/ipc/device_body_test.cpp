// Bodies in device memory (ReadOptions::body_on_device), as CUDA IPC bodies reach a client:
// decoded over pages the host cannot read (PROT_NONE, as the stand-in CUDA driver maps device
// memory), each buffer bounds-checked and none read; what would read one is refused by name.
#include <sys/mman.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ferry/ipc/decoder.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/ipc/writer.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

// Each message's metadata and where its buffers lie in a body region laid out 64-aligned, one
// body after the other (as a server lays out kept bodies).
class LayoutSink final : public ipc::MessageSink {
 public:
  struct Message {
    std::vector<uint8_t> metadata;
    bool has_body = false;
    std::vector<ipc::BufferLocation> buffers;
  };
  Status WriteMessage(const ipc::EncodedMessage& m) override {
    Message out;
    out.metadata.assign(m.metadata.begin(), m.metadata.end());
    out.has_body = m.has_body;
    for (const ipc::BodyBuffer& b : m.buffers) out.buffers.push_back({used + b.offset, b.length});
    used += (m.body_length + 63) / 64 * 64;
    messages.push_back(std::move(out));
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }
  std::vector<Message> messages;
  int64_t used = 0;
};

Result<LayoutSink> Lay(ipc::WriteOptions options) {
  const Field root = testing::BatchField({Field::Make("l", "x"), Field::Make("u", "s"),
                                          Field::Dictionary("d", "i", Field::Make("u", "")),
                                          Field::Make("+l", "list", {Field::Make("i", "item")})});
  FERRY_ASSIGN_OR_RAISE(Array batch, testing::ArrayFromJson(root, R"([
    {"x": 1, "s": "one", "d": "a", "list": [1, 2]},
    {"x": null, "s": null, "d": "b", "list": null},
    {"x": 3, "s": "three", "d": "a", "list": []}])"));
  LayoutSink sink;
  FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter writer,
                        ipc::StreamWriter::Open(&sink, batch.schema(), options));
  FERRY_RETURN_NOT_OK(writer.WriteBatch(batch.array()));
  FERRY_RETURN_NOT_OK(writer.Close());
  return sink;
}

// Pages the host may not touch: any read of them kills the test.
SharedBytes Unreadable(int64_t size) {
  const auto n = static_cast<size_t>(size);
  void* p = mmap(nullptr, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return {};
  return SharedBytes{
      static_cast<const uint8_t*>(p), size,
      std::shared_ptr<const void>(p, [n](const void* q) { munmap(const_cast<void*>(q), n); })};
}

void CollectBuffers(const ArrowArray* a, std::vector<const void*>* out) {
  for (int64_t i = 0; i < a->n_buffers; ++i) out->push_back(a->buffers[i]);
  for (int64_t i = 0; i < a->n_children; ++i) CollectBuffers(a->children[i], out);
  if (a->dictionary != nullptr) CollectBuffers(a->dictionary, out);
}

Status Feed(ipc::Decoder& decoder, const LayoutSink& sink, const SharedBytes& region) {
  for (const LayoutSink::Message& m : sink.messages) {
    if (!m.has_body) {
      FERRY_RETURN_NOT_OK(decoder.ConsumeMessage(m.metadata, {}));
      continue;
    }
    FERRY_RETURN_NOT_OK(decoder.ConsumeMessageBuffers(m.metadata, region, m.buffers));
  }
  return Status::OK();
}

TEST(DeviceBodyTest, BuffersPointIntoTheRegionAndAreNeverRead) {
  ASSERT_OK_AND_ASSIGN(LayoutSink sink, Lay({}));
  SharedBytes region = Unreadable(sink.used + 64);
  ASSERT_NE(region.data, nullptr);
  ipc::ReadOptions options;  // full validation asked for: it must not apply
  options.body_on_device = true;
  ipc::Decoder decoder(options);
  ASSERT_OK(Feed(decoder, sink, region));
  int batches = 0;
  while (std::optional<ipc::DecodedMessage> m = decoder.Next()) {
    if (m->kind != ipc::MessageKind::kRecordBatch) continue;
    ++batches;
    EXPECT_EQ(m->batch->length, 3);
    std::vector<const void*> buffers;
    CollectBuffers(m->batch.get(), &buffers);
    int64_t inside = 0;
    for (const void* b : buffers) {
      const auto* p = static_cast<const uint8_t*>(b);
      if (p >= region.data && p < region.data + region.size) ++inside;
    }
    EXPECT_GE(inside, 8);  // every non-empty buffer of the four columns and the dictionary
  }
  EXPECT_EQ(batches, 1);
  EXPECT_EQ(decoder.bytes_copied(), 0);
}

TEST(DeviceBodyTest, ACompressedBodyIsRefusedNotDecompressed) {
  ipc::WriteOptions write;
  write.compression = ipc::Compression::kLz4Frame;
  ASSERT_OK_AND_ASSIGN(LayoutSink sink, Lay(write));
  SharedBytes region = Unreadable(sink.used + 64);
  ipc::ReadOptions options;
  options.body_on_device = true;
  ipc::Decoder decoder(options);
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "the body is compressed, but it is device memory",
                     Feed(decoder, sink, region));
}

TEST(DeviceBodyTest, ABufferOutsideTheRegionIsRefused) {
  ASSERT_OK_AND_ASSIGN(LayoutSink sink, Lay({}));
  SharedBytes region = Unreadable(sink.used + 64);
  ipc::ReadOptions options;
  options.body_on_device = true;
  ipc::Decoder decoder(options);
  sink.messages.back().buffers.back().offset = region.size;  // past the end (nonzero length)
  ASSERT_GT(sink.messages.back().buffers.back().length, 0);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "lies outside the region",
                     Feed(decoder, sink, region));
}

}  // namespace
}  // namespace ferry
