// Memory views of device arrays, on every device: the data stays on the device (checked by
// pointer and, on the guarded device, by the host being unable to touch it), the view keeps the
// device and event, and device arrays come back from views without copies.
#include "ferry/memview/device_view.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ferry/device/device_array.hpp"
#include "ferry/device/guarded.hpp"
#include "ferry/memview/dlpack.hpp"
#include "support/device_util.hpp"
#include "support/test_util.hpp"

namespace ferry::memview {
namespace {

class DeviceViewConformance : public ::testing::TestWithParam<size_t> {
 protected:
  const testing::DeviceCase& Case() const { return testing::ConformanceDevices()[GetParam()]; }

  // `json` of `field` (sliced when length >= 0) as an owner on `device`.
  std::shared_ptr<DeviceArrayOwner> OnDevice(Device& device, const Field& field,
                                             const std::string& json, int64_t offset = 0,
                                             int64_t length = -1) {
    auto array = length < 0 ? testing::ArrayFromJson(field, json)
                            : testing::SlicedArrayFromJson(field, json, offset, length);
    EXPECT_TRUE(array.ok()) << array.status().message();
    auto owner = std::make_shared<DeviceArrayOwner>();
    UniqueDeviceArray cpu =
        testing::ToCpuDeviceArray(std::move(array).ValueOrDie(), &owner->schema);
    if (device.device_type() == ARROW_DEVICE_CPU) {
      owner->array = std::move(cpu);
      return owner;
    }
    auto dev = testing::CopyToDevice(owner->schema.get(), cpu.get(), device);
    EXPECT_TRUE(dev.ok()) << dev.status().message();
    owner->array = std::move(dev).ValueOrDie();
    return owner;
  }

  // The view's bytes, read back through the device (the host may not be able to touch them).
  template <typename T>
  std::vector<T> ReadBack(Device& device, const MemoryView& v) {
    std::vector<T> out(static_cast<size_t>(v.size) / sizeof(T));
    auto stream = InternalStreamFor(device, *CpuDevice());
    EXPECT_TRUE(stream.ok());
    EXPECT_TRUE(CopyBytes(device, v.data, *CpuDevice(), out.data(), v.size, *stream).ok());
    if (*stream != nullptr) {
      EXPECT_TRUE(device.SynchronizeEvent(nullptr, *stream).ok());
    }
    return out;
  }
};

TEST_P(DeviceViewConformance, FixedWidthStaysOnItsDevice) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  auto owner = OnDevice(*device, Field::Make("i", "x"), "[10, 11, 12, 13, 14]", 1, 3);
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfDeviceArray(owner, kFormat | kStrides));
  EXPECT_EQ(v.device_type, device->device_type());
  EXPECT_EQ(v.device_id, owner->array->device_id);
  EXPECT_EQ(v.format, "l");
  EXPECT_EQ(v.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(v.size, 12);
  // Points into the device buffer, past the slice offset: nothing was copied.
  const auto* values = static_cast<const uint8_t*>(owner->array->array.buffers[1]);
  const int64_t offset = owner->array->array.offset;
  EXPECT_EQ(v.data, values + offset * 4);
  if (device->device_type() == ARROW_DEVICE_EXT_DEV) {
    EXPECT_TRUE(IsGuardedMemory({v.data, 12}));
  }
  EXPECT_EQ(ReadBack<int32_t>(*device, v), (std::vector<int32_t>{11, 12, 13}));
  EXPECT_TRUE(v.readonly);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "WRITABLE", ViewOfDeviceArray(owner, kWritable));
}

TEST_P(DeviceViewConformance, FixedSizeListIsTwoDimensional) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  Field field = Field::Make("+w:3", "m", {Field::Make("g", "item")});
  auto owner = OnDevice(*device, field, "[[1, 2, 3], [4, 5, 6], [7, 8, 9]]", 1, 2);
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfDeviceArray(owner, kFormat | kStrides));
  EXPECT_EQ(v.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(v.strides, (std::vector<int64_t>{24, 8}));
  EXPECT_EQ(v.device_type, device->device_type());
  EXPECT_EQ(ReadBack<double>(*device, v), (std::vector<double>{4, 5, 6, 7, 8, 9}));
}

