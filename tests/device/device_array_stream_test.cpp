// Device array streams: arrays labelled with the device, the end of stream kept as release ==
// NULL, producer errors passed through, and a foreign producer's private_data never read.
#include "ferry/device/device_array_stream.hpp"

#include <gtest/gtest.h>

#include "ferry/format/stream.hpp"
#include "support/device_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

UniqueArray Int32s(const std::string& json, UniqueSchema* schema) {
  auto array = testing::ArrayFromJson(Field::Make("i", "x"), json);
  EXPECT_TRUE(array.ok());
  UniqueArray out;
  schema->reset();  // a second export replaces the first schema rather than leaking it
  std::move(array).ValueOrDie().Export(schema->get(), out.get());
  return out;
}

TEST(BasicDeviceArrayStream, LabelsEveryArrayAndKeepsTheEnd) {
  UniqueSchema schema;
  std::vector<UniqueArray> arrays;
  arrays.push_back(Int32s("[1, 2]", &schema));
  arrays.push_back(Int32s("[3]", &schema));
  ASSERT_OK_AND_ASSIGN(UniqueArrayStream inner,
                       MakeArrayStream(std::move(schema), std::move(arrays)));
  UniqueDeviceArrayStream stream;
  ASSERT_OK(BasicDeviceArrayStreamInit(stream.get(), inner.get(), *CpuDevice()));
  EXPECT_EQ(inner->release, nullptr);  // moved in
  EXPECT_EQ(stream->device_type, ARROW_DEVICE_CPU);

  UniqueSchema got_schema;
  ASSERT_EQ(stream->get_schema(stream.get(), got_schema.get()), 0);
  EXPECT_STREQ(got_schema->format, "i");
  const std::vector<int64_t> lengths{2, 1};
  for (int64_t expected : lengths) {
    UniqueDeviceArray a;
    ASSERT_EQ(stream->get_next(stream.get(), a.get()), 0);
    ASSERT_NE(a->array.release, nullptr);
    EXPECT_EQ(a->array.length, expected);
    EXPECT_EQ(a->device_type, ARROW_DEVICE_CPU);
    EXPECT_EQ(a->sync_event, nullptr);
  }
  // The end of the stream: release stays NULL (never a releasable empty array), twice.
  for (int i = 0; i < 2; ++i) {
    ArrowDeviceArray end;
    std::memset(&end, 0xCD, sizeof(end));
    ASSERT_EQ(stream->get_next(stream.get(), &end), 0);
    EXPECT_EQ(end.array.release, nullptr);
    EXPECT_EQ(end.sync_event, nullptr);
  }
}

TEST(BasicDeviceArrayStream, ProducerErrorsPassThrough) {
  UniqueSchema schema;
  UniqueArray first = Int32s("[1]", &schema);
  int calls = 0;
  ArraySource source = [&]() -> Result<std::optional<UniqueArray>> {
    if (calls++ == 0) return std::optional<UniqueArray>(std::move(first));
    return Status::IOError("the disk went away at batch 1");
  };
  ASSERT_OK_AND_ASSIGN(UniqueArrayStream inner, MakeArrayStream(std::move(schema), source));
  UniqueDeviceArrayStream stream;
  ASSERT_OK(BasicDeviceArrayStreamInit(stream.get(), inner.get(), *CpuDevice()));
  UniqueDeviceArray a;
  ASSERT_EQ(stream->get_next(stream.get(), a.get()), 0);
  UniqueDeviceArray b;
  EXPECT_EQ(stream->get_next(stream.get(), b.get()), EIO);
  EXPECT_EQ(b->array.release, nullptr);
  EXPECT_STREQ(stream->get_last_error(stream.get()), "the disk went away at batch 1");
}

// A hand-built producer whose private_data would fault if read; its state lives in globals.
int foreign_next_calls = 0;
int foreign_releases = 0;

TEST(BasicDeviceArrayStream, NeverReadsAForeignProducersPrivateData) {
  ArrowArrayStream foreign{};
  foreign.private_data = reinterpret_cast<void*>(uintptr_t{0x10});
  foreign.get_schema = [](ArrowArrayStream*, ArrowSchema*) { return ENOSYS; };
  foreign.get_next = [](ArrowArrayStream*, ArrowArray* out) {
    foreign_next_calls += 1;
    out->release = nullptr;  // at once the end
    return 0;
  };
  foreign.get_last_error = [](ArrowArrayStream*) -> const char* { return "foreign"; };
  foreign.release = [](ArrowArrayStream* self) {
    foreign_releases += 1;
    self->release = nullptr;
  };
  {
    UniqueDeviceArrayStream stream;
    ASSERT_OK(BasicDeviceArrayStreamInit(stream.get(), &foreign, *CpuDevice()));
    ArrowSchema schema{};
    // The foreign ENOSYS is kUnimplemented, which the C face returns as the table's ENOTSUP.
    EXPECT_EQ(stream->get_schema(stream.get(), &schema), ENOTSUP);
    EXPECT_STREQ(stream->get_last_error(stream.get()), "foreign");
    ArrowDeviceArray end{};
    ASSERT_EQ(stream->get_next(stream.get(), &end), 0);
    EXPECT_EQ(end.array.release, nullptr);
    EXPECT_EQ(foreign_next_calls, 1);
  }
  EXPECT_EQ(foreign_releases, 1);
}

TEST(BasicDeviceArrayStream, RejectsReleasedInput) {
  ArrowArrayStream released{};
  UniqueDeviceArrayStream stream;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "released",
                     BasicDeviceArrayStreamInit(stream.get(), &released, *CpuDevice()));
  EXPECT_EQ(stream->release, nullptr);
}

}  // namespace
}  // namespace ferry
