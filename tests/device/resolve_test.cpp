// Resolving devices by (type, id) and by name: ParseDevice agrees with ResolveDevice for every
// kind, reads back Device::ToString(), and names what is wrong with a bad name.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "ferry/device/device.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

TEST(ParseDevice, AgreesWithResolveDeviceForEveryKind) {
  const std::pair<const char*, ArrowDeviceType> kinds[] = {
      {"cuda", ARROW_DEVICE_CUDA},
      {"cuda_host", ARROW_DEVICE_CUDA_HOST},
      {"cuda_managed", ARROW_DEVICE_CUDA_MANAGED},
      {"opencl", ARROW_DEVICE_OPENCL},
      {"guarded", ARROW_DEVICE_EXT_DEV},
  };
  for (const auto& [name, type] : kinds) {
    Result<Device*> resolved = ResolveDevice(type, 0);
    for (const std::string& spelled : {std::string(name), std::string(name) + ":0"}) {
      Result<Device*> parsed = ParseDevice(spelled);
      ASSERT_EQ(parsed.ok(), resolved.ok()) << spelled;
      if (resolved.ok()) {
        EXPECT_EQ(*parsed, *resolved) << spelled;
      } else {
        EXPECT_EQ(parsed.status().message(), resolved.status().message()) << spelled;
      }
    }
  }
  ASSERT_OK_AND_ASSIGN(Device * cpu, ParseDevice("cpu"));
  EXPECT_EQ(cpu, CpuDevice());
  ASSERT_OK_AND_ASSIGN(Device * cpu0, ParseDevice("CPU:0"));
  EXPECT_EQ(cpu0, CpuDevice());
}

TEST(ParseDevice, ReadsBackEachDevicesToString) {
  ASSERT_OK_AND_ASSIGN(Device * guarded, ResolveDevice(ARROW_DEVICE_EXT_DEV, 0));
  EXPECT_EQ(guarded->ToString(), "GUARDED:0");
  for (Device* d : {CpuDevice(), guarded}) {
    ASSERT_OK_AND_ASSIGN(Device * back, ParseDevice(d->ToString()));
    EXPECT_EQ(back, d) << d->ToString();
  }
  for (ArrowDeviceType type : {ARROW_DEVICE_CUDA, ARROW_DEVICE_CUDA_HOST, ARROW_DEVICE_CUDA_MANAGED,
                               ARROW_DEVICE_OPENCL}) {
    Result<Device*> d = ResolveDevice(type, 0);
    if (!d.ok()) continue;  // absent here: AgreesWithResolveDeviceForEveryKind checked the refusal
    ASSERT_OK_AND_ASSIGN(Device * back, ParseDevice((*d)->ToString()));
    EXPECT_EQ(back, *d) << (*d)->ToString();
  }
}

TEST(ParseDevice, NamesWhatIsWrong) {
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "device \"tpu:0\" is not a device name (cpu, cuda:N", ParseDevice("tpu:0"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "the id after ':' is not a non-negative integer",
                     ParseDevice("cuda:"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "the id after ':' is not a non-negative integer",
                     ParseDevice("cuda:-1"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "the id after ':' is not a non-negative integer",
                     ParseDevice("opencl:0x"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "the CPU has only id 0", ParseDevice("cpu:1"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "is not a device name", ParseDevice(""));
  // A well-formed name of a device that is not there fails as ResolveDevice does.
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "EXT_DEV device 3 does not exist",
                     ParseDevice("guarded:3"));
}

}  // namespace
}  // namespace ferry
