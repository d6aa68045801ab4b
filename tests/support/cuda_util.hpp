// CUDA test support: the stand-in driver's counters and controls, and the raw driver API of the
// library ferry loaded, for producers and consumers in tests that share no code with ferry.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "support/cuda_standin/cuda_standin.h"
#include "support/cuda_standin/driver_abi.hpp"

namespace ferry::testing {

/// The stand-in's own functions, found with dlsym in the library $FERRY_CUDA_DRIVER names.
struct Standin {
  void (*counters)(FerryCudaStandinCounters*) = nullptr;
  void (*reset_counters)() = nullptr;
  void (*set_delay_us)(int64_t) = nullptr;
  int64_t (*delay_us)() = nullptr;
  int64_t (*live_allocations)() = nullptr;
  int64_t (*ipc_open_handles)() = nullptr;
  int64_t (*ipc_importers)(unsigned long long) = nullptr;  // NOLINT(google-runtime-int)
  void (*live)(FerryCudaStandinLive*) = nullptr;

  FerryCudaStandinCounters Counters() const;
  FerryCudaStandinLive Live() const;
};

/// The stand-in, or nullptr when $FERRY_CUDA_DRIVER is unset or names another driver (a GPU).
const Standin* GetStandin();

/// Fails the test binary when a test ends holding more on the stand-in than when it started
/// (allocations, streams, events, IPC mappings, context retains; ferry's reusable caches are
/// released first). Registered once, before main, in every binary that links this support.
bool RegisterStandinLeakCheck();

/// The driver API of the library ferry loads ($FERRY_CUDA_DRIVER, else libcuda.so.1), cuInit
/// called; nullptr when it cannot be loaded.
struct RawCuda {
#define FERRY_RAW_CUDA_MEMBER(name, ret, params) ret(*name) params = nullptr;
  FERRY_STANDIN_ENTRY_POINTS(FERRY_RAW_CUDA_MEMBER)
#undef FERRY_RAW_CUDA_MEMBER
};
const RawCuda* GetRawCuda();

/// Whether the driver ferry loads maps `p` in this process as device memory (an allocation or an
/// open IPC mapping), asked with cuPointerGetAttribute on GPU 0's context: what the stand-in's
/// counts say, observed the same way on any driver.
bool DriverMaps(const void* p);

/// The counters' change since construction (all zero without the stand-in).
class StandinDelta {
 public:
  StandinDelta();
  FerryCudaStandinCounters Get() const;

 private:
  FerryCudaStandinCounters start_{};
};

/// Sets the stand-in's per-operation delay for a scope, restoring the previous one after.
class StandinDelay {
 public:
  explicit StandinDelay(int64_t us);
  ~StandinDelay();
  StandinDelay(const StandinDelay&) = delete;
  StandinDelay& operator=(const StandinDelay&) = delete;

 private:
  int64_t previous_ = 0;
};

/// Pushes a GPU's primary context (GPU 0 unless named) on the calling thread for raw driver calls
/// in a scope.
class RawContext {
 public:
  explicit RawContext(int device = 0);
  ~RawContext();
  RawContext(const RawContext&) = delete;
  RawContext& operator=(const RawContext&) = delete;

 private:
  CUcontext ctx_ = nullptr;
  int device_ = 0;
};

/// Holds a GPU's primary context (GPU 0 unless named) retained for its life, so that what raw
/// driver calls make in it outlives the scopes that push it: the driver destroys a primary
/// context, and every stream, event and allocation in it, at its last release.
class RawRetain {
 public:
  explicit RawRetain(int device = 0);
  ~RawRetain();
  RawRetain(const RawRetain&) = delete;
  RawRetain& operator=(const RawRetain&) = delete;

 private:
  int device_ = 0;
  bool held_ = false;
};

/// Holds a stream back until Open() (or the timeout): a host function queued on it waits, so
/// work queued after it cannot have run yet. Deterministic where a delay would be a race.
class StreamGate {
 public:
  /// `stream` is on GPU `device`.
  explicit StreamGate(CUstream stream, int timeout_ms = 10000, int device = 0);
  ~StreamGate() { Open(); }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void Open();

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

/// A non-blocking stream on a GPU (0 unless named) made with the raw driver, destroyed with the
/// scope; it keeps its context retained until then.
class RawStream {
 public:
  explicit RawStream(int device = 0);
  ~RawStream();
  RawStream(const RawStream&) = delete;
  RawStream& operator=(const RawStream&) = delete;
  CUstream get() const { return stream_; }
  /// What ferry's stream arguments are: a pointer to the handle.
  void* arg() { return &stream_; }

 private:
  int device_ = 0;
  RawRetain retain_;  // made first, released last
  CUstream stream_ = nullptr;
};

}  // namespace ferry::testing

/// Skip (naming why) when the test needs the stand-in's counters or controls: on a real GPU the
/// same binary runs with $FERRY_CUDA_DRIVER unset.
#define FERRY_STANDIN_OR_SKIP(var)                                                         \
  const ::ferry::testing::Standin* var = ::ferry::testing::GetStandin();                   \
  if (var == nullptr) {                                                                    \
    GTEST_SKIP() << "needs the stand-in CUDA driver's counters ($FERRY_CUDA_DRIVER names " \
                    "tests/support/cuda_standin's library under ctest); on a GPU the "     \
                    "behaviour is checked, the counts are not";                            \
  }
