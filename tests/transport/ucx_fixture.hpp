// The UCX transport suites' fixture: a listener on 127.0.0.1 with a registered region, one
// client connected with that region's remote_handle, and the server's end of it, all timed by
// one ManualClock (clock_): a test sees a wait on it (AwaitWaiters) and a timeout by moving it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "ferry/transport/ucx.hpp"
#include "support/test_util.hpp"

namespace ferry::transport {

using namespace std::chrono_literals;

// Set in the child process the peer-death test starts: the listener to connect to.
constexpr const char* kChildEnv = "FERRY_UCX_TEST_CONNECT_TO";

// How many sends a sender thread finished; a test waits (bounded) for a count.
class SendCount {
 public:
  void Add() {
    {
      std::lock_guard lock(mutex_);
      ++count_;
    }
    changed_.notify_all();
  }
  int load() const {
    std::lock_guard lock(mutex_);
    return count_;
  }
  // Whether `n` sends finished within `limit` of real time.
  bool AwaitAtLeast(int n, std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return count_ >= n; });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int count_ = 0;
};

class UcxTransport : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!UcxAvailable()) GTEST_SKIP() << "this build of ferry has no UCX transport";
    if (std::getenv(kChildEnv) != nullptr) GTEST_SKIP() << "the child process runs one test";
    TransportLimits limits;
    limits.clock = clock_;
    ASSERT_OK_AND_ASSIGN(listener_, ListenUcx("127.0.0.1:0", limits));
    // Registered before the client connects: its key travels as the URI's remote_handle would.
    ASSERT_OK_AND_ASSIGN(region_, listener_->CreateRegion(kRegionBytes));
    ConnectOptions options;
    options.limits.timeout = 5s;
    options.limits.clock = clock_;
    options.remote_handle = region_->remote_handle();
    ASSERT_OK_AND_ASSIGN(client_, ConnectUcx(listener_->address(), options));
    ASSERT_OK_AND_ASSIGN(server_, listener_->Accept(5s));
    ASSERT_OK(server_->ShareRegion(region_));
  }

  static constexpr int64_t kRegionBytes = 16 << 20;
  // Nobody moves it but the tests of timeouts: every other wait ends by what arrives.
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<Listener> listener_;
  std::shared_ptr<Region> region_;
  std::unique_ptr<Connection> client_, server_;
};

}  // namespace ferry::transport
