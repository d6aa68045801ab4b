// The Flight server: gRPC on HOST:PORT with the FlightService, and a dissociated-IPC server per
// fast plane sharing one ticket book.
#include "ferry/flight/server.hpp"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>

#include <cerrno>
#include <climits>

#include "ferry/core/host_port.hpp"
#include "ferry/format/schema.hpp"
#include "flight/batch_slices.hpp"
#include "flight/clock_hook.hpp"
#include "flight/drain.hpp"
#include "flight/grpc_library.hpp"
#include "flight/grpc_order.hpp"
#include "flight/service.hpp"

namespace ferry::flight {

namespace {

using internal::ServerState;

// The host part of HOST:PORT as an address writes it ("[::1]:0" gives "[::1]"); an address that
// does not parse is taken whole, as gRPC was given it.
std::string HostOf(const std::string& listen) {
  Result<HostPort> parsed = ParseHostPort(listen);
  return parsed.ok() ? parsed->HostInAddress() : listen;
}

class ServerImpl final : public Server {
 public:
  ServerImpl(std::unique_ptr<ServerState> state, std::string scheme)
      : state_(std::move(state)), scheme_(std::move(scheme)) {}
  ~ServerImpl() override { Stop(); }

  Status Start() {
    internal::HoldGrpcLibrary();  // so that no Stop tears gRPC down (grpc_library.hpp)
    service_ = std::make_unique<internal::FlightService>(state_.get());
    const ServerOptions& o = state_->options;
    std::shared_ptr<grpc::ServerCredentials> credentials;
    if (!o.tls_cert.empty() || !o.tls_key.empty()) {
      if (o.tls_cert.empty() || o.tls_key.empty()) {
        return Status::Invalid("TLS needs both a certificate and its private key");
      }
      grpc::SslServerCredentialsOptions tls(
          o.tls_client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                  : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
      tls.pem_root_certs = o.tls_client_ca;
      tls.pem_key_cert_pairs.push_back({o.tls_key, o.tls_cert});
      credentials = grpc::SslServerCredentials(tls);
    } else {
      credentials = grpc::InsecureServerCredentials();
    }
    // grpc.health.v1 through gRPC's own service; a process-wide switch, read when a server is
    // built.
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort(o.listen, credentials, &port_);
    builder.RegisterService(service_.get());
    if (state_->rpc_metrics) {
      std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> made;
      made.push_back(state_->rpc_metrics->MakeFactory());
      // Its interceptors start on gRPC's threads, each taking back the table.
      internal::GrpcHandOff(state_->rpc_metrics.get());
      builder.experimental().SetInterceptorCreators(std::move(made));
    }
    // One FlightData carries a whole batch: no limit on what is sent; uploads are bounded by
    // max_upload_bytes (and gRPC's int sizes).
    builder.SetMaxSendMessageSize(INT_MAX);
    builder.SetMaxReceiveMessageSize(
        static_cast<int>(std::min<int64_t>(o.max_upload_bytes + (int64_t{1} << 16), INT_MAX)));
    // Set before any call can read it (the drain action).
    state_->begin_drain = [this] { BeginDrain(); };
    // The service's calls run on gRPC's threads, each taking back what was set up here.
    internal::GrpcHandOff(service_.get());
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port_ == 0) {
      server_.reset();
      return Status::Unavailable("cannot listen for gRPC on " + o.listen +
                                 " (the address is in use, or not this host's)");
    }
    host_ = HostOf(o.listen);
    internal::SetHealth(server_.get(), *state_, true);
    return Status::OK();
  }

  void BeginDrain() override {
    if (state_->draining.exchange(true)) return;
    {
      // Not stop_mutex_: Stop holds it while it waits for calls, and the drain action is one.
      std::lock_guard lock(health_mutex_);
      if (server_ != nullptr) internal::SetHealth(server_.get(), *state_, false);
    }
    for (auto& [transport, plane] : state_->planes) plane->Drain();
    state_->Log("draining", "draining: health NOT_SERVING, new calls and sessions refused");
    if (state_->options.on_drain) state_->options.on_drain();
  }

