// Device test support: the devices a conformance suite runs on, skip-or-resolve, and helpers to
// move test arrays onto a device.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ferry/abi/unique.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/device/device.hpp"
#include "ferry/format/array.hpp"

namespace ferry::testing {

/// One device a conformance suite is parameterised over.
struct DeviceCase {
  ArrowDeviceType type;
  int64_t id;
  std::string name;  // for test names: CPU, GUARDED, OPENCL0, CUDA0, CUDA_HOST0, CUDA_MANAGED0
};

/// Every device kind ferry supports; those this machine lacks skip with the reason.
const std::vector<DeviceCase>& ConformanceDevices();

/// Resolve `c`, or the reason it cannot be resolved here (for GTEST_SKIP).
Result<Device*> ResolveForTest(const DeviceCase& c);

/// Whether $FERRY_REQUIRE_DEVICES (a comma-separated list of DeviceCase names, e.g.
/// "OPENCL0,CUDA0") names `c`: then a missing device fails the test instead of skipping it, so a
/// CI machine that should have the device cannot pass by skipping.
bool DeviceRequired(const DeviceCase& c);

/// Export `array` and wrap it as a CPU device array.
UniqueDeviceArray ToCpuDeviceArray(Array array, UniqueSchema* schema_out);

/// A source of batches for producers under test: hands out `batches` in order, then the end; an
/// IOError ("the source broke at batch N") instead of batch `fail_at` when it is >= 0.
class BatchSource final : public DeviceArrayProducer {
 public:
  BatchSource(UniqueSchema schema, std::vector<UniqueDeviceArray> batches, int fail_at = -1);
  Status GetSchema(ArrowSchema* out) override;
  Status GetNext(ArrowDeviceArray* out) override;

 private:
  UniqueSchema schema_;
  std::vector<UniqueDeviceArray> batches_;
  int fail_at_;
  int next_ = 0;
};

/// A BatchSource of `count` CPU batches of `rows` int64 values ("x") counting up from 0, their
/// JSON appended to `*expected`.
std::unique_ptr<BatchSource> IntSource(int count, int rows, int fail_at,
                                       std::vector<nlohmann::json>* expected);

/// Copy a CPU device array to `device` with ferry (complete on return).
Result<UniqueDeviceArray> CopyToDevice(const ArrowSchema* schema, const ArrowDeviceArray* src,
                                       Device& device);

/// The JSON of a device array on any device (copied to the CPU with ferry), or the error text.
std::string DeviceArrayToJson(const ArrowSchema* schema, const ArrowDeviceArray* array);

/// Read a device stream to its end, or `limit` batches of it when limit >= 0: each batch's rows
/// as JSON (rendered as DeviceArrayToJson does), or the stream's error with its code and message.
Result<std::vector<nlohmann::json>> DrainToJson(ArrowDeviceArrayStream* stream, int64_t limit = -1);

}  // namespace ferry::testing

/// Resolve a DeviceCase or skip the test, saying which device is missing and why.
#define FERRY_RESOLVE_OR_SKIP(var, device_case)                                           \
  ::ferry::Device* var = nullptr;                                                         \
  do {                                                                                    \
    auto _r = ::ferry::testing::ResolveForTest(device_case);                              \
    if (!_r.ok()) {                                                                       \
      if (::ferry::testing::DeviceRequired(device_case)) {                                \
        FAIL() << (device_case).name                                                      \
               << " is required ($FERRY_REQUIRE_DEVICES) but: " << _r.status().message(); \
      }                                                                                   \
      GTEST_SKIP() << "no " << (device_case).name                                         \
                   << " device on this machine: " << _r.status().message();               \
    }                                                                                     \
    var = *_r;                                                                            \
  } while (false)
