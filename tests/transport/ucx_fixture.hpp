// The UCX transport suites' fixture: a listener on 127.0.0.1 with a registered region, one
// client connected with that region's remote_handle, and the server's end of it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "ferry/transport/ucx.hpp"
#include "support/test_util.hpp"

namespace ferry::transport {

using namespace std::chrono_literals;

// Set in the child process the peer-death test starts: the listener to connect to.
constexpr const char* kChildEnv = "FERRY_UCX_TEST_CONNECT_TO";

class UcxTransport : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!UcxAvailable()) GTEST_SKIP() << "this build of ferry has no UCX transport";
    if (std::getenv(kChildEnv) != nullptr) GTEST_SKIP() << "the child process runs one test";
    ASSERT_OK_AND_ASSIGN(listener_, ListenUcx("127.0.0.1:0"));
    // Registered before the client connects: its key travels as the URI's remote_handle would.
    ASSERT_OK_AND_ASSIGN(region_, listener_->CreateRegion(kRegionBytes));
    ConnectOptions options;
    options.limits.timeout = 5s;
    options.remote_handle = region_->remote_handle();
    ASSERT_OK_AND_ASSIGN(client_, ConnectUcx(listener_->address(), options));
    ASSERT_OK_AND_ASSIGN(server_, listener_->Accept(5s));
    ASSERT_OK(server_->ShareRegion(region_));
  }

  static constexpr int64_t kRegionBytes = 16 << 20;
  std::unique_ptr<Listener> listener_;
  std::shared_ptr<Region> region_;
  std::unique_ptr<Connection> client_, server_;
};

}  // namespace ferry::transport
