// The dissociated-IPC client: connect with a URI and a ticket, and read the dataset as an
// ArrowDeviceArrayStream whose batches land on the device asked for.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/device/device.hpp"
#include "ferry/dipc/uri.hpp"
#include "ferry/ipc/decoder.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::dipc {

/// How a client reads. Plain values.
struct FERRY_EXPORT ClientOptions {
  /// Where batches land: the CPU (in place over shared memory: no copy), or any device of the
  /// device layer (one copy of each batch, through the device layer). NULL means the CPU.
  Device* device = nullptr;
  /// Checks on what arrives (full validation by default: the peer is not trusted).
  ipc::ReadOptions read;
  /// How long the server may stay silent before the stream fails.
  std::chrono::milliseconds timeout{30000};
  /// How many messages may arrive ahead of their turn.
  uint32_t reorder_window = 64;
};

/// Connect to `uri`, send `ticket` as the want_data request and return the stream. The schema
/// arrives before this returns, so a refused ticket or a dead server fails here, with the
/// server's message. Batches borrowed from shared memory keep their segment until released,
/// then the client sends free_data (batched).
FERRY_EXPORT Result<UniqueDeviceArrayStream> ConnectStream(const Uri& uri,
                                                           const std::string& ticket,
                                                           ClientOptions options = {});
/// Read over a connection the caller made (a custom transport, a test's in-process pair): as
/// ConnectStream, with `uri` giving only the want_data and free_data tags.
FERRY_EXPORT Result<UniqueDeviceArrayStream> ConnectStream(
    std::unique_ptr<transport::Connection> connection, const Uri& uri, const std::string& ticket,
    ClientOptions options = {});
/// The two-connection shape: metadata from `metadata_uri`, bodies (and free_data) through a
/// second connection to `data_uri` (Server::data_uri()). The two are paired by a random key sent
/// with the ticket.
FERRY_EXPORT Result<UniqueDeviceArrayStream> ConnectStream(const Uri& metadata_uri,
                                                           const Uri& data_uri,
                                                           const std::string& ticket,
                                                           ClientOptions options = {});

}  // namespace ferry::dipc
