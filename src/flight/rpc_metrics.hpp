// Internal to the flight layer: each Flight RPC's latency and each failed call's code, counted by
// a gRPC server interceptor that the server installs only with ServerOptions::metrics.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "ferry/core/clock.hpp"
#include "ferry/flight/metrics.hpp"

namespace ferry::flight::internal {

/// Running latency histograms, one per Flight RPC (and "other"), and failed calls by code.
/// Owned by the server state; written from gRPC's threads with relaxed atomic adds only (a call
/// costs its interceptor's allocation, two clock reads and a few adds), read by Snapshot.
class RpcMetricsTable {
 public:
  /// The RPCs by name, in FlightService's order; the last, "other", takes any other method.
  static constexpr std::array<const char*, 11> kRpcs = {
      "Handshake", "ListFlights", "GetFlightInfo", "PollFlightInfo", "GetSchema", "DoGet",
      "DoPut",     "DoExchange",  "DoAction",      "ListActions",    "other"};

  explicit RpcMetricsTable(std::shared_ptr<Clock> clock) : clock_(std::move(clock)) {}

  /// The index in kRpcs of a full method name ("/arrow.flight.protocol.FlightService/DoGet").
  static size_t IndexOf(const char* method);
  const Clock& clock() const { return *clock_; }
  /// Count one call of RPC `rpc` that took `seconds` and ended with gRPC status `grpc_code`.
  void Record(size_t rpc, double seconds, int grpc_code);
  /// The RPCs called at least once.
  std::vector<RpcMetrics> Snapshot() const;
  /// Failed calls (any RPC) by ferry's code for their gRPC status.
  std::map<StatusCode, int64_t> Errors() const;
  /// A factory of interceptors that record into this table (which must outlive the server).
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeFactory();

 private:
  static constexpr size_t kBuckets = 17;  // LatencyBounds().size() + 1
  static constexpr size_t kGrpcCodes = 17;
  struct Histogram {
    std::array<std::atomic<int64_t>, kBuckets> buckets{};
    std::atomic<int64_t> sum_ns{0};
  };
  std::shared_ptr<Clock> clock_;
  std::array<Histogram, kRpcs.size()> rpcs_;
  std::array<std::atomic<int64_t>, kGrpcCodes> errors_{};
};

}  // namespace ferry::flight::internal
