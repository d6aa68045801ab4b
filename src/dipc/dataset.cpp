// Datasets a server serves: IPC files and streams, in-memory batches, and stream producers.
#include "ferry/dipc/dataset.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>

#include "dipc/served_file.hpp"
#include "ferry/core/bytes.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/ipc/reader.hpp"

namespace ferry::dipc {

namespace {

// Reads an ArrowArrayStream of host batches, labelling each as a CPU device array. When
// `reached_end` is given, it is set once the stream ends cleanly (every batch read and checked).
class HostStreamReader final : public DatasetReader {
 public:
  static Result<std::unique_ptr<DatasetReader>> Make(
      UniqueArrayStream stream, std::shared_ptr<std::atomic<bool>> reached_end = nullptr) {
    auto r = std::unique_ptr<HostStreamReader>(new HostStreamReader(std::move(stream)));
    r->reached_end_ = std::move(reached_end);
    FERRY_RETURN_NOT_OK(StreamGetSchema(r->stream_.get(), r->schema_.get())
                            .WithContext("the dataset's get_schema failed"));
    return std::unique_ptr<DatasetReader>(std::move(r));
  }
  const ArrowSchema* schema() const noexcept override { return schema_.get(); }
  Result<const ArrowDeviceArray*> Next() override {
    current_.reset();
    UniqueArray a;
    FERRY_RETURN_NOT_OK(
        StreamGetNext(stream_.get(), a.get()).WithContext("the dataset's get_next failed"));
    if (!a.valid()) {
      if (reached_end_) reached_end_->store(true, std::memory_order_release);
      return nullptr;
    }
    ArrowDeviceArray* d = current_.get();
    a.move_to(&d->array);
    d->device_id = -1;
    d->device_type = ARROW_DEVICE_CPU;
    return static_cast<const ArrowDeviceArray*>(d);
  }
  UniqueDeviceArray TakeBatch() override { return std::move(current_); }

 private:
  explicit HostStreamReader(UniqueArrayStream stream) : stream_(std::move(stream)) {}
  UniqueArrayStream stream_;
  UniqueSchema schema_;
  UniqueDeviceArray current_;
  std::shared_ptr<std::atomic<bool>> reached_end_;
};

// Reads an ArrowDeviceArrayStream.
class DeviceStreamReader final : public DatasetReader {
 public:
  static Result<std::unique_ptr<DatasetReader>> Make(UniqueDeviceArrayStream stream) {
    if (!stream.valid()) return Status::Invalid("the dataset's stream is released");
    auto r = std::unique_ptr<DeviceStreamReader>(new DeviceStreamReader(std::move(stream)));
    FERRY_RETURN_NOT_OK(StreamGetSchema(r->stream_.get(), r->schema_.get())
                            .WithContext("the dataset's get_schema failed"));
    return std::unique_ptr<DatasetReader>(std::move(r));
  }
  const ArrowSchema* schema() const noexcept override { return schema_.get(); }
  Result<const ArrowDeviceArray*> Next() override {
    current_.reset();
    FERRY_RETURN_NOT_OK(
        StreamGetNext(stream_.get(), current_.get()).WithContext("the dataset's get_next failed"));
    if (!current_.valid()) return nullptr;
    return static_cast<const ArrowDeviceArray*>(current_.get());
  }
  UniqueDeviceArray TakeBatch() override { return std::move(current_); }

 private:
  explicit DeviceStreamReader(UniqueDeviceArrayStream stream) : stream_(std::move(stream)) {}
  UniqueDeviceArrayStream stream_;
  UniqueSchema schema_;
  UniqueDeviceArray current_;
};

class PathDataset final : public Dataset {
 public:
  explicit PathDataset(DatasetFile&& file)
      : file_(std::move(file)), bytes_{file_.data, file_.size, file_.owner} {}
  const DatasetFile* file() const noexcept override { return &file_; }
  bool repeatable() const noexcept override { return true; }
  Result<std::unique_ptr<DatasetReader>> Open() override {
    const bool file = bytes_.size >= 6 && std::memcmp(bytes_.data, "ARROW1", 6) == 0;
    // Every element is checked until one pass has read the whole file (1 GiB of mixed columns
    // costs about 140 ms of the server's CPU, on the cores its clients need); after that, a
    // pass checks the structure, buffer sizes and first and last offsets, which is all the
    // server's own reads rely on. The client checks what it receives at its own level.
    const bool checked = checked_->load(std::memory_order_acquire);
    ipc::ReadOptions options;
    options.validation = checked ? ValidationLevel::kDefault : ValidationLevel::kFull;
    UniqueArrayStream stream;
    if (file) {
      FERRY_ASSIGN_OR_RAISE(ipc::FileReader reader, ipc::FileReader::Open(bytes_, options));
      FERRY_ASSIGN_OR_RAISE(stream, ipc::FileReader::ToStream(std::move(reader)));
    } else {
      FERRY_ASSIGN_OR_RAISE(stream, ipc::ReadStream(bytes_, options));
    }
    return HostStreamReader::Make(std::move(stream), checked ? nullptr : checked_);
  }

