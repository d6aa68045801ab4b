// What Arrow Flight says about a flight, as plain values shared by ferry's Flight client and
// server: its descriptor, its schema, its endpoints with their tickets and locations, its size.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"

namespace ferry::flight {

/// The location that means "redeem the ticket with DoGet on the service you asked"
/// (Flight.proto); ferry's server lists it after its shared-memory and UCX locations.
inline constexpr const char* kReuseConnection = "arrow-flight-reuse-connection://?";

/// One stream of a flight: the ticket to redeem, the URIs that redeem it (fastest first on a
/// ferry server), until when the ticket is valid (absent: the server did not say), and how many
/// bytes it is expected to carry.
struct FERRY_EXPORT Endpoint {
  std::string ticket;
  std::vector<std::string> locations;
  std::optional<std::chrono::system_clock::time_point> expiration;
  /// Its share of its flight's `total_bytes` (-1: unknown). Not on the wire: a client that
  /// decodes a FlightInfo sets it, and a read uses it to choose its plane (GetOptions::grpc_below)
  /// when the endpoint travels alone, as an engine's partition does.
  int64_t expected_bytes = -1;
};

/// A flight: its descriptor (a path, ferry: one element, the dataset's name; or an opaque
/// command), its schema in the IPC form (continuation marker, length, Schema message), its
/// endpoints and its size (-1 when unknown).
struct FERRY_EXPORT FlightInfo {
  std::vector<std::string> path;
  std::string command;
  std::string schema;
  std::vector<Endpoint> endpoints;
  int64_t total_records = -1;
  int64_t total_bytes = -1;
  bool ordered = false;
  /// The server's note for the caller (FlightInfo.app_metadata); a federated server with
  /// `allow_partial` names the peers that did not answer here, as JSON.
  std::string app_metadata;

  /// The schema decoded (a struct whose children are the columns). Errors name what is wrong
  /// with the bytes.
  Result<UniqueSchema> DecodeSchema() const;

  /// What each endpoint is expected to carry (Endpoint::expected_bytes): `total_bytes` over the
  /// endpoints, or -1 when either is unknown.
  int64_t EndpointShare() const {
    if (total_bytes < 0 || endpoints.empty()) return -1;
    return total_bytes / static_cast<int64_t>(endpoints.size());
  }
};

/// An action a server offers (ListActions).
struct FERRY_EXPORT ActionType {
  std::string type;
  std::string description;
};

/// Encode `schema` (a struct) in the IPC form FlightInfo and SchemaResult carry.
FERRY_EXPORT Result<std::string> EncodeSchema(const ArrowSchema* schema);
/// Decode the IPC form of a schema (with or without the continuation marker).
FERRY_EXPORT Result<UniqueSchema> DecodeSchema(const std::string& bytes);
/// Whether two schemas in the IPC form are one, as `ferry::SchemaEquals` decides: equal bytes
/// are, without decoding; other bytes are decoded and compared as trees, since another writer may
/// encode the same schema otherwise. Costs two decodes at most; errors name undecodable bytes.
FERRY_EXPORT Result<bool> EncodedSchemaEquals(const std::string& a, const std::string& b,
                                              bool check_metadata = false);
/// A time as RFC 3339 writes it, in UTC to the second ("2026-11-25T23:51:36Z"): how ferry shows
/// an endpoint's expiration and how `refresh-ticket` answers.
FERRY_EXPORT std::string FormatRfc3339(std::chrono::system_clock::time_point t);

}  // namespace ferry::flight
