// Device arrays on every device: wrapping, events (ownership, creation, waits), zero-copy moves
// proven by pointer identity, foreign producers and the negative cases.
#include "ferry/device/device_array.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "ferry/device/device_array_view.hpp"
#include "ferry/device/guarded.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/json.hpp"
#include "support/device_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

std::vector<const void*> Buffers(const ArrowArray& a) {
  return {a.buffers, a.buffers + a.n_buffers};
}

class DeviceArrayConformance : public ::testing::TestWithParam<size_t> {
 protected:
  const testing::DeviceCase& Case() const { return testing::ConformanceDevices()[GetParam()]; }

  // ["a", null, "ccc"] as a device array on `device` (complete, no event).
  UniqueDeviceArray Strings(Device& device) {
    auto array = testing::ArrayFromJson(Field::Make("u", "s"), R"(["a", null, "ccc"])");
    EXPECT_TRUE(array.ok());
    UniqueDeviceArray cpu = testing::ToCpuDeviceArray(std::move(array).ValueOrDie(), &schema_);
    if (device.device_type() == ARROW_DEVICE_CPU) return cpu;
    auto dev = testing::CopyToDevice(schema_.get(), cpu.get(), device);
    EXPECT_TRUE(dev.ok()) << dev.status().message();
    return std::move(dev).ValueOrDie();
  }

  std::string ToJson(const ArrowDeviceArray* array) {
    auto view = DeviceArrayView::Make(schema_.get());
    EXPECT_TRUE(view.ok());
    EXPECT_TRUE(view->SetArray(array).ok());
    auto host = view->Copy(*CpuDevice());
    EXPECT_TRUE(host.ok()) << host.status().message();
    auto hv = ArrayView::Make(schema_.get());
    EXPECT_TRUE(hv->SetArray(&(*host)->array).ok());
    auto json = ArrayToJson(*hv);
    return json.ok() ? *json : json.status().message();
  }

  UniqueSchema schema_;
};

TEST_P(DeviceArrayConformance, InitLabelsTheArrayAndMovesItIn) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  UniqueDeviceArray src = Strings(*device);
  // Re-wrap the ArrowArray: DeviceArrayInit moves it in and zeroes `reserved`.
  ArrowArray inner = src->array;
  src->array.release = nullptr;
  ArrowDeviceArray out;
  std::memset(&out, 0xAB, sizeof(out));
  ASSERT_OK(DeviceArrayInit(*device, &out, &inner, nullptr));
  UniqueDeviceArray owned(&out);
  EXPECT_EQ(inner.release, nullptr);
  EXPECT_EQ(owned->device_type, device->device_type());
  EXPECT_EQ(owned->device_id, device->device_id());
  EXPECT_EQ(owned->sync_event, nullptr);
  for (int64_t r : owned->reserved) EXPECT_EQ(r, 0);
  EXPECT_EQ(ToJson(owned.get()), R"(["a", null, "ccc"])");
}

TEST_P(DeviceArrayConformance, MoveToTheSameDeviceKeepsEveryPointer) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  UniqueDeviceArray src = Strings(*device);
  const std::vector<const void*> before = Buffers(src->array);
  UniqueDeviceArray dst;
  ASSERT_OK(MoveToDevice(src.get(), *device, dst.get()));
  EXPECT_EQ(src->array.release, nullptr);  // moving marks the source released
  EXPECT_EQ(Buffers(dst->array), before);
  EXPECT_EQ(dst->device_type, device->device_type());
  EXPECT_EQ(ToJson(dst.get()), R"(["a", null, "ccc"])");
}

TEST_P(DeviceArrayConformance, MoveToTheCpuIsZeroCopyOrNotSupported) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  UniqueDeviceArray src = Strings(*device);
  const std::vector<const void*> before = Buffers(src->array);
  UniqueDeviceArray dst;
  Status st = MoveToDevice(src.get(), *CpuDevice(), dst.get());
  const ArrowDeviceType t = device->device_type();
  if (t == ARROW_DEVICE_CPU || t == ARROW_DEVICE_CUDA_HOST || t == ARROW_DEVICE_CUDA_MANAGED) {
    ASSERT_OK(st);
    EXPECT_EQ(Buffers(dst->array), before);
    EXPECT_EQ(dst->device_type, ARROW_DEVICE_CPU);
    EXPECT_EQ(dst->sync_event, nullptr);  // the host waited already
    EXPECT_EQ(src->array.release, nullptr);
  } else {
    // Never success with an empty destination: ENOTSUP, the source untouched.
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << st.message();
    EXPECT_NE(st.message().find("no zero-copy move from"), std::string::npos) << st.message();
    EXPECT_NE(src->array.release, nullptr);
    EXPECT_EQ(Buffers(src->array), before);
    EXPECT_EQ(dst->array.release, nullptr);
    EXPECT_EQ(ToJson(src.get()), R"(["a", null, "ccc"])");
  }
}

