// `ferry serve --metrics HOST:PORT`: a server's figures in Prometheus' text format on
// http://HOST:PORT/metrics, through prometheus-cpp's pull exposer: a Flight server's, or a
// Dissociated IPC server's without Flight. Part of the Flight module only: no other part of the
// tool links prometheus-cpp.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ferry/core/result.hpp"
#include "ferry/flight/metrics.hpp"
#include "flight_commands.hpp"

namespace prometheus {
class Exposer;
class Collectable;
}  // namespace prometheus

namespace ferry::cli {

/// The exposer and its collectors: each scrape takes one snapshot of the server's figures and
/// reads /proc/self and the heap's totals; nothing is kept between scrapes. Owned by `ferry
/// serve`; destroy it before the server the snapshot reads.
class MetricsExporter final : public MetricsEndpoint {
 public:
  /// Listen on `listen` (HOST:PORT; port 0 picks a free one) and serve what `snapshot` returns,
  /// called on the exposer's thread at each scrape. kUnavailable when the address cannot be
  /// bound, naming it.
  static Result<std::unique_ptr<MetricsExporter>> Start(
      const std::string& listen, std::function<flight::ServerMetrics()> snapshot);
  ~MetricsExporter() override;
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  std::string url() const override;

 private:
  MetricsExporter() = default;
  std::string host_;
  int port_ = 0;
  std::shared_ptr<prometheus::Collectable> server_collector_;
  std::shared_ptr<prometheus::Collectable> process_collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace ferry::cli
