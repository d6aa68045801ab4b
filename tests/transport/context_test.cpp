// The UCP context (src/transport/ucx/context.hpp): which transports its workers open, read from
// UCX's own report of the context's resources.
#if FERRY_WITH_UCX

#include "transport/ucx/context.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace ferry::transport {
namespace {

using internal::ucx::Context;

// UCX's report of a context: a line "resource N : md M dev D flags -- TL/DEVICE" for each
// transport resource its workers open.
std::string Report(const Context& context) {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  if (out == nullptr) return {};
  ucp_context_print_info(context.handle(), out);
  std::fclose(out);
  std::string report(text, size);
  std::free(text);
  return report;
}

bool Opens(const std::string& report, const std::string& transport) {
  return report.find("-- " + transport + "/") != std::string::npos;
}

// Sets (or, with nullopt, removes) an environment variable for one test, and puts it back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Context, ForAPeerOnAnotherHostOpensNoSharedMemoryTransport) {
  const ScopedEnv tls("UCX_TLS", std::nullopt);
  Result<std::shared_ptr<Context>> here = Context::Make(false, {}, true);
  Result<std::shared_ptr<Context>> there = Context::Make(false, {}, false);
  ASSERT_TRUE(here.ok()) << here.status().ToString();
  ASSERT_TRUE(there.ok()) << there.status().ToString();
  const std::string near = Report(**here);
  const std::string far = Report(**there);
  // Left to itself, UCX opens shared memory on this machine: what the other context leaves out.
  ASSERT_TRUE(Opens(near, "posix")) << near;
  for (const char* shared : {"posix", "sysv", "cma", "knem", "xpmem"}) {
    EXPECT_FALSE(Opens(far, shared)) << shared << " in\n" << far;
  }
  EXPECT_TRUE(Opens(far, "tcp")) << far;
}

TEST(Context, LeavesTheTransportsToTheUserWhoSetsUcxTls) {
  const ScopedEnv tls("UCX_TLS", "posix,tcp,self");
  Result<std::shared_ptr<Context>> there = Context::Make(false, {}, false);
  ASSERT_TRUE(there.ok()) << there.status().ToString();
  const std::string far = Report(**there);
  EXPECT_TRUE(Opens(far, "posix")) << far;
  EXPECT_FALSE(Opens(far, "sysv")) << far;  // what UCX_TLS left out
}

}  // namespace
}  // namespace ferry::transport

#endif  // FERRY_WITH_UCX
