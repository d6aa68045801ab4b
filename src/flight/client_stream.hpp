// Internal to the flight layer: the client's streams. DoGet decoded as it arrives, and several
// endpoints read one after the other, or several at once, as one stream.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
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
Result<UniqueDeviceArrayStream> OpenDoGet(
    std::shared_ptr<grpc::Channel> channel, const std::string& token, const std::string& ticket,
    const GetOptions& options, std::chrono::milliseconds timeout,
    const std::vector<std::pair<std::string, std::string>>& headers = {});

/// Opens one endpoint's stream.
using EndpointOpener = std::function<Result<UniqueDeviceArrayStream>()>;

/// One stream of a flight's endpoints read `parallel` at a time by reader threads, each endpoint
/// buffering at most two batches: `endpoints[i]` opens endpoint i. This thread opens endpoint 0,
/// whose schema is the stream's, while the readers open the next ones (their connections are
/// set up at once); a failure to open endpoint 0 is returned as it is. With `ordered`, batches come
/// out in the endpoints' order and only endpoints within `parallel` of the one being taken from are
/// read; else as they arrive. With `window` >= 0 the readers share it: all together, they read at
/// most `window` batches past those the caller asked for. The first failure fails the stream,
/// naming the endpoint. Releasing the stream waits for reads in progress, each bounded by its
/// stream's timeout.
Result<UniqueDeviceArrayStream> ReadParallel(std::vector<EndpointOpener> endpoints, size_t parallel,
                                             bool ordered, int64_t window,
                                             ArrowDeviceType device_type);

/// One stream of several: `first` (already open) then each of `rest`, opened when reached. The
/// schemas must be equal. Batches are on `device_type`.
Result<UniqueDeviceArrayStream> Concatenate(
    UniqueDeviceArrayStream first,
    std::vector<std::function<Result<UniqueDeviceArrayStream>()>> rest,
    ArrowDeviceType device_type);

/// Bytes received per plane, counted by the streams of CountBytes.
struct PlaneCounters {
  std::atomic<int64_t> shm{0}, ucx{0}, grpc{0};
};

/// `inner`, whose batches' buffer bytes (in host memory) are added to `*counter` as they are
/// handed out, and whose errors say where the stream came from (`context`: the plane, the
/// location and the server). `counters` keeps the counter alive.
Result<UniqueDeviceArrayStream> CountBytes(UniqueDeviceArrayStream inner,
                                           std::shared_ptr<PlaneCounters> counters,
                                           std::atomic<int64_t>* counter, std::string context);

/// Move a CPU batch to `device` (NULL or the CPU: as it is), as the dipc client does.
Status Deliver(const ArrowSchema* schema, UniqueDeviceArray batch, Device* device,
               ArrowDeviceArray* out);

}  // namespace ferry::flight::internal
