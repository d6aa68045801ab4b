// `ferry serve --flight ... --metrics HOST:PORT`: a Flight server's figures in Prometheus' text
// format on http://HOST:PORT/metrics, through prometheus-cpp's pull exposer. Part of the Flight
// module only: no other command loads prometheus-cpp.
#pragma once

#include <memory>
#include <string>

#include "ferry/core/result.hpp"
#include "ferry/flight/server.hpp"

namespace prometheus {
class Exposer;
class Collectable;
}  // namespace prometheus

namespace ferry::cli {

/// The exposer and its collectors: each scrape reads `server`'s metrics() and /proc/self, and
/// nothing is kept between scrapes. Owned by `ferry serve`; destroy it before the server.
class MetricsExporter {
 public:
  /// Listen on `listen` (HOST:PORT; port 0 picks a free one) and serve `server`'s metrics.
  /// kUnavailable when the address cannot be bound, naming it.
  static Result<std::unique_ptr<MetricsExporter>> Start(const std::string& listen,
                                                        const flight::Server* server);
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  /// http://HOST:PORT/metrics, with the port bound.
  std::string url() const;

 private:
  MetricsExporter() = default;
  std::string host_;
  int port_ = 0;
  std::shared_ptr<prometheus::Collectable> server_collector_;
  std::shared_ptr<prometheus::Collectable> process_collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace ferry::cli