TEST_P(DeviceViewConformance, NullsAreCountedOnlyWhenUnknown) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  auto with_nulls = OnDevice(*device, Field::Make("l", "x"), "[1, null, 3]");
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "has 1 nulls",
                     ViewOfDeviceArray(with_nulls, kFormat));
  ArrowViewOptions allow;
  allow.allow_nulls = true;
  ASSERT_OK_AND_ASSIGN(MemoryView anyway, ViewOfDeviceArray(with_nulls, kFormat, allow));
  EXPECT_EQ(anyway.shape, (std::vector<int64_t>{3}));

  // An unknown count (-1) is learnt from the bitmap, read through the device.
  with_nulls->array->array.null_count = -1;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "has 1 nulls",
                     ViewOfDeviceArray(with_nulls, kFormat));
  // A slice that skips the null passes: only the visible bits count.
  auto owner = OnDevice(*device, Field::Make("l", "x"), "[1, null, 3, 4, 5, 6, 7, 8, 9, 10]", 2, 8);
  owner->array->array.null_count = -1;
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfDeviceArray(owner, kFormat));
  EXPECT_EQ(ReadBack<int64_t>(*device, v), (std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9, 10}));
}

TEST_P(DeviceViewConformance, DeviceArrayFromViewIsZeroCopyAndStaysPut) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  Field field = Field::Make("+w:2", "m", {Field::Make("s", "item")});
  auto owner = OnDevice(*device, field, "[[1, 2], [3, 4], [5, 6]]");
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfDeviceArray(owner, kStrides | kFormat));
  ASSERT_OK_AND_ASSIGN(DeviceArrayOwner back, DeviceArrayFromView(v, nullptr));
  EXPECT_EQ(back.array->device_type, device->device_type());
  EXPECT_EQ(back.array->device_id, owner->array->device_id);
  EXPECT_STREQ(back.schema->format, "+w:2");
  ASSERT_EQ(back.array->array.n_children, 1);
  EXPECT_EQ(back.array->array.children[0]->buffers[1], v.data);
  // The view's owner is kept alive by the new array: drop every other reference first.
  const std::string before = testing::DeviceArrayToJson(back.schema.get(), back.array.get());
  v = MemoryView();
  owner.reset();
  EXPECT_EQ(testing::DeviceArrayToJson(back.schema.get(), back.array.get()), before);
  EXPECT_EQ(before, "[[1, 2], [3, 4], [5, 6]]");
}

TEST_P(DeviceViewConformance, LayoutsThatNeedACopyStayOffTheHost) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  Field field = Field::Make("+w:2", "m", {Field::Make("i", "item")});
  auto owner = OnDevice(*device, field, "[[1, 2], [3, 4], [5, 6]]");
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfDeviceArray(owner, kStrides | kFormat));
  // Transposed: dimension 0 is no longer outermost.
  std::swap(v.shape[0], v.shape[1]);
  std::swap(v.strides[0], v.strides[1]);
  FromViewOptions copy;
  copy.allow_copy = true;
  if (device->device_type() == ARROW_DEVICE_CPU) {
    ASSERT_OK_AND_ASSIGN(DeviceArrayOwner back, DeviceArrayFromView(v, nullptr, copy));
    EXPECT_EQ(testing::DeviceArrayToJson(back.schema.get(), back.array.get()),
              "[[1, 3, 5], [2, 4, 6]]");
  } else {
    ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "copy the view's bytes to the CPU first",
                       DeviceArrayFromView(v, nullptr, copy));
  }
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "allow a copy", DeviceArrayFromView(v, nullptr));
}

TEST_P(DeviceViewConformance, DLPackCarriesTheDevice) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  auto owner = OnDevice(*device, Field::Make("f", "x"), "[1.5, 2.5]");
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfDeviceArray(owner, kStrides | kFormat));
  ASSERT_OK_AND_ASSIGN(DLManagedTensorVersioned * t, ToDLPack(v));
  EXPECT_EQ(static_cast<int>(t->dl_tensor.device.device_type),
            static_cast<int>(device->device_type()));
  EXPECT_EQ(t->dl_tensor.data, v.data);
  ASSERT_OK_AND_ASSIGN(MemoryView round, FromDLPack(t));
  EXPECT_EQ(round.device_type, device->device_type());
  EXPECT_EQ(round.data, v.data);
  if (device->device_type() != ARROW_DEVICE_CPU) {
    EXPECT_EQ(round.device_id, v.device_id);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, DeviceViewConformance,
                         ::testing::Range<size_t>(0, testing::ConformanceDevices().size()),
                         [](const ::testing::TestParamInfo<size_t>& param_info) {
                           return testing::ConformanceDevices()[param_info.param].name;
                         });

// -- Events, on the guarded device (whose events count what is done to them) -----------------

class GuardedEvents : public ::testing::Test {
 protected:
  void SetUp() override {
    auto array = testing::ArrayFromJson(Field::Make("i", "x"), "[1, null, 3]");
    ASSERT_TRUE(array.ok());
    allow_.allow_nulls = true;
    owner_ = std::make_shared<DeviceArrayOwner>();
    UniqueDeviceArray cpu =
        testing::ToCpuDeviceArray(std::move(array).ValueOrDie(), &owner_->schema);
    ASSERT_OK_AND_ASSIGN(owner_->array,
                         testing::CopyToDevice(owner_->schema.get(), cpu.get(), *GuardedDevice()));
    // The copy left an event recorded on its stream, owned by the array, as a producer would.
    ASSERT_NE(owner_->array->sync_event, nullptr);
    event_ = static_cast<GuardedEvent**>(owner_->array->sync_event);
    host_waits_ = (*event_)->host_waits;
    stream_waits_ = (*event_)->stream_waits;
  }