TEST_P(DeviceArrayConformance, MoveFromOrdinaryHostMemoryIsNotSupported) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  if (device->device_type() == ARROW_DEVICE_CPU) GTEST_SKIP() << "CPU to CPU is a same-device move";
  UniqueDeviceArray src = Strings(*CpuDevice());
  UniqueDeviceArray dst;
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "", MoveToDevice(src.get(), *device, dst.get()));
  EXPECT_NE(src->array.release, nullptr);
  EXPECT_EQ(dst->array.release, nullptr);
}

TEST_P(DeviceArrayConformance, ReleasedAndNullArraysAreRejected) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  UniqueDeviceArray released;
  released->device_type = device->device_type();
  released->device_id = device->device_id();
  UniqueDeviceArray dst;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "released",
                     MoveToDevice(released.get(), *device, dst.get()));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "NULL",
                     MoveToDevice(nullptr, *device, dst.get()));
  ArrowArray gone{};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "released",
                     DeviceArrayInit(*device, dst.get(), &gone, nullptr));
}

TEST_P(DeviceArrayConformance, StreamOrderedCopiesNeedAStreamOnDevicesThatHaveThem) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  UniqueDeviceArray src = Strings(*CpuDevice());
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema_.get()));
  ASSERT_OK(view.SetArray(src.get()));
  ASSERT_OK_AND_ASSIGN(void* internal, device->InternalStream());
  if (internal == nullptr) {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArray copy, view.CopyAsync(*device, nullptr));
    EXPECT_EQ(ToJson(copy.get()), R"(["a", null, "ccc"])");
  } else {
    ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "needs a stream",
                       view.CopyAsync(*device, nullptr));
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, DeviceArrayConformance,
                         ::testing::Range<size_t>(0, testing::ConformanceDevices().size()),
                         [](const ::testing::TestParamInfo<size_t>& param_info) {
                           return testing::ConformanceDevices()[param_info.param].name;
                         });

// -- Events, on the guarded device (whose events count what is done to them) -----------------

class GuardedEvents : public ::testing::Test {
 protected:
  // A guarded copy of `json` (of type `format`), re-wrapped to own `event` (may be null).
  UniqueDeviceArray Make(const char* format, const std::string& json, GuardedEvent* event) {
    auto array = testing::ArrayFromJson(Field::Make(format, "x"), json);
    EXPECT_TRUE(array.ok());
    UniqueDeviceArray cpu = testing::ToCpuDeviceArray(std::move(array).ValueOrDie(), &schema_);
    auto dev = testing::CopyToDevice(schema_.get(), cpu.get(), *GuardedDevice());
    EXPECT_TRUE(dev.ok());
    UniqueDeviceArray out;
    GuardedEvent* handle = event;
    Status st = DeviceArrayInit(*GuardedDevice(), out.get(), &(*dev)->array,
                                event == nullptr ? nullptr : &handle);
    EXPECT_TRUE(st.ok()) << st.message();
    return out;
  }
  static int64_t Waits(const GuardedEvent* e) { return e->host_waits + e->stream_waits; }

  UniqueSchema schema_;
};

TEST_F(GuardedEvents, AGivenEventIsOwnedAndDeletedOnceWithTheArray) {
  const int64_t live = GuardedEvent::live;
  auto* event = new GuardedEvent();
  {
    UniqueDeviceArray a = Make("i", "[1, 2, 3]", event);
    ASSERT_NE(a->sync_event, nullptr);
    EXPECT_EQ(*static_cast<GuardedEvent**>(a->sync_event), event);
    const int64_t owned = GuardedEvent::live;
    EXPECT_GT(owned, live);
    // Moving the struct moves the ownership with it: nothing is deleted.
    UniqueDeviceArray b(std::move(a));
    EXPECT_EQ(GuardedEvent::live, owned);
  }
  EXPECT_EQ(GuardedEvent::live, live);  // deleted with the array (ASan catches a second delete)
}