  bool draining() const override { return state_->draining.load(); }

  bool Drain(std::chrono::milliseconds timeout) override {
    BeginDrain();
    const Clock::time_point deadline = state_->options.clock->After(timeout);
    bool idle = state_->WaitIdleUntil(deadline);
    for (auto& [transport, plane] : state_->planes) idle = plane->AwaitIdleUntil(deadline) && idle;
    return idle;
  }

  Status Add(const std::string& name, UniqueSchema schema,
             std::vector<UniqueDeviceArray> batches) override {
    std::vector<std::vector<UniqueDeviceArray>> partitions;
    partitions.push_back(std::move(batches));
    return AddPartitioned(name, std::move(schema), std::move(partitions));
  }

  Status AddPath(const std::string& name, const std::string& path) override {
    return AddPaths(name, {path}, 0);
  }

  Status AddPartitioned(const std::string& name, UniqueSchema schema,
                        std::vector<std::vector<UniqueDeviceArray>> partitions) override {
    if (!schema.valid())
      return Status::Invalid("the schema of flight \"" + name + "\" is released");
    FERRY_ASSIGN_OR_RAISE(std::shared_ptr<internal::Flight> flight,
                          internal::MakeFlight(name, schema.get(), std::move(partitions)));
    return state_->Add(flight);
  }

  Status AddPaths(const std::string& name, const std::vector<std::string>& paths,
                  int64_t partition_bytes) override {
    if (paths.empty()) return Status::Invalid("flight \"" + name + "\" has no file to serve");
    UniqueSchema schema;
    std::vector<std::vector<UniqueDeviceArray>> partitions;
    for (const std::string& path : paths) {
      FERRY_ASSIGN_OR_RAISE(auto data, internal::ReadBatches(path));
      if (!schema.valid()) {
        schema = std::move(data.first);
      } else {
        FERRY_ASSIGN_OR_RAISE(bool same, SchemaEquals(data.first.get(), schema.get(), true));
        if (!same) {
          return Status::Invalid(path + ": its schema differs from " + paths[0] +
                                 "'s; the files of one flight need the same schema");
        }
      }
      FERRY_ASSIGN_OR_RAISE(
          auto groups,
          internal::SplitBatches(schema.get(), std::move(data.second), partition_bytes));
      for (auto& g : groups) partitions.push_back(std::move(g));
    }
    return AddPartitioned(name, std::move(schema), std::move(partitions));
  }

  Result<size_t> AppendPartition(const std::string& name, UniqueSchema schema,
                                 std::vector<UniqueDeviceArray> batches) override {
    std::string encoded;
    FERRY_ASSIGN_OR_RAISE(
        std::shared_ptr<internal::Partition> part,
        internal::MakePartition(name, std::move(schema), std::move(batches), &encoded));
    return state_->Append(name, part, encoded);
  }

  Status Drop(const std::string& name) override { return state_->Drop(name); }

  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& f : state_->catalogue.All()) out.push_back(f->name);
    return out;
  }

  Result<FlightInfo> Info(const std::string& name) override { return state_->Info(name); }

  std::string uri() const override { return scheme_ + "://" + host_ + ":" + std::to_string(port_); }
  int port() const override { return port_; }

  dipc::Server* plane(const std::string& transport) const override {
    for (const auto& [t, p] : state_->planes) {
      if (t == transport) return p.get();
    }
    return nullptr;
  }

  std::shared_ptr<dipc::TicketBook> tickets() const override { return state_->tickets; }

