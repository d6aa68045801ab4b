// Flight's consumers of the Async C Device Stream Interface: Server::AddAsync serves what a
// producer pushes, Client::PutAsync uploads it with DoPut as it arrives.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/flight/server.hpp"

namespace ferry::flight {

namespace {

// The host batches of an async handler's stream as an ArrowArrayStream, which DoPut writes:
// each batch is requested from the producer as DoPut asks for the next one.
class HostBatches final : public ArrayProducer {
 public:
  explicit HostBatches(UniqueDeviceArrayStream source) : source_(std::move(source)) {}
  Status GetSchema(ArrowSchema* out) override { return StreamGetSchema(source_.get(), out); }
  Status GetNext(ArrowArray* out) override {
    UniqueDeviceArray batch;
    FERRY_RETURN_NOT_OK(StreamGetNext(source_.get(), batch.get()));
    if (!batch.valid()) return Status::OK();  // the end: `out` stays released
    if (batch->device_type != ARROW_DEVICE_CPU && batch->device_type != ARROW_DEVICE_CUDA_HOST &&
        batch->device_type != ARROW_DEVICE_CUDA_MANAGED) {
      return Status::NotSupported("PutAsync: batch " + std::to_string(index_) + " is on " +
                                  DeviceTypeName(batch->device_type) +
                                  "; DoPut uploads batches in host memory");
    }
    ++index_;
    *out = batch->array;  // the array moves out; its events were waited on
    batch->array.release = nullptr;
    return Status::OK();
  }

 private:
  UniqueDeviceArrayStream source_;
  int64_t index_ = 0;
};

}  // namespace

Result<std::shared_future<Status>> Server::AddAsync(const std::string& name,
                                                    ArrowAsyncDeviceStreamHandler* handler,
                                                    AsyncHandlerOptions options) {
  struct Arrived {
    UniqueSchema schema;
    std::vector<UniqueDeviceArray> batches;
    std::promise<Status> done;
  };
  auto arrived = std::make_shared<Arrived>();
  std::shared_future<Status> result = arrived->done.get_future().share();
  AsyncSinkCallbacks sink;
  sink.on_schema = [arrived](UniqueSchema schema) {
    arrived->schema = std::move(schema);
    return Status::OK();
  };
  sink.on_batch = [arrived](UniqueDeviceArray batch) {
    arrived->batches.push_back(std::move(batch));
    return Status::OK();
  };
  sink.on_end = [arrived, this, name](const Status& st) {
    if (!st.ok()) {
      arrived->done.set_value(
          st.WithContext("AddAsync [" + name + "]: the producer failed, nothing is served"));
      return;
    }
    arrived->done.set_value(Add(name, std::move(arrived->schema), std::move(arrived->batches)));
  };
  options.wait_events = true;  // gRPC and the planes read the bytes as they are
  FERRY_RETURN_NOT_OK(AsyncHandlerToCallbacks(handler, std::move(sink), options));
  return result;
}

Result<std::shared_future<Status>> Client::PutAsync(const std::string& path,
                                                    ArrowAsyncDeviceStreamHandler* handler,
                                                    AsyncHandlerOptions options) {
  UniqueDeviceArrayStream arrived;
  options.wait_events = true;  // DoPut reads the bytes as they are
  FERRY_RETURN_NOT_OK(AsyncHandlerToStream(handler, arrived.get(), options));
  auto upload = std::make_shared<UniqueArrayStream>(
      ExportArrayStream(std::make_unique<HostBatches>(std::move(arrived))));
  // Put blocks until the server has stored the flight; its thread ends with it.
  return std::async(std::launch::async, [this, path, upload] { return Put(path, upload->get()); })
      .share();
}

}  // namespace ferry::flight
