// Internal to the flight layer: the client's implementation, shared by client.cpp (the calls)
// and client_get.cpp (following locations).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "Flight.grpc.pb.h"
#include "ferry/dipc/connection_pool.hpp"
#include "ferry/flight/client.hpp"
#include "flight/client_session.hpp"
#include "flight/client_stream.hpp"

namespace ferry::flight::internal {

namespace pb = ::arrow::flight::protocol;

/// What reading an endpoint takes from its client (the server's URI and host, the channel, the
/// options, the plane counters). Shared by the client and by every stream that opens endpoints
/// later, so that a stream outlives the client that made it. Immutable, so thread-safe.
class EndpointReader {
 public:
  EndpointReader(std::string uri, std::string host, std::shared_ptr<grpc::Channel> channel,
                 ClientOptions options, std::shared_ptr<PlaneCounters> counters,
                 std::shared_ptr<const ClientSession> session,
                 std::shared_ptr<dipc::ConnectionPool> pool)
      : uri_(std::move(uri)),
        host_(std::move(host)),
        channel_(std::move(channel)),
        options_(std::move(options)),
        counters_(std::move(counters)),
        session_(std::move(session)),
        pool_(std::move(pool)) {}

  /// One endpoint through its locations, fastest first (client_get.cpp); its `expected_bytes`
  /// choose DoGet before UCX when small (GetOptions::grpc_below).
  Result<UniqueDeviceArrayStream> Read(const Endpoint& endpoint, const GetOptions& options,
                                       std::string* location) const;

 private:
  void Log(const std::string& line) const {
    if (options_.log) options_.log(line);
  }
  // A read's options for a shm:// or ucx:// location (connect_timeout left to the caller).
  dipc::ClientOptions DipcOptions(const GetOptions& options) const;

  std::string uri_;
  std::string host_;
  std::shared_ptr<grpc::Channel> channel_;
  ClientOptions options_;
  std::shared_ptr<PlaneCounters> counters_;
  std::shared_ptr<const ClientSession> session_;  // its cookie goes on DoGet to this server
  // UCX connections whose stream ended, kept for the next read from the same server (a new one
  // costs 10-80 ms of set-up); shared by every stream of the client.
  std::shared_ptr<dipc::ConnectionPool> pool_;
};

class ClientImpl final : public Client {
 public:
  ClientImpl(std::string uri, std::string host, std::shared_ptr<grpc::Channel> channel,
             ClientOptions options);
  ~ClientImpl() override;

  Result<std::vector<FlightInfo>> ListFlights() override;
  Result<FlightInfo> GetFlightInfo(const std::string& path) override;
  Result<UniqueSchema> GetSchema(const std::string& path) override;
  Result<UniqueDeviceArrayStream> Get(const std::string& path, GetOptions options,
                                      std::string* location) override;
  Result<UniqueDeviceArrayStream> GetInfo(const FlightInfo& info, GetOptions options,
                                          std::string* location) override;
  Result<UniqueDeviceArrayStream> DoGet(const std::string& ticket, GetOptions options) override;
  Status Put(const std::string& path, ArrowArrayStream* stream) override;
  Result<std::vector<std::string>> Action(const std::string& type,
                                          const std::string& body) override;
  Result<std::vector<ActionType>> ListActions() override;
  Result<std::map<std::string, std::string>> SetSessionOptions(
      const SessionOptions& options) override;
  Result<SessionOptions> GetSessionOptions() override;
  Status CloseSession() override;
  const std::string& uri() const override { return uri_; }
  PlaneBytes plane_bytes() const override;

 private:
  // The token and deadline on a call that answers at once.
  void Prepare(grpc::ClientContext* context) const;
  void Log(const std::string& line) const {
    if (options_.log) options_.log(line);
  }

  std::string uri_;
  std::string host_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::FlightService::Stub> stub_;
  ClientOptions options_;
  /// Bytes per plane (shm, ucx, grpc), shared with the streams that count into them.
  std::shared_ptr<PlaneCounters> counters_ = std::make_shared<PlaneCounters>();
  /// The Flight session this client holds on its server, shared with the endpoint reader.
  std::shared_ptr<ClientSession> session_ = std::make_shared<ClientSession>();
  /// Reads endpoints for this client and for the streams it made.
  std::shared_ptr<const EndpointReader> reader_;
};

}  // namespace ferry::flight::internal
