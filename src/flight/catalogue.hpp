// Internal to the flight layer: the flights a Flight server serves, each a list of partitions
// (one endpoint each), with what FlightInfo says about them and the count of DoGet streams
// reading each partition.
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

/// One endpoint of a flight: batches in memory (or mapped from a file) behind a dataset every
/// plane serves under `name`, and its size as the IPC format counts it. A flight's first
/// partition is named as the flight, partition i > 0 "FLIGHT/i" (PartitionName).
struct Partition {
  std::string name;
  std::shared_ptr<dipc::Dataset> dataset;
  int64_t records = 0;
  /// Body bytes of its record batches and dictionaries in the IPC format.
  int64_t bytes = 0;
  /// Held by the partition and by each DoGet reading it: use_count() - 1 readers.
  std::shared_ptr<const int> readers = std::make_shared<const int>(0);
};

/// A flight: its name, its schema in the IPC form (every partition's), and its partitions in the
/// data's order. Immutable once in the catalogue: appending a partition replaces the flight.
struct Flight {
  std::string name;
  std::string schema;
  std::vector<std::shared_ptr<Partition>> partitions;

  int64_t records() const;
  int64_t bytes() const;
  /// DoGet streams reading any of its partitions.
  int64_t readers() const;
};

/// The name partition `index` of flight `flight` is served and ticketed under.
std::string PartitionName(const std::string& flight, size_t index);

/// Make partition `name` of `batches` (struct arrays of `schema`, any device): encodes the schema
/// (returned in `encoded`) and counts records and body bytes with one pass of the IPC writer (no
/// copy of CPU batches).
Result<std::shared_ptr<Partition>> MakePartition(const std::string& name, UniqueSchema schema,
                                                 std::vector<UniqueDeviceArray> batches,
                                                 std::string* encoded);

/// Make flight `name` of one partition per element of `partitions`, all of `schema`.
Result<std::shared_ptr<Flight>> MakeFlight(const std::string& name, const ArrowSchema* schema,
                                           std::vector<std::vector<UniqueDeviceArray>> partitions);

/// Every batch of an IPC stream or file, mapped and decoded once (full validation), as CPU
/// device arrays that keep the mapping alive.
Result<std::pair<UniqueSchema, std::vector<UniqueDeviceArray>>> ReadBatches(
    const std::string& path);

/// `batches` cut, in order, into groups of whole batches of at most `max_bytes` body bytes each
/// (a larger batch is a group of its own); all of them in one group when `max_bytes` <= 0.
Result<std::vector<std::vector<UniqueDeviceArray>>> SplitBatches(
    const ArrowSchema* schema, std::vector<UniqueDeviceArray> batches, int64_t max_bytes);

/// The flights by name, and their partitions by name. Thread-safe.
class Catalogue {
 public:
  /// EEXIST if the flight's name or one of its partitions' names is taken.
  Status Insert(std::shared_ptr<Flight> flight);
  /// Put `flight` in place of the flight of its name, whose partitions it keeps (an append).
  void Replace(std::shared_ptr<Flight> flight);
  /// NULL when unknown.
  std::shared_ptr<Flight> Find(const std::string& name) const;
  std::shared_ptr<Partition> FindPartition(const std::string& name) const;
  /// Whether `name` is a flight's or a partition's.
  bool Taken(const std::string& name) const;
  /// Remove `name` (ENOENT if unknown); a DoGet reading it holds its partition and finishes.
  Status Erase(const std::string& name);
  /// Remove `name` if it is there (undoing an Insert).
  void ForceErase(const std::string& name);
  std::vector<std::shared_ptr<Flight>> All() const;

 private:
  void Unindex(const Flight& flight);
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Flight>> flights_;
  std::map<std::string, std::shared_ptr<Partition>> partitions_;
};

}  // namespace ferry::flight::internal
