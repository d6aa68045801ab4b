// A server's metrics in Prometheus' text format: a Collectable that maps a snapshot of
// flight::ServerMetrics (a Flight server's, or a Dissociated IPC server's one plane) to metric
// families on each scrape.
#include "metrics_exporter.hpp"

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ferry/core/host_port.hpp"
#include "ferry/core/status_code.hpp"
#include "ferry/flight/metrics.hpp"
#include "process_collector.hpp"

namespace ferry::cli {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

ClientMetric Sample(std::vector<ClientMetric::Label> labels, MetricType type, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  if (type == MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  return m;
}

// One family's samples, added by label set.
struct FamilyBuilder {
  MetricFamily family;
  FamilyBuilder(const char* name, const char* help, MetricType type)
      : family{name, help, type, {}} {}
  void Add(std::vector<ClientMetric::Label> labels, double value) {
    family.metric.push_back(Sample(std::move(labels), family.type, value));
  }
};

ClientMetric Histogram(const std::string& rpc, const flight::LatencyHistogram& h) {
  ClientMetric m;
  m.label = {{"rpc", rpc}};
  m.histogram.sample_count = static_cast<uint64_t>(h.count);
  m.histogram.sample_sum = h.sum_seconds;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    cumulative += static_cast<uint64_t>(h.counts[i]);
    const double bound =
        i < h.bounds.size() ? h.bounds[i] : std::numeric_limits<double>::infinity();
    m.histogram.bucket.push_back({cumulative, bound});
  }
  return m;
}

// A snapshot of a server's figures, as metric families.
class ServerCollector final : public prometheus::Collectable {
 public:
  explicit ServerCollector(std::function<flight::ServerMetrics()> snapshot)
      : snapshot_(std::move(snapshot)) {}

