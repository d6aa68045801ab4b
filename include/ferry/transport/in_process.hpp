// The in-process transport: two connected ends in one process, for tests and threads.
#pragma once

#include <memory>
#include <utility>

#include "ferry/abi/export.h"
#include "ferry/transport/transport.hpp"

namespace ferry::transport {

/// Two connected in-process ends. Messages are copied once, into the receiver's mailbox; a
/// region shared by one end can be fetched by the other (copied out, with every reference
/// checked against it), as over UCX. Receives time out by `clock` (NULL: Clock::Real()).
FERRY_EXPORT std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> MakeInProcessPair(
    std::shared_ptr<Clock> clock = nullptr);

}  // namespace ferry::transport