 private:
  DatasetFile file_;
  SharedBytes bytes_;
  // Set once a pass with full validation has read every batch of the file.
  std::shared_ptr<std::atomic<bool>> checked_ = std::make_shared<std::atomic<bool>>(false);
};

struct Batches {
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches;
};

class BatchesReader final : public DatasetReader {
 public:
  explicit BatchesReader(std::shared_ptr<const Batches> data) : data_(std::move(data)) {}
  const ArrowSchema* schema() const noexcept override { return data_->schema.get(); }
  Result<const ArrowDeviceArray*> Next() override {
    if (next_ >= data_->batches.size()) return nullptr;
    return data_->batches[next_++].get();
  }
  bool keeps_batches() const noexcept override { return true; }

 private:
  std::shared_ptr<const Batches> data_;  // keeps the batches alive while a client reads them
  size_t next_ = 0;
};

class BatchesDataset final : public Dataset {
 public:
  explicit BatchesDataset(std::shared_ptr<const Batches> data) : data_(std::move(data)) {}
  bool repeatable() const noexcept override { return true; }
  Result<std::unique_ptr<DatasetReader>> Open() override {
    return std::unique_ptr<DatasetReader>(std::make_unique<BatchesReader>(data_));
  }

 private:
  std::shared_ptr<const Batches> data_;
};

class FactoryDataset final : public Dataset {
 public:
  explicit FactoryDataset(std::function<Result<UniqueDeviceArrayStream>()> open)
      : open_(std::move(open)) {}
  Result<std::unique_ptr<DatasetReader>> Open() override {
    FERRY_ASSIGN_OR_RAISE(UniqueDeviceArrayStream stream, open_());
    return DeviceStreamReader::Make(std::move(stream));
  }

 private:
  std::function<Result<UniqueDeviceArrayStream>()> open_;
};

class OneShotDataset final : public Dataset {
 public:
  explicit OneShotDataset(UniqueDeviceArrayStream stream) : stream_(std::move(stream)) {}
  Result<std::unique_ptr<DatasetReader>> Open() override {
    std::lock_guard lock(mutex_);
    if (!stream_.valid()) {
      return Status::FailedPrecondition(
          "this dataset was a one-shot stream and another client has read it (to serve every "
          "client, give the server its batches, a callable that returns a stream, or Keep it)");
    }
    return DeviceStreamReader::Make(std::move(stream_));
  }

 private:
  std::mutex mutex_;
  UniqueDeviceArrayStream stream_;
};

}  // namespace

Result<std::shared_ptr<Dataset>> Dataset::FromPath(const std::string& path) {
  FERRY_ASSIGN_OR_RAISE(DatasetFile file, internal::MapServedFile(path, false));
  auto dataset = std::make_shared<PathDataset>(std::move(file));
  // Open once now, so a file that is not IPC fails at registration with its reason.
  FERRY_RETURN_NOT_OK(dataset->Open().status());
  return std::shared_ptr<Dataset>(std::move(dataset));
}

Result<std::shared_ptr<Dataset>> Dataset::FromBatches(UniqueSchema schema,
                                                      std::vector<UniqueDeviceArray> batches) {
  if (!schema.valid()) return Status::Invalid("the dataset's schema is released");
  for (size_t i = 0; i < batches.size(); ++i) {
    if (!batches[i].valid()) {
      return Status::Invalid("batch " + std::to_string(i) + " of the dataset is released");
    }
  }
  auto data = std::make_shared<Batches>();
  data->schema = std::move(schema);
  data->batches = std::move(batches);
  return std::shared_ptr<Dataset>(std::make_shared<BatchesDataset>(std::move(data)));
}

std::shared_ptr<Dataset> Dataset::FromStreamFactory(
    std::function<Result<UniqueDeviceArrayStream>()> open) {
  return std::make_shared<FactoryDataset>(std::move(open));
}

std::shared_ptr<Dataset> Dataset::FromStream(UniqueDeviceArrayStream stream) {
  return std::make_shared<OneShotDataset>(std::move(stream));
}

Result<std::shared_ptr<Dataset>> Dataset::FromAsync(ArrowAsyncDeviceStreamHandler* handler,
                                                    AsyncHandlerOptions options) {
  options.wait_events = true;  // the server reads the bytes as they are
  UniqueDeviceArrayStream stream;
  FERRY_RETURN_NOT_OK(AsyncHandlerToStream(handler, stream.get(), options));
  return FromStream(std::move(stream));
}

}  // namespace ferry::dipc