  std::shared_ptr<DeviceArrayOwner> owner_;
  GuardedEvent** event_ = nullptr;
  int64_t host_waits_ = 0;
  int64_t stream_waits_ = 0;
  ArrowViewOptions allow_;
};

TEST_F(GuardedEvents, TheViewCarriesTheArraysEvent) {
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfDeviceArray(owner_, kFormat, allow_));
  EXPECT_EQ(v.sync_event, event_);
  // A known null count reads nothing and waits for nothing.
  EXPECT_EQ((*event_)->host_waits, host_waits_);
  owner_->array->array.null_count = -1;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "has 1 nulls",
                     ViewOfDeviceArray(owner_, kFormat));
  EXPECT_EQ((*event_)->host_waits, host_waits_ + 1);  // the bitmap is read after the producer
}

TEST_F(GuardedEvents, WithoutAStreamTheHostWaits) {
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfDeviceArray(owner_, kFormat, allow_));
  ASSERT_OK_AND_ASSIGN(DeviceArrayOwner back, DeviceArrayFromView(v, nullptr));
  EXPECT_EQ((*event_)->host_waits, host_waits_ + 1);
  EXPECT_EQ(back.array->sync_event, nullptr);
}

TEST_F(GuardedEvents, WithAStreamTheStreamWaitsAndANewEventIsOwned) {
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfDeviceArray(owner_, kFormat, allow_));
  GuardedStream native;
  GuardedStream* stream = &native;
  const int64_t live = GuardedEvent::live;
  {
    ASSERT_OK_AND_ASSIGN(DeviceArrayOwner back, DeviceArrayFromView(v, &stream));
    EXPECT_EQ((*event_)->host_waits, host_waits_);
    EXPECT_EQ((*event_)->stream_waits, stream_waits_ + 1);
    ASSERT_NE(back.array->sync_event, nullptr);
    EXPECT_NE(back.array->sync_event, event_);
    auto* made = *static_cast<GuardedEvent**>(back.array->sync_event);
    EXPECT_EQ(made->records, 1);
    EXPECT_EQ(GuardedEvent::live, live + 1);
  }
  EXPECT_EQ(GuardedEvent::live, live);  // released with the array
}

// -- Negative cases and the registry ---------------------------------------------------------

TEST(DeviceViews, BadInputGetsClearErrors) {
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "device array is NULL",
                     ViewOfDeviceArray(nullptr, kFormat));
  auto released = std::make_shared<DeviceArrayOwner>();
  ASSERT_OK_AND_ASSIGN(released->schema, Field::Make("i", "x").Export());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "released",
                     ViewOfDeviceArray(released, kFormat));

  MemoryView v;
  static int32_t data[2] = {1, 2};
  v.data = reinterpret_cast<uint8_t*>(data);
  v.size = 8;
  v.format = "l";
  ASSERT_OK_AND_ASSIGN(v.item_desc, ParseItemFormat("l"));
  v.item_size = 4;
  v.shape = {2};
  v.device_type = static_cast<ArrowDeviceType>(99);
  v.device_id = 0;
  auto unknown = DeviceArrayFromView(v, nullptr);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("99"), std::string::npos) << unknown.status().message();
  v.device_type = ARROW_DEVICE_CPU;
  v.sync_event = &data;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "CPU memory view cannot carry a sync event",
                     DeviceArrayFromView(v, nullptr));
}

TEST(DeviceViews, RegisteredExporterCountsAndReleases) {
  ExporterRegistry registry;
  RegisterDeviceArrayExporter(registry);
  auto array = testing::ArrayFromJson(Field::Make("C", "x"), "[1, 2, 3]");
  ASSERT_TRUE(array.ok());
  auto owner = std::make_shared<DeviceArrayOwner>();
  owner->array = testing::ToCpuDeviceArray(std::move(array).ValueOrDie(), &owner->schema);
  std::shared_ptr<const DeviceArrayOwner> object = owner;
  ASSERT_OK_AND_ASSIGN(MemoryView v, registry.Get(object, kFormat));
  EXPECT_EQ(v.format, "C");
  EXPECT_EQ(registry.ExportCount(&object), 1);
  ASSERT_OK(registry.Release(&v));
  ASSERT_OK(registry.Release(&v));
  EXPECT_EQ(registry.ExportCount(&object), 0);
}

}  // namespace
}  // namespace ferry::memview