TEST_F(GuardedEvents, GivenOnlyAStreamInitCreatesAndRecordsAnEvent) {
  const int64_t live = GuardedEvent::live;
  {
    auto array = testing::ArrayFromJson(Field::Make("i", "x"), "[1, 2]");
    ASSERT_TRUE(array.ok());
    UniqueDeviceArray cpu = testing::ToCpuDeviceArray(std::move(array).ValueOrDie(), &schema_);
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArray dev,
                         testing::CopyToDevice(schema_.get(), cpu.get(), *GuardedDevice()));
    GuardedStream stream;
    GuardedStream* stream_handle = &stream;
    const int64_t before_init = GuardedEvent::live;
    UniqueDeviceArray out;
    ASSERT_OK(
        DeviceArrayInitAsync(*GuardedDevice(), out.get(), &dev->array, nullptr, &stream_handle));
    ASSERT_NE(out->sync_event, nullptr);
    const GuardedEvent* created = *static_cast<GuardedEvent**>(out->sync_event);
    EXPECT_EQ(created->records, 1);
    EXPECT_EQ(GuardedEvent::live, before_init + 1);
  }
  EXPECT_EQ(GuardedEvent::live, live);  // the created event died with the array
}

TEST_F(GuardedEvents, GivenBothTheEventIsRecordedOnTheStream) {
  auto array = testing::ArrayFromJson(Field::Make("i", "x"), "[1]");
  UniqueDeviceArray cpu = testing::ToCpuDeviceArray(std::move(array).ValueOrDie(), &schema_);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray dev,
                       testing::CopyToDevice(schema_.get(), cpu.get(), *GuardedDevice()));
  GuardedStream stream;
  GuardedStream* stream_handle = &stream;
  auto* event = new GuardedEvent();
  GuardedEvent* event_handle = event;
  UniqueDeviceArray out;
  ASSERT_OK(DeviceArrayInitAsync(*GuardedDevice(), out.get(), &dev->array, &event_handle,
                                 &stream_handle));
  EXPECT_EQ(*static_cast<GuardedEvent**>(out->sync_event), event);
  EXPECT_EQ(event->records, 1);
}

TEST_F(GuardedEvents, ACopyOfFixedWidthDataWaitsOnTheSourceEvent) {
  auto* event = new GuardedEvent();
  UniqueDeviceArray a = Make("i", "[1, 2, 3]", event);
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema_.get()));
  ASSERT_OK(view.SetArray(a.get()));
  EXPECT_EQ(Waits(event), 0);  // nothing to peek at in a fixed-width array
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray host, view.Copy(*CpuDevice()));
  EXPECT_EQ(Waits(event), 1);
  EXPECT_EQ(static_cast<const int32_t*>(host->array.buffers[1])[2], 3);

  // With an explicit stream, the stream waits, not the host.
  GuardedStream stream;
  GuardedStream* stream_handle = &stream;
  const int64_t host_waits = event->host_waits;
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray again, view.CopyAsync(*GuardedDevice(), &stream_handle));
  EXPECT_EQ(event->host_waits, host_waits);
  EXPECT_EQ(stream.event_waits, 1);
  ASSERT_NE(again->sync_event, nullptr);  // the result owns an event recorded on the stream
  EXPECT_EQ((*static_cast<GuardedEvent**>(again->sync_event))->records, 1);
}

TEST_F(GuardedEvents, OffsetPeeksWaitOnTheSourceEvent) {
  auto* event = new GuardedEvent();
  UniqueDeviceArray a = Make("u", R"(["ab", "c"])", event);
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema_.get()));
  ASSERT_OK(view.SetArray(a.get()));
  EXPECT_EQ(Waits(event), 1);
  EXPECT_EQ(view.array_view().buffer(2).size, 3);
}

TEST_F(GuardedEvents, AStreamOnlySynchronizeReallySynchronizes) {
  GuardedStream stream;
  GuardedStream* stream_handle = &stream;
  FerryDevice* c = GuardedDevice()->c_device();
  FerryError error{};
  ASSERT_EQ(c->synchronize_event(c, nullptr, &stream_handle, &error), 0) << error.message;
  EXPECT_EQ(stream.synchronizes, 1);
}

TEST_F(GuardedEvents, ReleasingFreesTheDeviceBuffers) {
  UniqueDeviceArray a = Make("u", R"(["ab", "c"])", nullptr);
  ASSERT_TRUE(IsGuardedMemory({a->array.buffers[2], 1}));
  const int64_t live = GuardedLiveAllocations();
  EXPECT_GE(live, 1);
  a.reset();
  // The whole tree is one allocation, freed once.
  EXPECT_EQ(GuardedLiveAllocations(), live - 1);
}

// -- A hand-built foreign producer --------------------------------------------------------------

// Releases of foreign arrays: the producer's state lives here, not behind private_data.
int foreign_releases = 0;

