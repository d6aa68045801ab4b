// The client's DoGet stream and the concatenation of endpoints.
#include "flight/client_stream.hpp"

#include <cerrno>
#include <optional>

#include "Flight.grpc.pb.h"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/device/device_array.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/format/array_bytes.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/format/schema_view.hpp"
#include "ferry/ipc/decoder.hpp"
#include "flight/raw_call.hpp"
#include "flight/wire.hpp"

namespace ferry::flight::internal {

namespace {

namespace pb = ::arrow::flight::protocol;

class DoGetProducer final : public DeviceArrayProducer {
 public:
  DoGetProducer(std::unique_ptr<RawCall> call, const GetOptions& options)
      : call_(std::move(call)), decoder_(options.read), device_(options.device) {}

  // Read until the schema has arrived.
  Status Open() {
    while (decoder_.schema() == nullptr) {
      FERRY_ASSIGN_OR_RAISE(bool more, ReadOne());
      if (!more) {
        FERRY_RETURN_NOT_OK(call_->Finish());
        return Status::Invalid("DoGet: the server ended the stream before sending a schema");
      }
    }
    return Status::OK();
  }

  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema s, decoder_.ExportSchema());
    s.move_to(out);
    return Status::OK();
  }

  Status GetNext(ArrowDeviceArray* out) override {
    while (true) {
      if (std::optional<ipc::DecodedMessage> m = decoder_.Next()) {
        if (m->kind != ipc::MessageKind::kRecordBatch) continue;
        UniqueDeviceArray d;
        m->batch.move_to(&d->array);
        d->device_type = ARROW_DEVICE_CPU;
        d->device_id = -1;
        return Deliver(decoder_.schema(), std::move(d), device_, out);
      }
      if (ended_) return Status::OK();  // `out` stays released: the end
      FERRY_ASSIGN_OR_RAISE(bool more, ReadOne());
      if (!more) {
        ended_ = true;
        FERRY_RETURN_NOT_OK(call_->Finish());
      }
    }
  }

 private:
  Result<bool> ReadOne() {
    grpc::ByteBuffer buffer;
    FERRY_ASSIGN_OR_RAISE(bool more, call_->Read(&buffer));
    if (!more) return false;
    ++messages_;
    FERRY_ASSIGN_OR_RAISE(FlightDataView data, DecodeFlightData(buffer));
    if (data.header.empty()) return true;  // app_metadata alone
    const ByteSpan header{data.header.data(), static_cast<int64_t>(data.header.size())};
    FERRY_RETURN_NOT_OK(decoder_.ConsumeMessage(header, data.body)
                            .WithContext("DoGet: FlightData " + std::to_string(messages_)));
    return true;
  }

  std::unique_ptr<RawCall> call_;
  ipc::Decoder decoder_;
  Device* device_;
  int64_t messages_ = 0;
  bool ended_ = false;
};

class ConcatProducer final : public DeviceArrayProducer {
 public:
  ConcatProducer(UniqueDeviceArrayStream first,
                 std::vector<std::function<Result<UniqueDeviceArrayStream>()>> rest)
      : current_(std::move(first)), rest_(std::move(rest)) {}

  Status Init() { return StreamGetSchema(current_.get(), schema_.get()); }

  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema copy, CopySchema(schema_.get()));
    copy.move_to(out);
    return Status::OK();
  }

  Status GetNext(ArrowDeviceArray* out) override {
    while (true) {
      FERRY_RETURN_NOT_OK(StreamGetNext(current_.get(), out));
      if (out->array.release != nullptr || next_ == rest_.size()) return Status::OK();
      FERRY_ASSIGN_OR_RAISE(current_, rest_[next_]());
      ++next_;
      UniqueSchema s;
      FERRY_RETURN_NOT_OK(StreamGetSchema(current_.get(), s.get()));
      // Read as the first endpoint's batches: metadata may differ, the data may not.
      FERRY_ASSIGN_OR_RAISE(bool same, SchemaEquals(s.get(), schema_.get()));
      if (!same) {
        FERRY_ASSIGN_OR_RAISE(std::string a, SchemaToString(s.get()));
        FERRY_ASSIGN_OR_RAISE(std::string b, SchemaToString(schema_.get()));
        std::string message = "endpoint " + std::to_string(next_) + " of the flight has schema ";
        message += a;
        message += ", the first endpoint's is ";
        message += b;
        return Status::Invalid(message);
      }
    }
  }

 private:
  UniqueDeviceArrayStream current_;
  std::vector<std::function<Result<UniqueDeviceArrayStream>()>> rest_;
  size_t next_ = 0;
  UniqueSchema schema_;
};

