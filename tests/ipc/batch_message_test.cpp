// BatchMessages: a record batch's Message flatbuffer patched from the last of its shape is byte
// for byte what flatbuffers' own builder makes of the same batch, whatever the values; batches of
// another shape, with no rows or no body, or with view counts are built afresh.
#include "ipc/batch_message.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace ferry {
namespace {

using ipc::internal::AssembledBody;
using ipc::internal::BatchMessages;
namespace fb = ipc::fb;

// The oracle: the message as flatbuffers' builder makes it, from nothing.
std::vector<uint8_t> Built(const AssembledBody& body) {
  flatbuffers::FlatBufferBuilder b;
  auto nodes = b.CreateVectorOfStructs(body.nodes);
  auto buffers = b.CreateVectorOfStructs(body.buffers);
  flatbuffers::Offset<flatbuffers::Vector<int64_t>> variadic = 0;
  if (!body.variadic_counts.empty()) variadic = b.CreateVector(body.variadic_counts);
  auto table = fb::CreateRecordBatch(b, body.length, nodes, buffers, 0, variadic);
  b.Finish(fb::CreateMessage(b, fb::MetadataVersion::V5, fb::MessageHeader::RecordBatch,
                             table.Union(), body.body_length));
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

AssembledBody Body(std::mt19937_64& rng, size_t n_nodes, size_t n_buffers, int64_t length) {
  AssembledBody body;
  body.length = length;
  for (size_t i = 0; i < n_nodes; ++i) {
    body.nodes.emplace_back(length, static_cast<int64_t>(rng() % (length + 1)));
  }
  int64_t at = 0;
  for (size_t i = 0; i < n_buffers; ++i) {
    const auto size = static_cast<int64_t>(rng() % 100000) * 8;
    body.buffers.emplace_back(at, size);
    at += size;
  }
  body.body_length = at;
  return body;
}

std::vector<uint8_t> Bytes(ByteSpan s) { return {s.data, s.data + s.size}; }

TEST(BatchMessages, APatchedMessageIsWhatTheBuilderMakesOfTheSameBatch) {
  std::mt19937_64 rng(7);
  BatchMessages messages;
  // Three columns (int64, float64, string: 7 buffers), then another shape, then back.
  const struct {
    size_t nodes, buffers;
    bool patched;
  } steps[] = {{3, 7, false}, {3, 7, true},  {3, 7, true}, {1, 2, false},
               {1, 2, true},  {3, 7, false}, {3, 7, true}, {0, 0, false}};
  for (const auto& step : steps) {
    const AssembledBody body =
        Body(rng, step.nodes, step.buffers, 1 + static_cast<int64_t>(rng() % (int64_t{1} << 40)));
    const std::vector<uint8_t> got = Bytes(messages.Encode(body));
    EXPECT_EQ(messages.patched(), step.patched) << step.nodes << " nodes";
    EXPECT_EQ(got, Built(body)) << step.nodes << " nodes, " << step.buffers << " buffers";
    // The patched message reads back as the batch.
    const fb::Message* m = fb::GetMessage(got.data());
    flatbuffers::Verifier verifier(got.data(), got.size());
    ASSERT_TRUE(fb::VerifyMessageBuffer(verifier));
    const fb::RecordBatch* rb = m->header_as_RecordBatch();
    ASSERT_NE(rb, nullptr);
    EXPECT_EQ(rb->length(), body.length);
    EXPECT_EQ(m->body_length(), body.body_length);
    ASSERT_EQ(rb->buffers()->size(), body.buffers.size());
    for (size_t i = 0; i < body.buffers.size(); ++i) {
      EXPECT_EQ(rb->buffers()->Get(static_cast<flatbuffers::uoffset_t>(i))->length(),
                body.buffers[i].length());
    }
  }
}

TEST(BatchMessages, BatchesWhoseLayoutTheirShapeDoesNotFixAreBuilt) {
  std::mt19937_64 rng(11);
  BatchMessages messages;
  AssembledBody body = Body(rng, 3, 7, 1000);
  (void)messages.Encode(body);
  // No rows: the builder leaves the length out, so the message is shorter.
  AssembledBody empty = Body(rng, 3, 7, 0);
  for (fb::Buffer& b : empty.buffers) b = fb::Buffer(0, 0);
  empty.body_length = 0;
  EXPECT_EQ(Bytes(messages.Encode(empty)), Built(empty));
  EXPECT_FALSE(messages.patched());
  // View counts: a vector the shape does not size.
  AssembledBody views = Body(rng, 3, 7, 1000);
  views.variadic_counts = {2, 5};
  EXPECT_EQ(Bytes(messages.Encode(views)), Built(views));
  EXPECT_FALSE(messages.patched());
  EXPECT_EQ(Bytes(messages.Encode(views)), Built(views));
  EXPECT_FALSE(messages.patched());
  // And the shape it had before is built again once, then patched.
  (void)messages.Encode(body);
  EXPECT_FALSE(messages.patched());
  body = Body(rng, 3, 7, 999);
  EXPECT_EQ(Bytes(messages.Encode(body)), Built(body));
  EXPECT_TRUE(messages.patched());
}

}  // namespace
}  // namespace ferry