struct Foreign {
  int32_t values[4] = {10, 20, 30, 40};
  const void* buffers[2] = {nullptr, values};
  int releases() const { return foreign_releases - base; }
  int base = foreign_releases;
};

ArrowArray ForeignInt32(Foreign* f) {
  ArrowArray a{};
  a.length = 4;
  a.n_buffers = 2;
  a.buffers = f->buffers;
  // ferry must never read this: it belongs to the producer (and would fault).
  a.private_data = reinterpret_cast<void*>(uintptr_t{0x10});
  a.release = [](ArrowArray* self) {
    foreign_releases += 1;
    self->release = nullptr;
  };
  return a;
}

TEST(ForeignProducer, CopiedToEveryDeviceAndReleasedOnce) {
  for (const testing::DeviceCase& dc : testing::ConformanceDevices()) {
    auto resolved = testing::ResolveForTest(dc);
    if (!resolved.ok()) continue;  // the conformance suite reports the missing devices
    Foreign f;
    ArrowDeviceArray foreign{};
    foreign.array = ForeignInt32(&f);
    foreign.device_type = ARROW_DEVICE_CPU;
    foreign.device_id = -1;
    {
      ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("i", "x").Export());
      ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
      ASSERT_OK(view.SetArray(&foreign));
      ASSERT_OK(view.Validate(ValidationLevel::kFull));
      ASSERT_OK_AND_ASSIGN(UniqueDeviceArray copy, view.Copy(**resolved));
      ASSERT_OK_AND_ASSIGN(DeviceArrayView back, DeviceArrayView::Make(schema.get()));
      ASSERT_OK(back.SetArray(copy.get()));
      ASSERT_OK_AND_ASSIGN(UniqueDeviceArray host, back.Copy(*CpuDevice()));
      const auto* v = static_cast<const int32_t*>(host->array.buffers[1]);
      EXPECT_EQ(std::vector<int32_t>(v, v + 4), (std::vector<int32_t>{10, 20, 30, 40})) << dc.name;
    }
    // A move hands the producer's release on; it runs exactly once, from the new owner.
    {
      UniqueDeviceArray moved;
      ASSERT_OK(MoveToDevice(&foreign, *CpuDevice(), moved.get()));
      EXPECT_EQ(moved->array.private_data, reinterpret_cast<void*>(uintptr_t{0x10}));
      EXPECT_EQ(f.releases(), 0);
    }
    EXPECT_EQ(f.releases(), 1) << dc.name;
  }
}

TEST(DeviceArrayMove, MarksTheSourceReleased) {
  Foreign f;
  ArrowDeviceArray a{};
  a.array = ForeignInt32(&f);
  a.device_type = ARROW_DEVICE_CPU;
  ArrowDeviceArray b;
  DeviceArrayMove(&a, &b);
  EXPECT_EQ(a.array.release, nullptr);
  ASSERT_NE(b.array.release, nullptr);
  b.array.release(&b.array);
  EXPECT_EQ(f.releases(), 1);
}

TEST(CudaHostToCuda, IsZeroCopyOnTheSameGpu) {
  auto host = ResolveDevice(ARROW_DEVICE_CUDA_HOST, 0);
  auto gpu = ResolveDevice(ARROW_DEVICE_CUDA, 0);
  if (!host.ok() || !gpu.ok()) {
    GTEST_SKIP() << "no CUDA GPU on this machine: "
                 << (host.ok() ? gpu.status() : host.status()).message();
  }
  for (ArrowDeviceType from : {ARROW_DEVICE_CUDA_HOST, ARROW_DEVICE_CUDA_MANAGED}) {
    ASSERT_OK_AND_ASSIGN(Device * src_dev, ResolveDevice(from, 0));
    auto array = testing::ArrayFromJson(Field::Make("l", "x"), "[1, 2, 3]");
    UniqueSchema schema;
    UniqueDeviceArray cpu = testing::ToCpuDeviceArray(std::move(array).ValueOrDie(), &schema);
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArray src,
                         testing::CopyToDevice(schema.get(), cpu.get(), *src_dev));
    const std::vector<const void*> before = Buffers(src->array);
    UniqueDeviceArray dst;
    ASSERT_OK(MoveToDevice(src.get(), **gpu, dst.get()));
    EXPECT_EQ(Buffers(dst->array), before);
    EXPECT_EQ(dst->device_type, ARROW_DEVICE_CUDA);
    // And CUDA memory cannot move to the host.
    UniqueDeviceArray back;
    ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "",
                       MoveToDevice(dst.get(), *CpuDevice(), back.get()));
  }
}

}  // namespace
}  // namespace ferry
