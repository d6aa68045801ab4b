// Internal to the flight layer: Flight's standard actions, with the protobuf bodies the
// specification gives them: CancelFlightInfo, RenewFlightEndpoint, SetSessionOptions,
// GetSessionOptions and CloseSession.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "Flight.pb.h"
#include "ferry/core/result.hpp"
#include "flight/server_state.hpp"

namespace ferry::flight::internal {

/// Whether `type` is one of the standard actions StandardAction answers.
bool IsStandardAction(const std::string& type);

/// Answer standard action `action` for the call `context` (whose session cookie it reads, and
/// whose initial metadata gets a set-cookie when a session opens or closes): the serialized
/// Result bodies, or the error to fail the call with (kInvalid for a body that does not parse,
/// kNotFound for a ticket or session that is not live).
Result<std::vector<std::string>> StandardAction(ServerState* state,
                                                grpc::CallbackServerContext* context,
                                                const ::arrow::flight::protocol::Action& action);

/// The standard actions' ListActions entries (type and description).
std::vector<std::pair<std::string, std::string>> StandardActionTypes();

}  // namespace ferry::flight::internal