class CountingProducer final : public DeviceArrayProducer {
 public:
  CountingProducer(UniqueDeviceArrayStream inner, std::shared_ptr<PlaneCounters> counters,
                   std::atomic<int64_t>* counter, std::string context)
      : inner_(std::move(inner)),
        counters_(std::move(counters)),
        counter_(counter),
        context_(std::move(context)) {}

  Status Init() {
    FERRY_RETURN_NOT_OK(StreamGetSchema(inner_.get(), schema_.get()));
    FERRY_ASSIGN_OR_RAISE(ArrayBytes sizes, ArrayBytes::Make(schema_.get()));
    sizes_.emplace(std::move(sizes));
    return Status::OK();
  }

  Status GetSchema(ArrowSchema* out) override { return StreamGetSchema(inner_.get(), out); }

  Status GetNext(ArrowDeviceArray* out) override {
    FERRY_RETURN_NOT_OK(StreamGetNext(inner_.get(), out).WithContext(context_));
    if (out->array.release == nullptr) return Status::OK();
    // Sizing a variable-length buffer reads its last offset: from host memory only, so that a
    // read onto a GPU pays no copy for counting. A batch that cannot be sized counts nothing;
    // the reader's own validation reports it.
    if (out->device_type == ARROW_DEVICE_CPU || out->device_type == ARROW_DEVICE_CUDA_HOST) {
      if (Result<int64_t> bytes = sizes_->Of(&out->array); bytes.ok()) {
        counter_->fetch_add(*bytes);
      }
    }
    return Status::OK();
  }

 private:
  UniqueDeviceArrayStream inner_;
  std::shared_ptr<PlaneCounters> counters_;
  std::atomic<int64_t>* counter_;
  std::string context_;
  UniqueSchema schema_;
  std::optional<ArrayBytes> sizes_;  // each host batch's bytes, made by Init
};

}  // namespace

Result<UniqueDeviceArrayStream> CountBytes(UniqueDeviceArrayStream inner,
                                           std::shared_ptr<PlaneCounters> counters,
                                           std::atomic<int64_t>* counter, std::string context) {
  const ArrowDeviceType device_type = inner->device_type;
  auto producer = std::make_unique<CountingProducer>(std::move(inner), std::move(counters), counter,
                                                     std::move(context));
  FERRY_RETURN_NOT_OK(producer->Init());
  return ExportDeviceArrayStream(std::move(producer), device_type);
}

Status Deliver(const ArrowSchema* schema, UniqueDeviceArray batch, Device* device,
               ArrowDeviceArray* out) {
  if (device == nullptr || device == CpuDevice()) {
    DeviceArrayMove(batch.get(), out);
    return Status::OK();
  }
  FERRY_ASSIGN_OR_RAISE(DeviceArrayView view, DeviceArrayView::Make(schema));
  FERRY_RETURN_NOT_OK(view.SetArray(batch.get()));
  FERRY_ASSIGN_OR_RAISE(UniqueDeviceArray copy, view.Copy(*device));
  DeviceArrayMove(copy.get(), out);
  return Status::OK();
}

Result<UniqueDeviceArrayStream> OpenDoGet(
    std::shared_ptr<grpc::Channel> channel, const std::string& token, const std::string& ticket,
    const GetOptions& options, std::chrono::milliseconds timeout,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  auto call = std::make_unique<RawCall>(std::move(channel), "DoGet", token, timeout, headers);
  FERRY_RETURN_NOT_OK(call->Start());
  pb::Ticket t;
  t.set_ticket(ticket);
  grpc::ByteBuffer request;
  bool own = false;
  if (!grpc::SerializationTraits<pb::Ticket>::Serialize(t, &request, &own).ok()) {
    return Status::Internal("DoGet: cannot serialize the ticket");
  }
  FERRY_ASSIGN_OR_RAISE(bool sent, call->Write(request));
  if (sent) FERRY_RETURN_NOT_OK(call->WritesDone());
  if (!sent) return call->Finish();
  auto producer = std::make_unique<DoGetProducer>(std::move(call), options);
  FERRY_RETURN_NOT_OK(producer->Open());
  Device* target = options.device != nullptr ? options.device : CpuDevice();
  return ExportDeviceArrayStream(std::move(producer), target->device_type());
}

Result<UniqueDeviceArrayStream> Concatenate(
    UniqueDeviceArrayStream first,
    std::vector<std::function<Result<UniqueDeviceArrayStream>()>> rest,
    ArrowDeviceType device_type) {
  if (rest.empty()) return first;
  auto producer = std::make_unique<ConcatProducer>(std::move(first), std::move(rest));
  FERRY_RETURN_NOT_OK(producer->Init());
  return ExportDeviceArrayStream(std::move(producer), device_type);
}

}  // namespace ferry::flight::internal
