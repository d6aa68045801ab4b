// Devices: resolution and its errors, the CPU singleton, the C struct, the guarded device's fault
// and the run-time loading of the CUDA driver and the OpenCL runtime.
#include "ferry/device/device.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "ferry/core/status_code.hpp"
#include "ferry/device/guarded.hpp"
#include "support/device_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

using ::testing::HasSubstr;

TEST(Device, CpuIsOneSingleton) {
  Device* cpu = CpuDevice();
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->device_type(), ARROW_DEVICE_CPU);
  EXPECT_EQ(cpu->device_id(), -1);
  EXPECT_TRUE(cpu->host_accessible());
  for (int64_t id : {-1, 0, 3}) {
    ASSERT_OK_AND_ASSIGN(Device * resolved, ResolveDevice(ARROW_DEVICE_CPU, id));
    EXPECT_EQ(resolved, cpu);
  }
  EXPECT_EQ(cpu->ToString(), "CPU");
}

TEST(Device, TheCStructLeadsBackToTheDevice) {
  for (Device* d : {CpuDevice(), GuardedDevice()}) {
    FerryDevice* c = d->c_device();
    EXPECT_EQ(c->device_type, d->device_type());
    EXPECT_EQ(c->device_id, d->device_id());
    for (auto* fn :
         {reinterpret_cast<void*>(c->array_init), reinterpret_cast<void*>(c->array_move),
          reinterpret_cast<void*>(c->buffer_init), reinterpret_cast<void*>(c->buffer_move),
          reinterpret_cast<void*>(c->buffer_copy), reinterpret_cast<void*>(c->synchronize_event)}) {
      EXPECT_NE(fn, nullptr);
    }
    EXPECT_EQ(Device::FromC(c), d);
  }
}

TEST(Device, AForeignStructIsNeverReadThrough) {
  // A struct ferry did not make: FromC must not trust (or read) its private_data.
  FerryDevice foreign{};
  foreign.device_type = ARROW_DEVICE_CPU;
  foreign.private_data = reinterpret_cast<void*>(uintptr_t{0x10});
  EXPECT_EQ(Device::FromC(&foreign), nullptr);
  EXPECT_EQ(Device::FromC(nullptr), nullptr);
}

TEST(Device, UnknownDevicesNameWhatWasAsked) {
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "EXT_DEV device 5 does not exist",
                     ResolveDevice(ARROW_DEVICE_EXT_DEV, 5));
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "device type 99 (unknown) is not supported",
                     ResolveDevice(static_cast<ArrowDeviceType>(99), 0));
}

TEST(Device, OutOfRangeOrdinalsAreNotFound) {
  auto opencl = ResolveDevice(ARROW_DEVICE_OPENCL, 0);
  if (!opencl.ok())
    GTEST_SKIP() << "no OpenCL device on this machine: " << opencl.status().message();
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "OPENCL device 999 does not exist",
                     ResolveDevice(ARROW_DEVICE_OPENCL, 999));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "OPENCL device -1 does not exist",
                     ResolveDevice(ARROW_DEVICE_OPENCL, -1));
}

TEST(Device, CudaOrdinalsAreCheckedOrTheMissingDriverIsNamed) {
  auto cuda = ResolveDevice(ARROW_DEVICE_CUDA, 0);
  if (cuda.ok()) {
    EXPECT_EQ((*cuda)->device_type(), ARROW_DEVICE_CUDA);
    ASSERT_RAISES_WITH(StatusCode::kNotFound, "CUDA device 4096 does not exist",
                       ResolveDevice(ARROW_DEVICE_CUDA, 4096));
    // One object per (kind, ordinal), stable across calls.
    ASSERT_OK_AND_ASSIGN(Device * again, ResolveDevice(ARROW_DEVICE_CUDA, 0));
    EXPECT_EQ(again, *cuda);
  } else {
    EXPECT_EQ(cuda.status().code(), StatusCode::kNotFound);
    EXPECT_THAT(cuda.status().message(), HasSubstr("CUDA driver"));
  }
}

// The loaders read their environment once per process, so these run in a fresh child.
TEST(DeviceDeathTest, AMissingCudaDriverIsReportedNotFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("FERRY_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
        for (ArrowDeviceType t :
             {ARROW_DEVICE_CUDA, ARROW_DEVICE_CUDA_HOST, ARROW_DEVICE_CUDA_MANAGED}) {
          auto r = ResolveDevice(t, 0);
          std::fprintf(stderr, "%s:%s\n", StatusCodeName(r.status().code()),
                       r.ok() ? "resolved" : r.status().message().c_str());
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "NotFound:no CUDA driver: dlopen\\(/nonexistent/libcuda.so.1\\) failed");
}

TEST(DeviceDeathTest, AMissingOpenClRuntimeIsReportedNotFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("FERRY_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1", 1);
        auto r = ResolveDevice(ARROW_DEVICE_OPENCL, 0);
        std::fprintf(stderr, "%s:%s\n", StatusCodeName(r.status().code()),
                     r.ok() ? "resolved" : r.status().message().c_str());
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "NotFound:no OpenCL runtime: dlopen\\(/nonexistent/libOpenCL.so.1\\) failed");
}

TEST(DeviceDeathTest, TheHostCannotTouchGuardedMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_OK_AND_ASSIGN(void* p, GuardedDevice()->Allocate(64, nullptr));
  EXPECT_TRUE(IsGuardedMemory({p, 64}));
  EXPECT_DEATH({ std::printf("%d\n", *static_cast<volatile const uint8_t*>(p)); }, "");
  GuardedDevice()->Free(p, 64);
}

TEST(Device, GuardedCopiesGoThroughTheAlias) {
  Device& g = *GuardedDevice();
  ASSERT_OK_AND_ASSIGN(void* p, g.Allocate(16, nullptr));
  const char text[16] = "fifteen letters";
  char back[16] = {};
  ASSERT_OK(CopyBytes(*CpuDevice(), text, g, p, 16, nullptr));
  ASSERT_OK(CopyBytes(g, p, *CpuDevice(), back, 16, nullptr));
  EXPECT_STREQ(back, "fifteen letters");
  // A range that runs outside the allocation's chunk is refused, not copied.
  ASSERT_RAISES_WITH(
      StatusCode::kInvalidArgument, "not guarded device memory",
      CopyBytes(g, static_cast<char*>(p) + 8, *CpuDevice(), back, int64_t{1} << 40, nullptr));
  g.Free(p, 16);
}

TEST(Device, CheckRuntimeAgreesWithTheHeader) { ASSERT_OK(CheckDeviceRuntime()); }

}  // namespace
}  // namespace ferry
