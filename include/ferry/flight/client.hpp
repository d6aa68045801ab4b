// ferry's Arrow Flight client: list, describe and read flights from any Flight server, and
// upload to one. Reading follows the locations a ferry server offers, fastest first: shared
// memory when the server is on this host, then UCX, then DoGet over gRPC.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/device/async_stream.hpp"
#include "ferry/device/device.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/flight/info.hpp"
#include "ferry/ipc/decoder.hpp"

namespace ferry::flight {

/// How a client connects. Plain values.
struct FERRY_EXPORT ClientOptions {
  /// Sent as `authorization: Bearer <token>` on every call; empty: none.
  std::string token;
  /// For grpc+tls: the certificates to trust (PEM text; empty: the system's), and a client
  /// certificate and key for servers that ask for one.
  std::string tls_roots;
  std::string tls_cert;
  std::string tls_key;
  /// Check the server's certificate against this name instead of the URI's host.
  std::string tls_server_name;
  /// Headers sent on each call that returns at once (list, info, schema, action), besides the
  /// token: a federated server marks its calls to its peers this way.
  std::vector<std::pair<std::string, std::string>> headers;
  /// The deadline of each call that returns at once (list, info, schema, action), and how long
  /// a stream may stay silent on the fast planes.
  std::chrono::milliseconds timeout{30000};
  /// Where the client tells which location it chose and why it fell back, one line each
  /// (verbose logging). Unset: nowhere.
  std::function<void(const std::string&)> log;
  /// The caller's W3C Trace Context: sent as the `traceparent` (and `tracestate`) header of
  /// every call, and in the hello of every shm:// and ucx:// location a read follows
  /// (dipc::ClientOptions::traceparent), so that the server's and the sessions' log records
  /// carry its trace id. Empty: none. Connect refuses a traceparent that is not valid.
  std::string traceparent;
  std::string tracestate;
  /// Keep a UCX connection whose read ended for the next read from the same server
  /// (dipc::ClientOptions::pool, shared by the client and its streams): a new one costs
  /// 10-80 ms of set-up. Only connections that lent this client nothing are kept, each up to
  /// 10 s idle. False: each read connects, and closes when done.
  bool keep_connections = true;
};

/// Which location Get uses: the fastest that works (kAuto), or only the one named.
enum class Via : int8_t { kAuto = 0, kShm = 1, kUcx = 2, kGrpc = 3 };

/// How Get reads. Plain values.
struct FERRY_EXPORT GetOptions {
  Via via = Via::kAuto;
  /// Where batches land: NULL or the CPU (in place over shared memory, gRPC's buffers over
  /// DoGet), or any device of the device layer (one copy per batch).
  Device* device = nullptr;
  /// Checks on what arrives (full validation by default: the server is not trusted).
  ipc::ReadOptions read;
  /// Over a ucx:// location, ask the server to lend buffer lists where it would rather send
  /// packed bodies (dipc::ClientOptions::buffer_lists; read.columns implies it).
  bool buffer_lists = false;
  /// How many endpoints of a flight are read at once, each through its own fastest location:
  /// 0 is min(endpoints, 4), 1 reads them one after the other. Each endpoint holds at most two
  /// batches ready; an `ordered` flight's batches come out in its order, others as they arrive.
  int parallel = 0;
  /// Pace the read: at most `window` batches are read past those the caller has asked for
  /// (get_next), across all endpoints read at once, and each shm:// or ucx:// server sends only
  /// what was asked of it (dipc::ClientOptions::window). Over DoGet, gRPC's own flow control (in
  /// bytes) bounds what the server sends ahead of ferry's reads. -1: unpaced.
  int64_t window = -1;
  /// How long a read over an shm:// or ucx:// location watches for the next message on the CPU
  /// before it sleeps (dipc::ClientOptions::spin).
  std::chrono::microseconds spin = dipc::ClientOptions{}.spin;
  /// With `via` kAuto, an endpoint whose server is on another host and whose expected size
  /// (Endpoint::expected_bytes: FlightInfo::total_bytes over its endpoints) is below this is read
  /// over DoGet before UCX: a UCX connection costs 12-20 ms to set up on the 2-core VM, in which
  /// DoGet moves a few megabytes (docs/flight.md). 0: UCX first for every size.
  int64_t grpc_below = int64_t{4} << 20;
};

/// Body bytes a client's reads received through each kind of location so far: the buffers of
/// each batch as its stream handed it out, for batches in host memory (a batch landed on a GPU
/// is not counted: sizing it would read its offsets back). Plain values.
struct FERRY_EXPORT PlaneBytes {
  int64_t shm = 0;
  int64_t ucx = 0;
  int64_t grpc = 0;
};

/// A Flight session's options as ferry's client reads and sets them: each option's value as text
/// ("zstd", "1", "4", "cuda:0"). Plain values.
using SessionOptions = std::map<std::string, std::string>;

/// A connection to one Flight server (a gRPC channel). Thread-safe: calls may run from many
/// threads at once; each stream is read from one thread at a time.
class FERRY_EXPORT Client {
 public:
  /// Connect to grpc://HOST:PORT, grpc+tls://HOST:PORT or grpc+unix:///PATH. The channel
  /// connects lazily: a server that is not there fails the first call, naming the URI.
  static Result<std::unique_ptr<Client>> Connect(const std::string& uri,
                                                 ClientOptions options = {});
  virtual ~Client() = default;