  ServerStats stats() const override {
    ServerStats s;
    s.calls = state_->calls.load();
    s.do_gets = state_->do_gets.load();
    s.do_puts = state_->do_puts.load();
    s.bytes_sent = state_->bytes_sent.load();
    s.bytes_received = state_->bytes_received.load();
    s.unauthenticated = state_->unauthenticated.load();
    s.tickets_refused = state_->tickets_refused.load();
    s.uploads_failed = state_->uploads_failed.load();
    return s;
  }

  ServerMetrics metrics() const override { return state_->Metrics(); }

  void Stop() override {
    std::lock_guard lock(stop_mutex_);
    if (server_ != nullptr) {
      // Calls still running after a second are cancelled; their reactors then finish.
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
      state_->WaitIdle(std::chrono::seconds(10));
      std::lock_guard health(health_mutex_);
      server_.reset();
      // With the federation's threads, joined here: none outlives the server.
      service_.reset();
    }
    for (auto& [transport, plane] : state_->planes) plane->Stop();
  }

 private:
  std::unique_ptr<ServerState> state_;
  std::string scheme_;
  std::unique_ptr<internal::FlightService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::mutex stop_mutex_;
  std::mutex health_mutex_;  // server_'s health statuses against its reset
  std::string host_;
  int port_ = 0;
};

}  // namespace

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  if (options.max_upload_bytes <= 0) return Status::Invalid("max_upload_bytes must be positive");
  if (options.max_message_body <= 0 || options.max_message_body > internal::kMaxMessageBody) {
    return Status::Invalid("max_message_body must be 1 to " +
                           std::to_string(internal::kMaxMessageBody) + " bytes, not " +
                           std::to_string(options.max_message_body));
  }
  for (const std::string& peer : options.peers) {
    if (peer.rfind("grpc://", 0) != 0 && peer.rfind("grpc+tls://", 0) != 0 &&
        peer.rfind("grpc+unix://", 0) != 0) {
      return Status::Invalid("peer \"" + peer +
                             "\" is not a grpc://, grpc+tls:// or grpc+unix:// URI");
    }
  }
  if (!options.peers.empty() && options.peer_timeout.count() <= 0) {
    return Status::Invalid("peer_timeout must be positive");
  }
  if (options.clock == nullptr) options.clock = internal::DefaultClock();
  auto state = std::make_unique<ServerState>();
  state->tickets = std::make_shared<dipc::TicketBook>(options.clock);
  for (const std::string& transport : options.planes) {
    if (transport != "shm" && transport != "ucx") {
      return Status::Invalid("unknown plane \"" + transport + "\" (shm, ucx)");
    }
    dipc::ServerOptions p = options.plane;
    p.transport = transport;
    if (transport == "shm") {
      p.listen = options.shm_listen;
    } else {
      p.listen = options.ucx_listen.empty() ? HostOf(options.listen) + ":0" : options.ucx_listen;
    }
    p.token = options.token;
    p.tickets = state->tickets;
    p.clock = options.clock;
    p.ticket_ttl = options.ticket_ttl;
    if (options.log_sink && !p.log_sink) p.log_sink = options.log_sink;
    if (options.log && !p.log) {
      p.log = [log = options.log, transport](const std::string& line) {
        std::string prefixed = transport;
        prefixed += " plane: ";
        prefixed += line;
        log(prefixed);
      };
    }
    Result<std::unique_ptr<dipc::Server>> plane = dipc::Server::Start(std::move(p));
    if (!plane.ok()) return plane.status().WithContext("starting the " + transport + " plane");
    state->planes.emplace_back(transport, std::move(*plane));
  }
  if (options.metrics)
    state->rpc_metrics = std::make_unique<internal::RpcMetricsTable>(options.clock);
  const bool tls = !options.tls_cert.empty() || !options.tls_key.empty();
  state->started = options.clock->Now();
  state->options = std::move(options);
  auto server = std::make_unique<ServerImpl>(std::move(state), tls ? "grpc+tls" : "grpc");
  FERRY_RETURN_NOT_OK(server->Start());
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace ferry::flight
