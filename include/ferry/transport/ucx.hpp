// The UCX transport (Debian's libucx): tag messaging with tag masks for metadata and bodies,
// and UCX-registered memory read with RMA gets for type-1 bodies. Over TCP it reaches other
// hosts. Progress is event driven (the worker's event descriptor), so an idle connection costs
// no CPU.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "ferry/abi/export.h"
#include "ferry/transport/transport.hpp"

namespace ferry::transport {

/// Whether this build has the UCX transport.
FERRY_EXPORT bool UcxAvailable() noexcept;
/// Listen on `address` ("host:port"; port 0 or an empty address picks a free port on
/// 127.0.0.1). ENOTSUP when the build has no UCX.
FERRY_EXPORT Result<std::unique_ptr<Listener>> ListenUcx(const std::string& address);
/// Connect to a UCX listener at "host:port".
FERRY_EXPORT Result<std::unique_ptr<Connection>> ConnectUcx(const std::string& address,
                                                            std::chrono::milliseconds timeout);

}  // namespace ferry::transport
