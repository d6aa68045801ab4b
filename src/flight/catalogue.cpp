// The Flight server's flights and their partitions: made from batches or files, counted once,
// found by name.
#include "flight/catalogue.hpp"

#include <cerrno>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/flight/info.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/reader.hpp"
#include "ferry/ipc/writer.hpp"

namespace ferry::flight::internal {

namespace {

// Counts body bytes as the writer lays the messages out; keeps nothing.
class CountingSink final : public ipc::MessageSink {
 public:
  Status WriteMessage(const ipc::EncodedMessage& m) override {
    bytes += m.body_length;
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }
  int64_t bytes = 0;
};

}  // namespace

int64_t Flight::records() const {
  int64_t n = 0;
  for (const auto& p : partitions) n += p->records;
  return n;
}

int64_t Flight::bytes() const {
  int64_t n = 0;
  for (const auto& p : partitions) n += p->bytes;
  return n;
}

int64_t Flight::readers() const {
  int64_t n = 0;
  for (const auto& p : partitions) n += p->readers.use_count() - 1;
  return n;
}

std::string PartitionName(const std::string& flight, size_t index) {
  return index == 0 ? flight : flight + "/" + std::to_string(index);
}

Result<std::shared_ptr<Partition>> MakePartition(const std::string& name, UniqueSchema schema,
                                                 std::vector<UniqueDeviceArray> batches,
                                                 std::string* encoded) {
  if (name.empty()) return Status::Invalid("a flight's name is empty");
  if (!schema.valid()) return Status::Invalid("the schema of flight \"" + name + "\" is released");
  auto part = std::make_shared<Partition>();
  part->name = name;
  FERRY_ASSIGN_OR_RAISE(*encoded, EncodeSchema(schema.get()));
  CountingSink counter;
  {
    FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter writer,
                          ipc::StreamWriter::Open(&counter, schema.get()));
    for (size_t i = 0; i < batches.size(); ++i) {
      if (!batches[i].valid()) {
        return Status::Invalid("batch " + std::to_string(i) + " of flight \"" + name +
                               "\" is released");
      }
      // `batches` outlives the writer: a dictionary they share is read once.
      FERRY_RETURN_NOT_OK(writer.WriteKeptBatch(batches[i].get())
                              .WithContext("batch " + std::to_string(i) + " of \"" + name + "\""));
      part->records += batches[i]->array.length;
    }
  }
  part->bytes = counter.bytes;
  FERRY_ASSIGN_OR_RAISE(part->dataset,
                        dipc::Dataset::FromBatches(std::move(schema), std::move(batches)));
  return part;
}

Result<std::shared_ptr<Flight>> MakeFlight(const std::string& name, const ArrowSchema* schema,
                                           std::vector<std::vector<UniqueDeviceArray>> partitions) {
  if (partitions.empty()) {
    return Status::Invalid("flight \"" + name + "\" has no partition (an empty one has no batch)");
  }
  auto flight = std::make_shared<Flight>();
  flight->name = name;
  for (size_t i = 0; i < partitions.size(); ++i) {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema copy, CopySchema(schema));
    std::string encoded;
    FERRY_ASSIGN_OR_RAISE(
        std::shared_ptr<Partition> part,
        MakePartition(PartitionName(name, i), std::move(copy), std::move(partitions[i]), &encoded));
    if (i == 0) flight->schema = std::move(encoded);
    flight->partitions.push_back(std::move(part));
  }
  return flight;
}

Result<std::vector<std::vector<UniqueDeviceArray>>> SplitBatches(
    const ArrowSchema* schema, std::vector<UniqueDeviceArray> batches, int64_t max_bytes) {
  std::vector<std::vector<UniqueDeviceArray>> groups(1);
  if (max_bytes <= 0) {
    groups[0] = std::move(batches);
    return groups;
  }
  CountingSink counter;
  FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter writer, ipc::StreamWriter::Open(&counter, schema));
  int64_t in_group = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const int64_t before = counter.bytes;
    FERRY_RETURN_NOT_OK(
        writer.WriteDeviceBatch(batches[i].get()).WithContext("batch " + std::to_string(i)));
    const int64_t size = counter.bytes - before;
    if (!groups.back().empty() && in_group + size > max_bytes) {
      groups.emplace_back();
      in_group = 0;
    }
    in_group += size;
    groups.back().push_back(std::move(batches[i]));
  }
  return groups;
}

Result<std::pair<UniqueSchema, std::vector<UniqueDeviceArray>>> ReadBatches(
    const std::string& path) {
  FERRY_ASSIGN_OR_RAISE(UniqueArrayStream stream, ipc::ReadPath(path));
  std::pair<UniqueSchema, std::vector<UniqueDeviceArray>> out;
  FERRY_RETURN_NOT_OK(StreamGetSchema(stream.get(), out.first.get()).WithContext(path));
  while (true) {
    UniqueArray a;
    FERRY_RETURN_NOT_OK(StreamGetNext(stream.get(), a.get()).WithContext(path));
    if (!a.valid()) break;
    UniqueDeviceArray d;
    a.move_to(&d->array);
    d->device_type = ARROW_DEVICE_CPU;
    d->device_id = -1;
    out.second.push_back(std::move(d));
  }
  return out;
}

Status Catalogue::Insert(std::shared_ptr<Flight> flight) {
  std::lock_guard lock(mutex_);
  for (const auto& p : flight->partitions) {
    if (flights_.count(p->name) != 0 || partitions_.count(p->name) != 0) {
      return Status::AlreadyExists("a flight or partition named \"" + p->name +
                                   "\" is already served (drop it first)");
    }
  }
  if (flights_.count(flight->name) != 0 || partitions_.count(flight->name) != 0) {
    return Status::AlreadyExists("a flight named \"" + flight->name +
                                 "\" is already served (drop it first)");
  }
  for (const auto& p : flight->partitions) partitions_[p->name] = p;
  flights_[flight->name] = std::move(flight);
  return Status::OK();
}

void Catalogue::Replace(std::shared_ptr<Flight> flight) {
  std::lock_guard lock(mutex_);
  for (const auto& p : flight->partitions) partitions_[p->name] = p;
  flights_[flight->name] = std::move(flight);
}

std::shared_ptr<Flight> Catalogue::Find(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = flights_.find(name);
  return it == flights_.end() ? nullptr : it->second;
}

std::shared_ptr<Partition> Catalogue::FindPartition(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = partitions_.find(name);
  return it == partitions_.end() ? nullptr : it->second;
}

bool Catalogue::Taken(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return flights_.count(name) != 0 || partitions_.count(name) != 0;
}

void Catalogue::Unindex(const Flight& flight) {
  for (const auto& p : flight.partitions) partitions_.erase(p->name);
}

Status Catalogue::Erase(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = flights_.find(name);
  if (it == flights_.end()) return Status::NotFound("no flight named \"" + name + "\"");
  Unindex(*it->second);
  flights_.erase(it);
  return Status::OK();
}

void Catalogue::ForceErase(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = flights_.find(name);
  if (it == flights_.end()) return;
  Unindex(*it->second);
  flights_.erase(it);
}

std::vector<std::shared_ptr<Flight>> Catalogue::All() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<Flight>> out;
  out.reserve(flights_.size());
  for (const auto& [name, f] : flights_) out.push_back(f);
  return out;
}

}  // namespace ferry::flight::internal
