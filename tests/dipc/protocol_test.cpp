// The Dissociated IPC wire formats, pinned byte by byte against hand-computed layouts from the
// specification's text.
#include "ferry/dipc/protocol.hpp"

#include "support/test_util.hpp"

namespace ferry::dipc {
namespace {

TEST(ProtocolTest, MetadataHeaderLayout) {
  uint8_t header[kMetadataHeaderSize];
  EncodeMetadataHeader(MetadataType::kIpcMessage, 0x01020304, header);
  EXPECT_EQ(std::vector<uint8_t>(header, header + 5), (std::vector<uint8_t>{1, 4, 3, 2, 1}));
  const std::vector<uint8_t> message{1, 4, 3, 2, 1, 0xAA, 0xBB};
  ASSERT_OK_AND_ASSIGN(MetadataMessage m, ParseMetadataMessage(message));
  EXPECT_EQ(m.type, MetadataType::kIpcMessage);
  EXPECT_EQ(m.sequence, 0x01020304u);
  ASSERT_EQ(m.flatbuffer.size, 2);
  EXPECT_EQ(m.flatbuffer.data, message.data() + 5);  // a view into the input, not a copy
}

TEST(ProtocolTest, EndOfStreamIsExactlyFiveBytes) {
  const std::vector<uint8_t> eos{0, 9, 0, 0, 0};
  ASSERT_OK_AND_ASSIGN(MetadataMessage m, ParseMetadataMessage(eos));
  EXPECT_EQ(m.type, MetadataType::kEndOfStream);
  EXPECT_EQ(m.sequence, 9u);
  const std::vector<uint8_t> longer{0, 9, 0, 0, 0, 0};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "must have exactly 5",
                     ParseMetadataMessage(longer));
}

TEST(ProtocolTest, BadMetadataIsRefused) {
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "shorter than its 5-byte header",
                     ParseMetadataMessage(std::vector<uint8_t>{1, 0, 0}));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "unknown type 7",
                     ParseMetadataMessage(std::vector<uint8_t>{7, 1, 0, 0, 0, 1}));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "carries no flatbuffer",
                     ParseMetadataMessage(std::vector<uint8_t>{1, 1, 0, 0, 0}));
}

TEST(ProtocolTest, BodyTagUsesBits56To63) {
  // The specification's text: body type in bits 56-63 (its diagrams' shift of 55 is wrong).
  EXPECT_EQ(MakeBodyTag(BodyType::kBufferList, 7), 0x0100000000000007ULL);
  EXPECT_EQ(MakeBodyTag(BodyType::kPacked, 0xFFFFFFFF), 0x00000000FFFFFFFFULL);
  ASSERT_OK_AND_ASSIGN(BodyTag t, ParseBodyTag(0x0100000000000007ULL));
  EXPECT_EQ(t.type, BodyType::kBufferList);
  EXPECT_EQ(t.sequence, 7u);
  // A tag built with the diagrams' shift of 55 sets reserved bit 55: refused.
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "reserved bits 32-55",
                     ParseBodyTag((uint64_t{1} << 55) | 7));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "reserved bits",
                     ParseBodyTag(uint64_t{1} << 32));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "unknown body type 2",
                     ParseBodyTag(uint64_t{2} << 56));
  // Matching bodies to metadata ignores the type.
  EXPECT_EQ(MakeBodyTag(BodyType::kBufferList, 42) & kSequenceMask, 42u);
}

