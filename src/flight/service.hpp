// Internal to the flight layer: the FlightService implementation on gRPC's callback API. DoGet,
// DoPut and DoExchange are raw methods (gRPC ByteBuffers) so that FlightData is framed by
// flight/wire.hpp; the others use the generated protobuf messages.
#pragma once

#include <grpcpp/grpcpp.h>

#include "Flight.grpc.pb.h"
#include "flight/federation.hpp"
#include "flight/server_state.hpp"

namespace ferry::flight::internal {

namespace pb = ::arrow::flight::protocol;

using FS = pb::FlightService;
using ServiceBase = FS::WithCallbackMethod_Handshake<
    FS::WithCallbackMethod_ListFlights<FS::WithCallbackMethod_GetFlightInfo<
        FS::WithCallbackMethod_PollFlightInfo<FS::WithCallbackMethod_GetSchema<
            FS::WithRawCallbackMethod_DoGet<FS::WithRawCallbackMethod_DoPut<
                FS::WithRawCallbackMethod_DoExchange<FS::WithCallbackMethod_DoAction<
                    FS::WithCallbackMethod_ListActions<FS::Service>>>>>>>>>>;

/// The service. Every call checks the bearer token first (when one is set). Borrows the state.
/// Each call starts on a gRPC thread with GrpcTakeBack(this): what Server::Start set up, handed
/// off before gRPC started, is then visible to ThreadSanitizer too.
/// With peers (ServerOptions::peers), ListFlights, GetFlightInfo, PollFlightInfo and GetSchema
/// answer for the federation, except to a peer's own calls.
class FlightService final : public ServiceBase {
 public:
  explicit FlightService(ServerState* state)
      : state_(state), federation_(state->options, &state->peer_health) {}

  grpc::ServerBidiReactor<pb::HandshakeRequest, pb::HandshakeResponse>* Handshake(
      grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<pb::FlightInfo>* ListFlights(grpc::CallbackServerContext* context,
                                                        const pb::Criteria* request) override;
  grpc::ServerUnaryReactor* GetFlightInfo(grpc::CallbackServerContext* context,
                                          const pb::FlightDescriptor* request,
                                          pb::FlightInfo* response) override;
  grpc::ServerUnaryReactor* PollFlightInfo(grpc::CallbackServerContext* context,
                                           const pb::FlightDescriptor* request,
                                           pb::PollInfo* response) override;
  grpc::ServerUnaryReactor* GetSchema(grpc::CallbackServerContext* context,
                                      const pb::FlightDescriptor* request,
                                      pb::SchemaResult* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* DoGet(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* DoPut(
      grpc::CallbackServerContext* context) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* DoExchange(
      grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<pb::Result>* DoAction(grpc::CallbackServerContext* context,
                                                 const pb::Action* request) override;
  grpc::ServerWriteReactor<pb::ActionType>* ListActions(grpc::CallbackServerContext* context,
                                                        const pb::Empty* request) override;

 private:
  /// Whether this call is answered for the federation: there are peers and the caller is not one.
  bool Federated(const grpc::CallbackServerContext* context) const;
  /// This server's FlightInfo for `name`, merged with the peers' when the call is federated.
  /// `trace`: the call's span, kept with the tickets issued and handed on to the peers.
  Result<FlightInfo> InfoFor(const grpc::CallbackServerContext* context, const std::string& name,
                             const TraceContext& trace);
  /// What GetFlightInfo and PollFlightInfo (`call`) answer with: the caller authenticated, the
  /// server not draining, then InfoFor the descriptor's name. A refusal is the gRPC status.
  grpc::Status DescribedInfo(grpc::CallbackServerContext* context,
                             const pb::FlightDescriptor& request, const char* call,
                             FlightInfo* out);

  ServerState* state_;
  Federation federation_;
};

/// OK, or UNAUTHENTICATED when a token is set and the call's `authorization` header is not
/// `Bearer <token>` (counted and logged).
grpc::Status Authenticate(ServerState* state, const grpc::CallbackServerContext* context);

/// The raw data calls (service_data.cpp).
grpc::ServerWriteReactor<grpc::ByteBuffer>* MakeDoGet(ServerState* state,
                                                      grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request);
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* MakeDoPut(
    ServerState* state, grpc::CallbackServerContext* context);

}  // namespace ferry::flight::internal
