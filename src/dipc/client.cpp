// The dissociated-IPC client's entry points: connect (one connection, or the split shape's two),
// send the ticket and export the session (client_session.hpp) as an ArrowDeviceArrayStream.
#include "ferry/dipc/client.hpp"

#include "dipc/client_session.hpp"
#include "dipc/cuda_bodies.hpp"
#include "ferry/core/status_code.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/core/trace.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::dipc {

using transport::Connection;

namespace {

// The ArrowDeviceArrayStream's producer: a session.
class SessionProducer final : public DeviceArrayProducer {
 public:
  explicit SessionProducer(std::unique_ptr<internal::ClientSession> session)
      : session_(std::move(session)) {}

  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema copy, CopySchema(session_->schema()));
    copy.move_to(out);
    return Status::OK();
  }

  Status GetNext(ArrowDeviceArray* out) override { return session_->Next(out); }

 private:
  std::unique_ptr<internal::ClientSession> session_;
};

transport::ConnectOptions ConnectOptionsFor(const Uri& uri, const ClientOptions& options) {
  transport::ConnectOptions c;
  c.limits.timeout = options.timeout;
  c.limits.clock = options.clock;
  c.limits.spin = options.spin;
  c.connect_timeout = options.connect_timeout;
  c.limits.max_message_bytes = options.max_metadata_bytes;
  // A type-1 list is 16 bytes per buffer; a packed body is at most the announced limit.
  c.limits.max_tagged_bytes = options.max_body_bytes;
  // A CUDA IPC handle is for the device layer, not the transport's key.
  if (!internal::CudaBodies::Carries(uri)) c.remote_handle = uri.remote_handle.value_or("");
  c.extensions = uri.ferry;
  c.buffer_lists = options.buffer_lists || !options.read.columns.empty();
  if (!options.traceparent.empty()) {
    // The hello's trace field: the traceparent, then a newline and the tracestate if any.
    c.trace = options.traceparent;
    if (!options.tracestate.empty()) c.trace += "\n" + options.tracestate;
  }
  return c;
}

Result<std::shared_ptr<Connection>> Open(const Uri& uri, const ClientOptions& options) {
  const std::string address = uri.authority.empty() ? uri.path : uri.authority;
  FERRY_RETURN_NOT_OK(CheckClientTrace(options.traceparent, options.tracestate));
  Result<std::unique_ptr<Connection>> conn =
      transport::Connect(uri.scheme, address, ConnectOptionsFor(uri, options));
  if (!conn.ok()) {
    return conn.status().WithContext("connecting to " + uri.ToString());
  }
  return std::shared_ptr<Connection>(std::move(*conn));
}

// `pool_key` (not empty): the stream's connection may go back to options.pool under it;
// `reused`: the connection served a stream before.
Result<UniqueDeviceArrayStream> Start(std::shared_ptr<Connection> conn,
                                      std::shared_ptr<Connection> data, const Uri& uri,
                                      const Uri& data_uri, const std::string& ticket,
                                      const ClientOptions& options,
                                      const std::string& pool_key = {}, bool reused = false) {
  Device* target = options.device != nullptr ? options.device : CpuDevice();
  const ArrowDeviceType device_type = target->device_type();
  std::shared_ptr<internal::CudaBodies> cuda;
  ClientOptions session_options = options;
  // Unpaced over UCX, the server sends as fast as the wire takes, and the client's UCX takes
  // every eager (small) body off it ahead of the reader, into memory it grows without bound: a
  // reader of 1,000-row batches over TCP that fell behind held 0.4-1.8 GB and went 1.3-4.7x
  // slower for the page faults (docs/dipc.md, "Pacing"). Over shm:// the server's shared region
  // bounds what is in flight; over ucx:// with ferry's extensions the default is a window, paid in
  // batched credits.
  if (session_options.window < 0 && (uri.scheme == "ucx" || data_uri.scheme == "ucx") &&
      conn->extensions() && data->extensions()) {
    session_options.window = kDefaultUcxWindow;
  }
  if (internal::CudaBodies::Carries(data_uri)) {
    // Opened once per connection; closed when the stream and every array from it are gone.
    FERRY_ASSIGN_OR_RAISE(cuda, internal::CudaBodies::Open(data_uri, target));
    session_options.read.body_on_device = true;
  }
  auto session = std::make_unique<internal::ClientSession>(
      std::move(conn), std::move(data), data_uri, std::move(session_options), std::move(cuda));
  if (!pool_key.empty()) session->KeepFor(options.pool, pool_key, reused);
  FERRY_RETURN_NOT_OK(session->Handshake(ticket, uri.want_data, data_uri.want_data));
  return ExportDeviceArrayStream(std::make_unique<SessionProducer>(std::move(session)),
                                 device_type);
}

