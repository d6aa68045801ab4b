// Internal to the flight layer: each Flight RPC's latency and each failed call's code, counted by
// a gRPC server interceptor that the server installs only with ServerOptions::metrics, and by the
// streaming data calls' own reactors (RpcTimer).
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
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

  /// The calls that time themselves (RpcTimer), for which the interceptor factory makes none:
  /// gRPC runs a call's interceptors on each of its operations, one per FlightData message of
  /// DoGet and DoPut, some 7,000 instructions each, against 2 clock reads a call in the reactor.
  static constexpr size_t kDoGet = 5;
  static constexpr size_t kDoPut = 6;
  static_assert(std::string_view(kRpcs[kDoGet]) == "DoGet" &&
                std::string_view(kRpcs[kDoPut]) == "DoPut");
  static constexpr bool TimesItself(size_t rpc) { return rpc == kDoGet || rpc == kDoPut; }

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

/// One call's time, from its start until it finishes: kept by the interceptor, or by the reactor
/// of a call that times itself. Does nothing without a table (metrics off). Costs two clock
/// reads.
class RpcTimer {
 public:
  RpcTimer(RpcMetricsTable* table, size_t rpc)
      : table_(table),
        rpc_(rpc),
        start_(table != nullptr ? table->clock().Now() : Clock::time_point{}) {}
  /// Records the call, ending with `grpc_code`, the first time it is called (a reactor calls it
  /// just before its Finish, after which the reactor may be gone).
  void Finish(int grpc_code) {
    if (table_ == nullptr) return;
    const std::chrono::duration<double> took = table_->clock().Now() - start_;
    table_->Record(rpc_, took.count(), grpc_code);
    table_ = nullptr;
  }

 private:
  RpcMetricsTable* table_;
  size_t rpc_;
  Clock::time_point start_;
};

}  // namespace ferry::flight::internal
