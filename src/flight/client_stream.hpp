// Internal to the flight layer: the client's streams. DoGet decoded as it arrives, and several
// endpoints read one after the other as one stream.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/flight/client.hpp"

namespace ferry::flight::internal {

/// DoGet `ticket` on `channel`: the stream's schema has arrived when this returns. Bodies stay
/// in gRPC's receive buffers when a message arrived in one slice (else one aligned copy);
/// batches are moved to `options.device` (one copy) when it is not the CPU.
Result<UniqueDeviceArrayStream> OpenDoGet(std::shared_ptr<grpc::Channel> channel,
                                          const std::string& token, const std::string& ticket,
                                          const GetOptions& options,
                                          std::chrono::milliseconds timeout);

/// One stream of several: `first` (already open) then each of `rest`, opened when reached. The
/// schemas must be equal. Batches are on `device_type`.
Result<UniqueDeviceArrayStream> Concatenate(
    UniqueDeviceArrayStream first,
    std::vector<std::function<Result<UniqueDeviceArrayStream>()>> rest,
    ArrowDeviceType device_type);

/// Move a CPU batch to `device` (NULL or the CPU: as it is), as the dipc client does.
Status Deliver(const ArrowSchema* schema, UniqueDeviceArray batch, Device* device,
               ArrowDeviceArray* out);

}  // namespace ferry::flight::internal