// What a kept connection is filed under: the server's address and everything the connect
// options fix for the connection's life (its hello, limits, clock and pacing); empty where the
// stream's connection cannot be kept.
std::string PoolKey(const Uri& uri, const ClientOptions& options) {
  if (!options.pool || uri.scheme != "ucx" || !uri.ferry) return {};
  if (internal::CudaBodies::Carries(uri)) return {};
  const transport::ConnectOptions c = ConnectOptionsFor(uri, options);
  std::string key = uri.scheme + "://" + (uri.authority.empty() ? uri.path : uri.authority);
  key += '\n' + c.remote_handle + '\n' + c.trace + '\n';
  for (const int64_t v :
       {int64_t{c.buffer_lists}, static_cast<int64_t>(c.limits.timeout.count()),
        static_cast<int64_t>(c.limits.spin.count()), c.limits.max_message_bytes,
        c.limits.max_tagged_bytes, options.window,
        static_cast<int64_t>(reinterpret_cast<uintptr_t>(c.limits.clock.get()))}) {
    key += std::to_string(v) + ',';
  }
  return key;
}

}  // namespace

bool HasKeptConnection(const Uri& uri, const ClientOptions& options) {
  const std::string key = PoolKey(uri, options);
  return !key.empty() && options.pool->Holds(key);
}

Result<UniqueDeviceArrayStream> ConnectStream(const Uri& uri, const std::string& ticket,
                                              const ClientOptions& options) {
  const std::string key = PoolKey(uri, options);
  if (!key.empty()) {
    while (std::shared_ptr<Connection> kept = options.pool->Take(key)) {
      Result<UniqueDeviceArrayStream> stream =
          Start(kept, kept, uri, uri, ticket, options, key, /*reused=*/true);
      // UNAVAILABLE before the schema: the server closed the kept connection (its timeout, a
      // restart, a drain). A fresh connection asks again, and is told anew if it is refused.
      // A server silent for the connect timeout is not asked again: it would keep a fresh
      // connection from wiring up as long, and the caller has its next location to try.
      if (stream.ok() || stream.status().code() != StatusCode::kUnavailable) return stream;
    }
  }
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Connection> conn, Open(uri, options));
  return Start(conn, conn, uri, uri, ticket, options, key);
}

Result<UniqueDeviceArrayStream> ConnectStream(std::unique_ptr<transport::Connection> connection,
                                              const Uri& uri, const std::string& ticket,
                                              const ClientOptions& options) {
  if (connection == nullptr) return Status::Invalid("the connection is NULL");
  std::shared_ptr<Connection> conn(std::move(connection));
  return Start(conn, conn, uri, uri, ticket, options);
}

Result<UniqueDeviceArrayStream> ConnectStream(const Uri& metadata_uri, const Uri& data_uri,
                                              const std::string& ticket,
                                              const ClientOptions& options) {
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Connection> conn, Open(metadata_uri, options));
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Connection> data, Open(data_uri, options));
  return Start(std::move(conn), std::move(data), metadata_uri, data_uri, ticket, options);
}

}  // namespace ferry::dipc
