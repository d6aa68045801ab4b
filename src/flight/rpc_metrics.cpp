// Each Flight RPC's latency and failed calls, counted by a gRPC server interceptor.
#include "flight/rpc_metrics.hpp"

#include <algorithm>
#include <cstring>

#include "ferry/core/status_code.hpp"
#include "flight/grpc_order.hpp"

namespace ferry::flight {

const std::vector<double>& LatencyBounds() {
  static const std::vector<double> bounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                             0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                             1,      2.5,     10,     60};
  return bounds;
}

namespace internal {

namespace {

// Times one call from its creation (gRPC makes it as the call starts) to its status.
class RpcInterceptor final : public grpc::experimental::Interceptor {
 public:
  // gRPC makes, runs and deletes an interceptor on whichever of its threads is free, in order
  // (grpc_order.hpp): each step takes back what the one before handed off.
  RpcInterceptor(RpcMetricsTable* table, size_t rpc) : timer_(Started(table, rpc)) {
    GrpcHandOff(this);
  }
  ~RpcInterceptor() override { GrpcTakeBack(this); }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    GrpcTakeBack(this);
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      timer_.Finish(static_cast<int>(methods->GetSendStatus().error_code()));
    }
    GrpcHandOff(this);
    methods->Proceed();
  }

 private:
  // The table is read from gRPC's threads only after it is taken back.
  static RpcTimer Started(RpcMetricsTable* table, size_t rpc) {
    GrpcTakeBack(table);
    return RpcTimer(table, rpc);
  }

  RpcTimer timer_;
};

class RpcInterceptorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcInterceptorFactory(RpcMetricsTable* table) : table_(table) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    const size_t rpc = RpcMetricsTable::IndexOf(info->method());
    // None for a call that times itself: gRPC then runs no interception on its messages.
    if (RpcMetricsTable::TimesItself(rpc)) return nullptr;
    return new RpcInterceptor(table_, rpc);
  }

 private:
  RpcMetricsTable* table_;
};

}  // namespace

size_t RpcMetricsTable::IndexOf(const char* method) {
  static constexpr const char* kService = "/arrow.flight.protocol.FlightService/";
  const size_t other = kRpcs.size() - 1;
  if (method == nullptr || std::strncmp(method, kService, std::strlen(kService)) != 0) {
    return other;
  }
  const char* name = method + std::strlen(kService);
  for (size_t i = 0; i < other; ++i) {
    if (std::strcmp(name, kRpcs[i]) == 0) return i;
  }
  return other;
}

void RpcMetricsTable::Record(size_t rpc, double seconds, int grpc_code) {
  Histogram& h = rpcs_[std::min(rpc, rpcs_.size() - 1)];
  const std::vector<double>& bounds = LatencyBounds();
  const size_t bucket =
      static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin());
  h.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  h.sum_ns.fetch_add(static_cast<int64_t>(seconds * 1e9), std::memory_order_relaxed);
  if (grpc_code != 0) {
    errors_[static_cast<size_t>(grpc_code) % errors_.size()].fetch_add(1,
                                                                       std::memory_order_relaxed);
  }
}

std::vector<RpcMetrics> RpcMetricsTable::Snapshot() const {
  std::vector<RpcMetrics> out;
  for (size_t i = 0; i < rpcs_.size(); ++i) {
    const Histogram& h = rpcs_[i];
    RpcMetrics m;
    m.rpc = kRpcs[i];
    m.latency.bounds = LatencyBounds();
    // The count is the buckets' sum, so that the +Inf bucket and the count always agree.
    for (const auto& b : h.buckets) m.latency.counts.push_back(b.load(std::memory_order_relaxed));
    for (int64_t c : m.latency.counts) m.latency.count += c;
    m.latency.sum_seconds = static_cast<double>(h.sum_ns.load(std::memory_order_relaxed)) / 1e9;
    if (m.latency.count > 0) out.push_back(std::move(m));
  }
  return out;
}

std::map<StatusCode, int64_t> RpcMetricsTable::Errors() const {
  std::map<StatusCode, int64_t> out;
  for (size_t code = 1; code < errors_.size(); ++code) {
    const int64_t n = errors_[code].load(std::memory_order_relaxed);
    if (n > 0) out[StatusCodeFromGrpc(static_cast<int>(code))] += n;
  }
  return out;
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
RpcMetricsTable::MakeFactory() {
  return std::make_unique<RpcInterceptorFactory>(this);
}

}  // namespace internal

}  // namespace ferry::flight
