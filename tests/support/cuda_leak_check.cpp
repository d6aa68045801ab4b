// The stand-in leak check (see cuda_util.hpp): every test of a binary that links the CUDA test
// support must give back each device, pinned and managed allocation, stream, event, IPC mapping
// and context retain it took. Counted by the stand-in; a test binary that runs on a real driver
// checks nothing here (the driver has no such counts).
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ferry/device/device.hpp"
#include "support/cuda_util.hpp"

namespace ferry::testing {

namespace {

// Each field of FerryCudaStandinLive with its name, in order.
constexpr const char* kLiveNames[] = {"device allocations",
                                      "pinned allocations",
                                      "managed allocations",
                                      "IPC mappings",
                                      "streams",
                                      "events",
                                      "context retains"};
static_assert(sizeof(kLiveNames) / sizeof(kLiveNames[0]) ==
              sizeof(FerryCudaStandinLive) / sizeof(int64_t));

int DeviceCount() {
  const RawCuda* cu = GetRawCuda();
  int n = 0;
  if (cu == nullptr || cu->cuDeviceGetCount(&n) != 0) return 0;
  return n;
}

// Frees what ferry's CUDA devices cache for reuse, so that only what a test holds is counted.
void ReleaseCached() {
  for (int i = 0; i < DeviceCount(); ++i) {
    if (auto dev = ResolveDevice(ARROW_DEVICE_CUDA, i); dev.ok()) (void)(*dev)->ReleaseCached();
  }
}

// What grew from `before` to `after`, field by field; empty when nothing did.
std::string Describe(const FerryCudaStandinLive& before, const FerryCudaStandinLive& after) {
  const auto* a = reinterpret_cast<const int64_t*>(&before);
  const auto* b = reinterpret_cast<const int64_t*>(&after);
  std::ostringstream out;
  for (size_t i = 0; i < sizeof(kLiveNames) / sizeof(kLiveNames[0]); ++i) {
    if (b[i] <= a[i]) continue;  // fewer than before is ferry's caches released, not a leak
    if (out.tellp() > 0) out << ", ";
    out << kLiveNames[i] << " " << a[i] << " -> " << b[i];
  }
  return out.str();
}

// A death test's child runs the environment again: it must find the process as the test left it
// (a test that hides the driver, say), so the check stays out of it.
bool InDeathTestChild() { return !GTEST_FLAG_GET(internal_run_death_test).empty(); }

// $FERRY_TEST_COLD_CUDA set: run as on a GPU machine, where nothing warms ferry's GPUs before the
// first test (so a test meets the driver's primary context as the first user does) and nothing
// counts leaks. ctest's *_cold suites run the CUDA cases so on the stand-in.
bool Cold() {
  const char* cold = std::getenv("FERRY_TEST_COLD_CUDA");
  return cold != nullptr && *cold != '\0';
}

std::vector<std::string>& Leaks() {
  static std::vector<std::string> leaks;
  return leaks;
}

class LeakListener : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo& /*info*/) override {
    active_ = !InDeathTestChild() && !Cold() && GetStandin() != nullptr;
    if (!active_) return;
    // ferry's caches were released when the previous test ended (or by the environment).
    before_ = GetStandin()->Live();
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (!active_) return;
    const Standin* s = GetStandin();
    // Streams drain, stream-ordered frees run and peers close handles after a test returns:
    // give them a moment, bounded, before calling anything a leak.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    FerryCudaStandinLive now{};
    for (bool released = false;; released = true) {
      now = s->Live();
      if (Describe(before_, now).empty()) return;
      if (!released) {
        ReleaseCached();
        continue;
      }
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    Leaks().push_back(std::string(info.test_suite_name()) + "." + info.name() + ": " +
                      Describe(before_, now));
  }

 private:
  FerryCudaStandinLive before_{};
  bool active_ = false;
};

// Makes ferry's per-GPU state (the primary context, the internal stream) before the first test,
// so that it is not counted against the test that happens to use a GPU first; reports the leaks
// after the last test, which fails the binary.
class LeakReport : public ::testing::Environment {
 public:
  void SetUp() override {
    if (InDeathTestChild() || Cold() || GetStandin() == nullptr) return;
    for (int i = 0; i < DeviceCount(); ++i) {
      if (auto dev = ResolveDevice(ARROW_DEVICE_CUDA, i); dev.ok()) {
        (void)(*dev)->InternalStream();
      }
    }
  }

  void TearDown() override {
    for (const std::string& leak : Leaks()) {
      ADD_FAILURE() << "the stand-in CUDA driver still holds what a test took: " << leak;
    }
  }
};

}  // namespace

bool RegisterStandinLeakCheck() {
  ::testing::UnitTest::GetInstance()->listeners().Append(new LeakListener);
  ::testing::AddGlobalTestEnvironment(new LeakReport);
  return true;
}

}  // namespace ferry::testing