  virtual Result<std::vector<FlightInfo>> ListFlights() = 0;
  /// GetFlightInfo for the path descriptor [path].
  virtual Result<FlightInfo> GetFlightInfo(const std::string& path) = 0;
  virtual Result<UniqueSchema> GetSchema(const std::string& path) = 0;
  /// Read flight `path`: GetFlightInfo, then its endpoints (`options.parallel` at once), each
  /// through its own locations (shm:// when that endpoint's server is on this host, ucx://, then
  /// DoGet), or only `options.via`. Each fallback is logged. `location`, when given, receives the
  /// URI the first endpoint was read from. A failing endpoint fails the read, naming it.
  virtual Result<UniqueDeviceArrayStream> Get(const std::string& path, GetOptions options = {},
                                              std::string* location = nullptr) = 0;
  /// Read the endpoints of `info` (from GetFlightInfo or ListFlights) as Get does.
  virtual Result<UniqueDeviceArrayStream> GetInfo(const FlightInfo& info, GetOptions options = {},
                                                  std::string* location = nullptr) = 0;
  /// DoGet with `ticket` on this server. The schema has arrived when this returns.
  virtual Result<UniqueDeviceArrayStream> DoGet(const std::string& ticket,
                                                GetOptions options = {}) = 0;
  /// Upload `stream` (consumed: released on return) as flight `path` with DoPut; returns once
  /// the server has stored it (or refused it, with its reason).
  [[nodiscard]] virtual Status Put(const std::string& path, ArrowArrayStream* stream) = 0;
  /// Upload what an async producer pushes (the Async C Device Stream Interface) as flight
  /// `path` with DoPut, as it arrives: fills `*handler`, which the caller hands to the producer
  /// and keeps alive until its release is called. The upload's own pace is the producer's flow
  /// control: a batch is requested as one is written to gRPC, `options.queue_size` ahead. Batches
  /// must be in host memory (their sync events are waited on). The future holds Put's status;
  /// the client must outlive it, and dropping the last copy of the future waits for the upload.
  Result<std::shared_future<Status>> PutAsync(const std::string& path,
                                              ArrowAsyncDeviceStreamHandler* handler,
                                              AsyncHandlerOptions options = {});
  /// DoAction: the bodies of the results.
  virtual Result<std::vector<std::string>> Action(const std::string& type,
                                                  const std::string& body = {}) = 0;
  virtual Result<std::vector<ActionType>> ListActions() = 0;
  /// Flight's SetSessionOptions: opens a session when this client holds none (it keeps the
  /// server's arrow_flight_session_id cookie and sends it on every later call to this server,
  /// DoGet's too), then sets `options` (an empty value removes one). Returns the options the
  /// server refused, each with why ("INVALID_NAME", "INVALID_VALUE"); the others are set. Reads
  /// then take the session's body_type, parallelism and target_device where their GetOptions
  /// leave the default, and DoGet its compression.
  virtual Result<std::map<std::string, std::string>> SetSessionOptions(
      const SessionOptions& options) = 0;
  /// Flight's GetSessionOptions: the session's options as the server holds them (none without a
  /// session).
  virtual Result<SessionOptions> GetSessionOptions() = 0;
  /// Flight's CloseSession: the server ends the session and this client forgets its cookie.
  [[nodiscard]] virtual Status CloseSession() = 0;
  /// The URI this client was connected with.
  virtual const std::string& uri() const = 0;
  /// What this client's reads (Get, GetInfo, DoGet) received through each plane so far,
  /// counted as their streams hand batches out (streams still being read go on counting).
  virtual PlaneBytes plane_bytes() const = 0;
};

/// Whether `host` (a name or an address, IPv6 with or without brackets) is this machine: a
/// loopback address, this host's name, or an address of one of its interfaces.
FERRY_EXPORT bool IsLocalHost(const std::string& host);

}  // namespace ferry::flight
