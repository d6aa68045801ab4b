// The process collector of `ferry serve --metrics`: Prometheus' standard process_* metrics, read
// from /proc/self on each scrape (prometheus-cpp has none of its own), and the C heap in use.
#pragma once

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

#include <vector>

namespace ferry::cli {

/// process_resident_memory_bytes, process_virtual_memory_bytes, process_open_fds,
/// process_max_fds, process_cpu_seconds_total and process_start_time_seconds, as Prometheus'
/// client libraries name them, and ferry_heap_in_use_bytes (glibc's mallinfo2, which walks the
/// malloc arenas' free lists). Stateless; each scrape reads /proc/self/stat, /proc/stat and
/// /proc/self/fd (a few system calls). A file that cannot be read leaves its metrics out.
class ProcessCollector final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace ferry::cli
