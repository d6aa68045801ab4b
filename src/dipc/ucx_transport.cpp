// Placeholder until the UCX transport lands: every entry point reports that this build has none.
#include "ferry/dipc/ucx_transport.hpp"

#include <cerrno>

namespace ferry::dipc {

bool UcxAvailable() noexcept { return false; }

Result<std::unique_ptr<Listener>> ListenUcx(const std::string& /*address*/) {
  return Status(ENOTSUP, "this build of ferry has no UCX transport");
}

Result<std::unique_ptr<Connection>> ConnectUcx(const std::string& /*address*/,
                                               std::chrono::milliseconds /*timeout*/) {
  return Status(ENOTSUP, "this build of ferry has no UCX transport");
}

}  // namespace ferry::dipc