TEST(ProtocolTest, BufferListLayout) {
  const std::vector<BufferRef> refs{{0x1000, 24}, {0x2000, 8}};
  const std::vector<uint8_t> body = EncodeBufferList(refs);
  ASSERT_EQ(body.size(), 48u);
  // total 32, count 2, then the pairs, all little-endian uint64.
  EXPECT_EQ(body[0], 32);
  EXPECT_EQ(body[8], 2);
  EXPECT_EQ(body[16], 0x00);
  EXPECT_EQ(body[17], 0x10);
  EXPECT_EQ(body[24], 24);
  EXPECT_EQ(body[33], 0x20);
  EXPECT_EQ(body[40], 8);
  ASSERT_OK_AND_ASSIGN(BufferList list, ParseBufferList(body));
  EXPECT_EQ(list.total_size, 32u);
  ASSERT_EQ(list.buffers.size(), 2u);
  EXPECT_EQ(list.buffers[1].address, 0x2000u);
  EXPECT_EQ(list.buffers[1].length, 8u);
}

TEST(ProtocolTest, LyingBufferListsAreRefused) {
  std::vector<uint8_t> body = EncodeBufferList(std::vector<BufferRef>{{0, 5}});
  body[8] = 200;  // claims 200 buffers, holds 1: refused before allocating for 200
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "declares 200 buffers but holds 1",
                     ParseBufferList(body));
  body = EncodeBufferList(std::vector<BufferRef>{{0, 5}});
  body[0] = 6;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "sum to 5 but the declared total is 6",
                     ParseBufferList(body));
  body = EncodeBufferList(std::vector<BufferRef>{{0, UINT64_MAX}, {0, 2}});
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "overflow", ParseBufferList(body));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "not 16 + 16 x count",
                     ParseBufferList(std::vector<uint8_t>(20)));
}

TEST(ProtocolTest, FreeDataBatchesAddresses) {
  const std::vector<uint64_t> addresses{1, 0x1122334455667788ULL};
  const std::vector<uint8_t> body = EncodeFreeData(addresses);
  ASSERT_EQ(body.size(), 16u);
  EXPECT_EQ(body[8], 0x88);
  EXPECT_EQ(body[15], 0x11);
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> back, ParseFreeData(body));
  EXPECT_EQ(back, addresses);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "one or more uint64",
                     ParseFreeData(std::vector<uint8_t>{}));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "one or more uint64",
                     ParseFreeData(std::vector<uint8_t>(12)));
  // Into a vector of the caller's: resized to each body, a shorter one after a longer one too.
  std::vector<uint64_t> into{7, 7, 7, 7, 7};
  ASSERT_OK(ParseFreeData(body, &into));
  EXPECT_EQ(into, addresses);
  const std::vector<uint8_t> one = EncodeFreeData(std::vector<uint64_t>{0x42});
  ASSERT_OK(ParseFreeData(one, &into));
  EXPECT_EQ(into, std::vector<uint64_t>{0x42});
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "a free_data body of 12 bytes",
                     ParseFreeData(std::vector<uint8_t>(12), &into));
  // Encoded into a vector of the caller's: the same bytes, a shorter body after a longer one.
  std::vector<uint8_t> encoded(40, 0xee);
  EncodeFreeData(addresses, &encoded);
  EXPECT_EQ(encoded, body);
  EncodeFreeData(std::vector<uint64_t>{0x42}, &encoded);
  EXPECT_EQ(encoded, (std::vector<uint8_t>{0x42, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(ProtocolTest, CreditIsOneCount) {
  const std::array<uint8_t, 8> body = EncodeCredit(0x0102030405060708ULL);
  EXPECT_EQ(body[0], 0x08);
  EXPECT_EQ(body[7], 0x01);
  ASSERT_OK_AND_ASSIGN(uint64_t back, ParseCredit(ByteSpan{body.data(), 8}));
  EXPECT_EQ(back, 0x0102030405060708ULL);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "credit body of 12 bytes",
                     ParseCredit(std::vector<uint8_t>(12)));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "credit body of 0 bytes",
                     ParseCredit(std::vector<uint8_t>{}));
  // Reserved bits set: no protocol tag can be a credit, and the server never takes one for
  // want_data or free_data.
  EXPECT_NE(kCreditTag & kReservedMask, 0u);
}

}  // namespace
}  // namespace ferry::dipc
