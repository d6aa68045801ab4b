// FlightData's hand-written framing against libprotobuf's own parser and serializer (the
// independent oracle): what ferry writes parses as Flight.proto's FlightData with the IPC
// message intact, large body pieces are lent (slices over the batch's memory), and what
// protobuf writes, cut into any slices, reads back field for field.
#include "flight/wire.hpp"

#include <grpcpp/support/slice.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>

#include "Flight.pb.h"
#include "ferry/ipc/decoder.hpp"
#include "ferry/ipc/writer.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::flight::internal {
namespace {

namespace pb = ::arrow::flight::protocol;
using Json = nlohmann::json;

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// Encodes every message of a stream as FlightData.
class FrameSink final : public ipc::MessageSink {
 public:
  Status WriteMessage(const ipc::EncodedMessage& m) override {
    frames.push_back(EncodeFlightData(m, keep, frames.empty() ? descriptor : std::string()));
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }
  std::shared_ptr<const void> keep = std::make_shared<int>(0);
  std::string descriptor;
  std::vector<grpc::ByteBuffer> frames;
};

// A batch of an int64 column (100,000 rows: its buffer is lent) and a string column.
Result<Array> Sample() {
  Json rows = Json::array();
  for (int i = 0; i < 100000; ++i) {
    rows.push_back(Json{{"n", i * 3}, {"s", i % 7 == 0 ? Json(nullptr) : Json(std::to_string(i))}});
  }
  return testing::ArrayFromJson(testing::BatchField({Field::Make("l", "n"), Field::Make("u", "s")}),
                                rows.dump());
}

TEST(FlightDataWire, ProtobufParsesWhatFerryWrites) {
  ASSERT_OK_AND_ASSIGN(Array batch, Sample());
  FrameSink sink;
  pb::FlightDescriptor descriptor;
  descriptor.set_type(pb::FlightDescriptor::PATH);
  descriptor.add_path("sample");
  sink.descriptor = descriptor.SerializeAsString();
  {
    ASSERT_OK_AND_ASSIGN(auto writer, ipc::StreamWriter::Open(&sink, batch.schema()));
    ASSERT_OK(writer.WriteBatch(batch.array()));
    ASSERT_OK(writer.Close());
  }
  ASSERT_EQ(sink.frames.size(), 2u);  // schema, batch
  ipc::Decoder decoder;
  for (size_t i = 0; i < sink.frames.size(); ++i) {
    pb::FlightData data;
    ASSERT_TRUE(data.ParseFromString(Flatten(sink.frames[i]))) << "frame " << i;
    EXPECT_EQ(data.has_flight_descriptor(), i == 0);
    if (i == 0) {
      EXPECT_EQ(data.flight_descriptor().path(0), "sample");
      EXPECT_TRUE(data.data_body().empty());
    }
    ASSERT_OK_AND_ASSIGN(SharedBytes body,
                         SharedBytes::Copy({data.data_body().data(),
                                            static_cast<int64_t>(data.data_body().size())}));
    const ByteSpan header{data.data_header().data(),
                          static_cast<int64_t>(data.data_header().size())};
    ASSERT_OK(decoder.ConsumeMessage(header, body));
  }
  std::optional<ipc::DecodedMessage> m = decoder.Next();
  ASSERT_TRUE(m && m->kind == ipc::MessageKind::kSchema);
  m = decoder.Next();
  ASSERT_TRUE(m && m->kind == ipc::MessageKind::kRecordBatch);
  ASSERT_OK_AND_ASSIGN(ArrayView got, ArrayView::Make(decoder.schema()));
  ASSERT_OK(got.SetArray(m->batch.get()));
  ASSERT_OK_AND_ASSIGN(ArrayView want, ArrayView::Make(batch.schema()));
  ASSERT_OK(want.SetArray(batch.array()));
  testing::ExpectArraysEqual(want, got);

  // The int64 values (800 kB) went to gRPC as a slice over the batch's own buffer.
  std::vector<const void*> own;
  testing::CollectBuffers(batch.array(), &own);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(sink.frames[1].Dump(&slices).ok());
  int lent = 0;
  for (const grpc::Slice& s : slices) {
    if (std::find(own.begin(), own.end(), static_cast<const void*>(s.begin())) != own.end()) ++lent;
  }
  EXPECT_GE(lent, 2);            // int64 values, string data (and offsets)
  EXPECT_LE(slices.size(), 8u);  // small pieces were gathered, not sliced one by one
}

TEST(FlightDataWire, LentSlicesHoldTheBatchUntilGrpcDropsThem) {
  ASSERT_OK_AND_ASSIGN(Array batch, Sample());
  auto keep = std::make_shared<int>(7);
  std::weak_ptr<int> watch = keep;
  {
    FrameSink sink;
    sink.keep = keep;
    keep.reset();
    ASSERT_OK_AND_ASSIGN(auto writer, ipc::StreamWriter::Open(&sink, batch.schema()));
    ASSERT_OK(writer.WriteBatch(batch.array()));
    EXPECT_FALSE(watch.expired());
    sink.keep.reset();
    EXPECT_FALSE(watch.expired());  // the frames' slices still hold it
  }
  EXPECT_TRUE(watch.expired());
}

// What protobuf writes (fields in any order, an unknown field, big bodies) reads back, whatever
// slices gRPC cut it into; a body in one slice is referenced, not copied.
TEST(FlightDataWire, FerryReadsWhatProtobufWrites) {
  pb::FlightData data;
  data.mutable_flight_descriptor()->set_type(pb::FlightDescriptor::PATH);
  data.mutable_flight_descriptor()->add_path("up");
  data.set_data_header(std::string(300, 'h'));
  data.set_app_metadata("meta");
  std::string body(200000, '\0');
  std::mt19937 rng(5);
  for (char& c : body) c = static_cast<char>(rng());
  data.set_data_body(body);
  std::string wire = data.SerializeAsString();
  // An unknown field from a later Flight version: varint field 9, value 5.
  wire += std::string("\x48\x05", 2);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{7}, size_t{333}, size_t{4096}, size_t{65536}}) {
    std::vector<grpc::Slice> slices;
    if (cut == 0) {
      slices.emplace_back(wire.data(), wire.size());
    } else {
      for (size_t at = 0; at < wire.size(); at += cut) {
        slices.emplace_back(wire.data() + at, std::min(cut, wire.size() - at));
      }
    }
    grpc::ByteBuffer buffer(slices.data(), slices.size());
    ASSERT_OK_AND_ASSIGN(FlightDataView view, DecodeFlightData(buffer));
    EXPECT_TRUE(view.has_descriptor);
    pb::FlightDescriptor d;
    ASSERT_TRUE(d.ParseFromString(view.descriptor));
    EXPECT_EQ(d.path(0), "up");
    EXPECT_EQ(view.header, data.data_header());
    EXPECT_EQ(view.app_metadata, "meta");
    ASSERT_EQ(view.body.size, static_cast<int64_t>(body.size())) << "cut " << cut;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(view.body.data), body.size()), body);
    EXPECT_EQ(view.wire_bytes, static_cast<int64_t>(wire.size()));
    if (cut == 0) {
      // Inside gRPC's slice: no copy.
      std::vector<grpc::Slice> dumped;
      ASSERT_TRUE(buffer.Dump(&dumped).ok());
      const uint8_t* begin = dumped[0].begin();
      EXPECT_TRUE(view.body.data > begin && view.body.data < begin + dumped[0].size());
    }
  }
}

TEST(FlightDataWire, MalformedFramingIsNamed) {
  auto decode = [](const std::string& bytes) {
    grpc::Slice s(bytes.data(), bytes.size());
    return DecodeFlightData(grpc::ByteBuffer(&s, 1));
  };
  // data_body (field 1000) says 100 bytes, 3 follow.
  std::string body_short;
  PutVarint(&body_short, (1000u << 3) | 2);
  PutVarint(&body_short, 100);
  body_short += "abc";
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "says 100 bytes but 3 remain",
                     decode(body_short));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "ends inside the varint",
                     decode(std::string("\x12\x80", 2)));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "wire type 3", decode(std::string("\x0b", 1)));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "runs past 10 bytes",
                     decode(std::string(11, '\xff')));
}

}  // namespace
}  // namespace ferry::flight::internal
