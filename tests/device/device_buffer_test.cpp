// Device buffers: copies to and from every device, zero-copy moves and their refusals.
#include "ferry/device/device_buffer.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "ferry/device/guarded.hpp"
#include "support/device_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

class BufferConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(BufferConformance, RoundTripsThroughTheDevice) {
  FERRY_RESOLVE_OR_SKIP(device, testing::ConformanceDevices()[GetParam()]);
  std::vector<uint8_t> bytes(1000);
  std::iota(bytes.begin(), bytes.end(), uint8_t{7});
  ASSERT_OK_AND_ASSIGN(UniqueBuffer on_device,
                       BufferInit(*CpuDevice(), {bytes.data(), 1000}, *device));
  EXPECT_EQ(on_device->size, 1000);
  ASSERT_OK_AND_ASSIGN(UniqueBuffer back,
                       BufferInit(*device, {on_device->data, 1000}, *CpuDevice()));
  ASSERT_EQ(back->size, 1000);
  const auto* b = static_cast<const uint8_t*>(back->data);
  EXPECT_EQ(std::vector<uint8_t>(b, b + 1000), bytes);

  // Copy into existing memory: a window of the device buffer.
  std::vector<uint8_t> window(10);
  ASSERT_OK(BufferCopy(*device, {static_cast<const uint8_t*>(on_device->data) + 500, 10},
                       *CpuDevice(), {window.data(), 10}));
  EXPECT_EQ(window, std::vector<uint8_t>(bytes.begin() + 500, bytes.begin() + 510));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "but the destination 9",
                     BufferCopy(*device, {on_device->data, 10}, *CpuDevice(), {window.data(), 9}));
}

TEST_P(BufferConformance, MovesOnTheSameDeviceKeepThePointer) {
  FERRY_RESOLVE_OR_SKIP(device, testing::ConformanceDevices()[GetParam()]);
  const uint64_t value = 0x0123456789abcdef;
  ASSERT_OK_AND_ASSIGN(UniqueBuffer src, BufferInit(*CpuDevice(), {&value, 8}, *device));
  const void* data = src->data;
  UniqueBuffer dst;
  ASSERT_OK(BufferMove(*device, src.get(), *device, dst.get()));
  EXPECT_EQ(dst->data, data);
  EXPECT_EQ(src->release, nullptr);
  // To the CPU: zero-copy only for memory the host can address.
  UniqueBuffer host;
  Status st = BufferMove(*device, dst.get(), *CpuDevice(), host.get());
  if (device->host_accessible()) {
    ASSERT_OK(st);
    EXPECT_EQ(host->data, data);
    uint64_t read = 0;
    std::memcpy(&read, host->data, 8);
    EXPECT_EQ(read, value);
  } else {
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << st.message();
    EXPECT_NE(dst->release, nullptr);  // untouched
    EXPECT_EQ(dst->data, data);
    EXPECT_EQ(host->release, nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, BufferConformance,
                         ::testing::Range<size_t>(0, testing::ConformanceDevices().size()),
                         [](const ::testing::TestParamInfo<size_t>& param_info) {
                           return testing::ConformanceDevices()[param_info.param].name;
                         });

TEST(DeviceBuffer, ZeroBytesAndNullInputs) {
  ASSERT_OK_AND_ASSIGN(UniqueBuffer empty,
                       BufferInit(*CpuDevice(), {nullptr, 0}, *GuardedDevice()));
  EXPECT_EQ(empty->size, 0);
  UniqueBuffer released;
  UniqueBuffer dst;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "released",
                     BufferMove(*GuardedDevice(), released.get(), *GuardedDevice(), dst.get()));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "NULL",
                     BufferInit(*CpuDevice(), {nullptr, 16}, *GuardedDevice()));
}

TEST(DeviceBuffer, AsyncCopiesNeedAStreamOnDevicesThatHaveThem) {
  const uint8_t byte = 1;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "needs a stream",
                     BufferInitAsync(*CpuDevice(), {&byte, 1}, *GuardedDevice(), nullptr));
  GuardedStream stream;
  GuardedStream* handle = &stream;
  ASSERT_OK_AND_ASSIGN(UniqueBuffer b,
                       BufferInitAsync(*CpuDevice(), {&byte, 1}, *GuardedDevice(), &handle));
  EXPECT_TRUE(IsGuardedMemory({b->data, 1}));
}

}  // namespace
}  // namespace ferry
