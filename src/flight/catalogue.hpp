// Internal to the flight layer: the datasets a Flight server serves, each with what FlightInfo
// says about it, and the count of DoGet streams reading it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/dipc/dataset.hpp"

namespace ferry::flight::internal {

/// One flight: batches in memory (or mapped from a file) behind a dataset every plane can
/// serve, its schema in the IPC form, and its size as the IPC format counts it.
struct Flight {
  std::string name;
  std::shared_ptr<dipc::Dataset> dataset;
  std::string schema;
  int64_t records = 0;
  /// Body bytes of its record batches and dictionaries in the IPC format.
  int64_t bytes = 0;
  /// Held by the catalogue and by each DoGet reading it: use_count() - 1 readers.
  std::shared_ptr<const int> readers = std::make_shared<const int>(0);
};

/// Make a flight of `batches` (struct arrays of `schema`, any device): encodes the schema and
/// counts records and body bytes with one pass of the IPC writer (no copy of CPU batches).
Result<std::shared_ptr<Flight>> MakeFlight(const std::string& name, UniqueSchema schema,
                                           std::vector<UniqueDeviceArray> batches);

/// Every batch of an IPC stream or file, mapped and decoded once (full validation), as CPU
/// device arrays that keep the mapping alive.
Result<std::pair<UniqueSchema, std::vector<UniqueDeviceArray>>> ReadBatches(
    const std::string& path);

/// The flights by name. Thread-safe.
class Catalogue {
 public:
  /// EEXIST if `flight->name` is taken.
  Status Insert(std::shared_ptr<Flight> flight);
  /// NULL when unknown.
  std::shared_ptr<Flight> Find(const std::string& name) const;
  /// Remove `name`: ENOENT if unknown, EBUSY (nothing changed) while a DoGet reads it.
  Status Erase(const std::string& name);
  /// Remove `name` whatever reads it (undoing an Insert).
  void ForceErase(const std::string& name);
  std::vector<std::shared_ptr<Flight>> All() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Flight>> flights_;
};

}  // namespace ferry::flight::internal
