// The stream adapter both ways: a producer's items, end and errors through the C callbacks, and
// the Status-returning calls against hand-written C streams.
#include "ferry/core/stream_adapter.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "support/test_util.hpp"

namespace ferry {
namespace {

// Yields arrays of lengths 1..n, then the end; fails at `fail_at` if set.
class CountingProducer final : public ArrayProducer {
 public:
  CountingProducer(int n, int fail_at, bool* destroyed)
      : n_(n), fail_at_(fail_at), destroyed_(destroyed) {}
  ~CountingProducer() override { *destroyed_ = true; }

  Status GetSchema(ArrowSchema* out) override {
    out->format = "i";
    out->release = [](ArrowSchema* s) { s->release = nullptr; };
    return Status::OK();
  }
  Status GetNext(ArrowArray* out) override {
    if (next_ == fail_at_)
      return Status(StatusCode::kResourceExhausted,
                    "the disk filled at item " + std::to_string(next_), ENOSPC);
    if (next_ > n_) return Status::OK();
    out->length = next_++;
    out->release = [](ArrowArray* a) { a->release = nullptr; };
    return Status::OK();
  }

 private:
  int n_;
  int fail_at_;
  int next_ = 1;
  bool* destroyed_;
};

TEST(StreamAdapter, ExportedProducerYieldsItemsThenTheEnd) {
  bool destroyed = false;
  UniqueArrayStream stream =
      ExportArrayStream(std::make_unique<CountingProducer>(3, -1, &destroyed));
  UniqueSchema schema;
  ASSERT_OK(StreamGetSchema(stream.get(), schema.get()));
  EXPECT_STREQ(schema->format, "i");
  std::vector<int64_t> lengths;
  while (true) {
    UniqueArray a;
    ASSERT_OK(StreamGetNext(stream.get(), a.get()));
    if (!a.valid()) break;
    lengths.push_back(a->length);
  }
  EXPECT_EQ(lengths, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(destroyed);
  stream.reset();
  EXPECT_TRUE(destroyed);
}

TEST(StreamAdapter, AProducerErrorKeepsItsCodeAndWords) {
  bool destroyed = false;
  UniqueArrayStream stream =
      ExportArrayStream(std::make_unique<CountingProducer>(5, 2, &destroyed));
  UniqueArray first;
  ASSERT_OK(StreamGetNext(stream.get(), first.get()));
  // Through the raw callbacks, as any C consumer sees it: the error table's code for
  // kResourceExhausted, not the errno kept as the detail.
  ArrowArray second{};
  EXPECT_EQ(stream->get_next(stream.get(), &second), ENOMEM);
  EXPECT_EQ(second.release, nullptr);
  EXPECT_STREQ(stream->get_last_error(stream.get()), "the disk filled at item 2");
  // Through the consumer side: the producer's words pass through unchanged.
  UniqueArray again;
  ASSERT_RAISES_WITH(StatusCode::kResourceExhausted, "the disk filled at item 2",
                     StreamGetNext(stream.get(), again.get()));
}

TEST(StreamAdapter, DeviceStreamsCarryTheirDeviceType) {
  class One final : public DeviceArrayProducer {
   public:
    Status GetSchema(ArrowSchema*) override { return Status::NotSupported("no schema here"); }
    Status GetNext(ArrowDeviceArray* out) override {
      if (done_) return Status::OK();
      done_ = true;
      out->device_type = ARROW_DEVICE_CUDA;
      out->device_id = 3;
      out->array.release = [](ArrowArray* a) { a->release = nullptr; };
      return Status::OK();
    }

   private:
    bool done_ = false;
  };
  UniqueDeviceArrayStream stream =
      ExportDeviceArrayStream(std::make_unique<One>(), ARROW_DEVICE_CUDA);
  EXPECT_EQ(stream->device_type, ARROW_DEVICE_CUDA);
  UniqueSchema schema;
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "no schema here",
                     StreamGetSchema(stream.get(), schema.get()));
  UniqueDeviceArray a;
  ASSERT_OK(StreamGetNext(stream.get(), a.get()));
  EXPECT_EQ(a->device_id, 3);
  UniqueDeviceArray end;
  ASSERT_OK(StreamGetNext(stream.get(), end.get()));
  EXPECT_FALSE(end.valid());
}

TEST(StreamAdapter, AForeignStreamWithoutWordsIsNamedByCallAndCode) {
  ArrowArrayStream foreign{};
  foreign.get_next = [](ArrowArrayStream*, ArrowArray*) { return EIO; };
  foreign.get_last_error = [](ArrowArrayStream*) -> const char* { return nullptr; };
  foreign.release = [](ArrowArrayStream* s) { s->release = nullptr; };
  UniqueArray a;
  ASSERT_RAISES_WITH(StatusCode::kIOError, "stream get_next failed: Input/output error",
                     StreamGetNext(&foreign, a.get()));
  foreign.release(&foreign);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "NULL or released",
                     StreamGetNext(&foreign, a.get()));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "NULL or released",
                     StreamGetNext(static_cast<ArrowArrayStream*>(nullptr), a.get()));
}

TEST(StreamAdapter, ASchemaCallThatReturnsNothingIsAnError) {
  ArrowArrayStream foreign{};
  foreign.get_schema = [](ArrowArrayStream*, ArrowSchema*) { return 0; };  // leaves it released
  foreign.release = [](ArrowArrayStream* s) { s->release = nullptr; };
  UniqueSchema schema;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "returned no schema",
                     StreamGetSchema(&foreign, schema.get()));
}

}  // namespace
}  // namespace ferry
