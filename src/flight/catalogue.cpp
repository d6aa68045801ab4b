// The Flight server's datasets: made from batches or files, counted once, found by name.
#include "flight/catalogue.hpp"

#include <cerrno>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/flight/info.hpp"
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

Result<std::shared_ptr<Flight>> MakeFlight(const std::string& name, UniqueSchema schema,
                                           std::vector<UniqueDeviceArray> batches) {
  if (name.empty()) return Status::Invalid("a flight's name is empty");
  if (!schema.valid()) return Status::Invalid("the schema of flight \"" + name + "\" is released");
  auto flight = std::make_shared<Flight>();
  flight->name = name;
  FERRY_ASSIGN_OR_RAISE(flight->schema, EncodeSchema(schema.get()));
  CountingSink counter;
  {
    FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter writer,
                          ipc::StreamWriter::Open(&counter, schema.get()));
    for (size_t i = 0; i < batches.size(); ++i) {
      if (!batches[i].valid()) {
        return Status::Invalid("batch " + std::to_string(i) + " of flight \"" + name +
                               "\" is released");
      }
      FERRY_RETURN_NOT_OK(writer.WriteDeviceBatch(batches[i].get())
                              .WithContext("batch " + std::to_string(i) + " of \"" + name + "\""));
      flight->records += batches[i]->array.length;
    }
  }
  flight->bytes = counter.bytes;
  FERRY_ASSIGN_OR_RAISE(flight->dataset,
                        dipc::Dataset::FromBatches(std::move(schema), std::move(batches)));
  return flight;
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
  if (flights_.count(flight->name) != 0) {
    return Status(EEXIST,
                  "a flight named \"" + flight->name + "\" is already served (drop it first)");
  }
  flights_[flight->name] = std::move(flight);
  return Status::OK();
}

std::shared_ptr<Flight> Catalogue::Find(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = flights_.find(name);
  return it == flights_.end() ? nullptr : it->second;
}

Status Catalogue::Erase(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = flights_.find(name);
  if (it == flights_.end()) return Status(ENOENT, "no flight named \"" + name + "\"");
  const int64_t readers = it->second->readers.use_count() - 1;
  if (readers > 0) {
    return Status(EBUSY, "flight \"" + name + "\" is being read by " + std::to_string(readers) +
                             " DoGet stream(s)");
  }
  flights_.erase(it);
  return Status::OK();
}

void Catalogue::ForceErase(const std::string& name) {
  std::lock_guard lock(mutex_);
  flights_.erase(name);
}

std::vector<std::shared_ptr<Flight>> Catalogue::All() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<Flight>> out;
  out.reserve(flights_.size());
  for (const auto& [name, f] : flights_) out.push_back(f);
  return out;
}

}  // namespace ferry::flight::internal
