// The dissociated-IPC client: connect with a URI and a ticket, and read the dataset as an
// ArrowDeviceArrayStream whose batches land on the device asked for.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/clock.hpp"
#include "ferry/core/result.hpp"
#include "ferry/device/device.hpp"
#include "ferry/dipc/connection_pool.hpp"
#include "ferry/dipc/uri.hpp"
#include "ferry/ipc/decoder.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::dipc {

/// The window a client over ucx:// with ferry=1 uses when ClientOptions::window is -1: record
/// batches the server may send beyond those asked for (256 batches of 24 KB are 6 MB).
inline constexpr int64_t kDefaultUcxWindow = 256;

/// How a client reads. Plain values.
struct FERRY_EXPORT ClientOptions {
  /// Where batches land: the CPU (in place over shared memory: no copy), or any device of the
  /// device layer (one copy of each batch, through the device layer). NULL means the CPU. A URI
  /// whose bodies are the server's CUDA memory (kCudaIpcParameter) needs a CUDA device: batches
  /// then point into that memory, mapped by its IPC handle (no copy); other devices are refused.
  Device* device = nullptr;
  /// Checks on what arrives (full validation by default: the peer is not trusted).
  ipc::ReadOptions read;
  /// Ask a ferry server (ferry=1) to lend buffer lists (type 1) where it would rather send this
  /// client packed bodies, because UCX would emulate the client's reads of lent memory (over TCP
  /// lanes, or on one host before UCX 1.16). Implied by read.columns, so that only those
  /// columns' buffers move.
  bool buffer_lists = false;
  /// Pace a ferry server (its credit extension: shm://, and ucx:// with ferry=1): it sends at
  /// most `window` record batches beyond those this client has asked for, each stream read
  /// (get_next) asking for one; the asks go in credits of window / 4 (at least 1), so the server
  /// always holds a credit for the batch a read waits for. -1, the default: unpaced over shm://
  /// (the server sends ahead as far as its shared region allows) and over ucx:// without ferry=1;
  /// kDefaultUcxWindow over ucx:// with ferry=1, whose client would otherwise take every small body
  /// off the wire ahead of the reader. An async producer over this stream (ProduceAsync) reads only
  /// what its consumer requested, so window 0 makes the consumer's request(n) the plane's own flow
  /// control. Each batch then waits a round trip; a paced client that asks for nothing for the
  /// server's timeout is taken as stopped.
  int64_t window = -1;
  /// How long the server may stay silent (or take nothing we send) before the stream fails: a
  /// stopped server, or a link that went down, is reported after this long.
  std::chrono::milliseconds timeout{30000};
  /// How long connecting may take; 0: timeout. Over shm:// the client keeps trying while nothing
  /// listens at the socket; over ucx:// it is the wait for the endpoint to wire up, and a refusal
  /// (nothing listens at the port) fails at once. On a connection kept from an earlier stream
  /// (`pool`) it bounds the wait for the schema.
  std::chrono::milliseconds connect_timeout{0};
  /// How long the client watches for the server's next message on the CPU before it sleeps
  /// (TransportLimits::spin; shm:// and ucx://), once per wait, so an idle client stays idle;
  /// up to four times as long across the gaps of a steady stream (docs/dipc.md, "Waiting"). 0:
  /// it sleeps at once, and the kernel wakes it: on a VM whose idle cores halt, tens of µs later.
  /// Over shm:// the waiting caller reads its frame ring itself, spinning or not, so a batch
  /// wakes no other thread of the client's.
  /// docs/benchmarks.md ("Small batches") measures the choice.
  std::chrono::microseconds spin{50};
  /// What times the client's waits on its connections: the timeouts above, and the short waits
  /// for a server's last words. NULL: Clock::Real(). Tests pass a ManualClock and move it
  /// instead of waiting (a connection the caller made keeps its own clock).
  std::shared_ptr<Clock> clock;
  /// How many metadata messages, and how many bytes of them, may arrive ahead of their turn.
  uint32_t reorder_window = 64;
  int64_t reorder_bytes = int64_t{64} << 20;
  /// The largest metadata message, and the largest body, taken from the server; a larger one
  /// fails the stream with an error naming both sizes (nothing is allocated first).
  int64_t max_metadata_bytes = int64_t{64} << 20;
  int64_t max_body_bytes = int64_t{4} << 30;
  /// Where the client adds the body bytes it takes from the server: each packed body whole, and
  /// of a buffer list the buffers it fetched or mapped (only the columns of read.columns);
  /// NULL: not counted. For a caller's accounting of what moved.
  std::shared_ptr<std::atomic<int64_t>> bytes_read;
  /// The caller's W3C Trace Context (a `traceparent` header's value, and its `tracestate`),
  /// sent to a ferry server in the hello (ferry's extension: shm://, and ucx:// with ferry=1;
  /// nothing travels to a bare-protocol server), so that the session's log records carry its
  /// trace id. Empty: none, and the server uses the trace its ticket was issued with. A
  /// traceparent that is not valid fails the connect with kInvalid.
  std::string traceparent;
  std::string tracestate;
  /// Where a connection whose stream ended goes for the next stream to the same server with the
  /// same options, and where a stream looks for one first: only ucx:// with ferry=1 to a ferry
  /// server that grants it, in the one-connection shape, and only after a stream read to its end
  /// that lent this client nothing (packed bodies: what a ferry server sends a client across
  /// hosts, or on one host before UCX 1.16). A kept connection the server has closed meanwhile
  /// (its timeout, a restart) is found at the request and replaced by a new one. A kept
  /// connection whose server sends no schema within connect_timeout (a stopped server) fails the
  /// stream then, as connecting would, and is closed. NULL: each stream connects, and closes
  /// when done.
  std::shared_ptr<ConnectionPool> pool;
};

/// Connect to `uri`, send `ticket` as the want_data request and return the stream. The schema
/// arrives before this returns, so a refused ticket or a dead server fails here (with the
/// server's words when the URI says ferry=1). Batches borrowed from shared memory keep their
/// segment until released; the client frees every address it was lent (free_data, batched) and
/// closes once the stream is over and nothing is borrowed, or hands the connection to
/// options.pool.
FERRY_EXPORT Result<UniqueDeviceArrayStream> ConnectStream(const Uri& uri,
                                                           const std::string& ticket,
                                                           const ClientOptions& options = {});
/// Whether options.pool holds an idle connection that ConnectStream(uri, ..., options) would
/// take (so the stream would cost no connection set-up). False without a pool.
FERRY_EXPORT bool HasKeptConnection(const Uri& uri, const ClientOptions& options);
/// Read over a connection the caller made (a custom transport, a test's in-process pair): as
/// ConnectStream, with `uri` giving only the want_data and free_data tags.
FERRY_EXPORT Result<UniqueDeviceArrayStream> ConnectStream(
    std::unique_ptr<transport::Connection> connection, const Uri& uri, const std::string& ticket,
    const ClientOptions& options = {});
/// The split shape: metadata from `metadata_uri`, bodies (and free_data) from `data_uri`, each
/// asked for with its own want_data and the same ticket, as the protocol has it.
FERRY_EXPORT Result<UniqueDeviceArrayStream> ConnectStream(const Uri& metadata_uri,
                                                           const Uri& data_uri,
                                                           const std::string& ticket,
                                                           const ClientOptions& options = {});

}  // namespace ferry::dipc