  std::vector<MetricFamily> Collect() const override {
    const flight::ServerMetrics m = snapshot_();
    FamilyBuilder bytes("ferry_sent_bytes_total",
                        "Bytes sent, by plane and body type: message bodies on the shm and ucx "
                        "planes, whole FlightData messages of DoGet on the grpc plane.",
                        MetricType::Counter);
    FamilyBuilder batches("ferry_sent_batches_total",
                          "Record batches sent, by plane and body type.", MetricType::Counter);
    FamilyBuilder active("ferry_sessions_active",
                         "Sessions in progress: Dissociated IPC clients on the shm and ucx planes, "
                         "DoGet streams on the grpc plane.",
                         MetricType::Gauge);
    FamilyBuilder total("ferry_sessions_total", "Sessions started, by plane.", MetricType::Counter);
    FamilyBuilder refused("ferry_tickets_refused_total",
                          "Tickets refused (unknown, expired, asked for elsewhere), by plane.",
                          MetricType::Counter);
    FamilyBuilder lent("ferry_lent_buffers_total", "Buffers lent to clients (type-1 addresses).",
                       MetricType::Counter);
    FamilyBuilder freed("ferry_lent_buffers_freed_total",
                        "Lent buffers the clients freed (free_data).", MetricType::Counter);
    FamilyBuilder reclaimed("ferry_lent_buffers_reclaimed_total",
                            "Lent buffers the server took back when their session ended unfreed.",
                            MetricType::Counter);
    FamilyBuilder outstanding("ferry_lent_buffers_outstanding",
                              "Lent buffers not yet freed or taken back.", MetricType::Gauge);
    FamilyBuilder errors("ferry_errors_total",
                         "Failures by plane and typed error code: failed sessions on the shm and "
                         "ucx planes, failed calls on the grpc plane.",
                         MetricType::Counter);
    for (const flight::PlaneMetrics& p : m.planes) {
      for (const flight::SentMetrics& s : p.sent) {
        bytes.Add({{"plane", p.plane}, {"body_type", s.body_type}}, static_cast<double>(s.bytes));
        batches.Add({{"plane", p.plane}, {"body_type", s.body_type}},
                    static_cast<double>(s.batches));
      }
      active.Add({{"plane", p.plane}}, static_cast<double>(p.sessions_active));
      total.Add({{"plane", p.plane}}, static_cast<double>(p.sessions_total));
      refused.Add({{"plane", p.plane}}, static_cast<double>(p.tickets_refused));
      if (p.plane != "grpc") {
        lent.Add({{"plane", p.plane}}, static_cast<double>(p.lent_buffers));
        freed.Add({{"plane", p.plane}}, static_cast<double>(p.lent_buffers_freed));
        reclaimed.Add({{"plane", p.plane}}, static_cast<double>(p.lent_buffers_reclaimed));
        outstanding.Add(
            {{"plane", p.plane}},
            static_cast<double>(p.lent_buffers - p.lent_buffers_freed - p.lent_buffers_reclaimed));
      }
      for (const auto& [code, n] : p.errors) {
        errors.Add({{"plane", p.plane}, {"code", StatusCodeName(code)}}, static_cast<double>(n));
      }
    }
    FamilyBuilder issued("ferry_tickets_issued_total", "Tickets issued by GetFlightInfo.",
                         MetricType::Counter);
    FamilyBuilder expired("ferry_tickets_expired_total", "Issued tickets whose time ran out.",
                          MetricType::Counter);
    // Only a Flight server (whose snapshot has the grpc plane) issues tickets with a lifetime.
    if (std::any_of(m.planes.begin(), m.planes.end(),
                    [](const flight::PlaneMetrics& p) { return p.plane == "grpc"; })) {
      issued.Add({}, static_cast<double>(m.tickets_issued));
      expired.Add({}, static_cast<double>(m.tickets_expired));
    }
    MetricFamily rpcs{"ferry_rpc_duration_seconds",
                      "Flight RPCs' latency, from the call's start to its status, by RPC.",
                      MetricType::Histogram,
                      {}};
    for (const flight::RpcMetrics& r : m.rpcs) rpcs.metric.push_back(Histogram(r.rpc, r.latency));
    FamilyBuilder up("ferry_peer_up",
                     "1 when the federation peer answered the last question, 0 when it did not.",
                     MetricType::Gauge);
    FamilyBuilder latency("ferry_peer_latency_seconds",
                          "How long the federation peer took to answer the last question.",
                          MetricType::Gauge);
    FamilyBuilder questions("ferry_peer_questions_total", "Questions asked of the federation peer.",
                            MetricType::Counter);
    FamilyBuilder failures("ferry_peer_failures_total",
                           "Questions the federation peer did not answer (unreachable, too slow).",
                           MetricType::Counter);
    for (const flight::PeerMetrics& p : m.peers) {
      questions.Add({{"peer", p.uri}}, static_cast<double>(p.questions));
      failures.Add({{"peer", p.uri}}, static_cast<double>(p.failures));
      if (!p.asked) continue;  // neither up nor down until asked
      up.Add({{"peer", p.uri}}, p.up ? 1 : 0);
      latency.Add({{"peer", p.uri}}, p.latency_seconds);
    }
    std::vector<MetricFamily> out;
    for (FamilyBuilder* f :
         {&bytes, &batches, &active, &total, &issued, &expired, &refused, &lent, &freed, &reclaimed,
          &outstanding, &errors, &up, &latency, &questions, &failures}) {
      if (!f->family.metric.empty()) out.push_back(std::move(f->family));
    }
    if (!rpcs.metric.empty()) out.push_back(std::move(rpcs));
    return out;
  }

 private:
  const std::function<flight::ServerMetrics()> snapshot_;
};

}  // namespace

Result<std::unique_ptr<MetricsExporter>> MetricsExporter::Start(
    const std::string& listen, std::function<flight::ServerMetrics()> snapshot) {
  FERRY_ASSIGN_OR_RAISE(HostPort where, ParseHostPort(listen));
  std::unique_ptr<MetricsExporter> e(new MetricsExporter());
  e->host_ = where.HostInAddress();
  try {
    // CivetWeb's listening_ports takes HOST:PORT with IPv6 in brackets, as HostInAddress writes.
    e->exposer_ = std::make_unique<prometheus::Exposer>(listen, 1);
  } catch (const std::exception& failed) {
    return Status::Unavailable("cannot listen for metrics on " + listen + ": " + failed.what());
  }
  const std::vector<int> ports = e->exposer_->GetListeningPorts();
  if (ports.empty()) return Status::Unavailable("cannot listen for metrics on " + listen);
  e->port_ = ports.front();
  e->server_collector_ = std::make_shared<ServerCollector>(std::move(snapshot));
  e->process_collector_ = std::make_shared<ProcessCollector>();
  e->exposer_->RegisterCollectable(e->server_collector_);
  e->exposer_->RegisterCollectable(e->process_collector_);
  return e;
}

MetricsExporter::~MetricsExporter() = default;

std::string MetricsExporter::url() const {
  return "http://" + host_ + ":" + std::to_string(port_) + "/metrics";
}

}  // namespace ferry::cli
