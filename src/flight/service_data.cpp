// The FlightService's data calls: DoGet lends each batch's memory to gRPC as slices (no copy of
// a body), DoPut decodes uploads from gRPC's receive buffers and stores them whole or not at all.
#include <cerrno>
#include <deque>
#include <optional>

#include "ferry/ipc/decoder.hpp"
#include "ferry/ipc/writer.hpp"
#include "flight/batch_slices.hpp"
#include "flight/call_trace.hpp"
#include "flight/convert.hpp"
#include "flight/drain.hpp"
#include "flight/grpc_order.hpp"
#include "flight/grpc_status.hpp"
#include "flight/service.hpp"
#include "flight/wire.hpp"

namespace ferry::flight::internal {

namespace {

// Streams one flight: the schema, then each batch's dictionaries and the batch, one FlightData
// each. A batch is encoded only when gRPC took the previous message, so memory in flight is one
// message (lent, not copied) whatever the flight's size.
class DoGetReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer>,
                           public ipc::MessageSink {
 public:
  DoGetReactor(ServerState* state, grpc::CallbackServerContext* context,
               const grpc::ByteBuffer* request)
      : state_(state), timer_(state->rpc_metrics.get(), RpcMetricsTable::kDoGet) {
    state_->CallStarted();
    grpc::Status admitted = Authenticate(state_, context);
    if (admitted.ok()) admitted = RefuseIfDraining(state_, "DoGet", context);
    if (!admitted.ok()) {
      timer_.Finish(admitted.error_code());
      GrpcHandOff(this);
      Finish(admitted);
      return;
    }
    const TraceContext trace = StartCall(state_, context, "DoGet");
    const Status st = Open(*request, context);
    if (!st.ok()) {
      LogRecord r;
      r.event = "doget_refused";
      r.message = "DoGet from " + context->peer() + " refused: " + st.message();
      r.peer = context->peer();
      r.trace_id = trace.trace_id;
      r.span_id = trace.span_id;
      state_->Log(std::move(r));
      End(ToGrpc(st));
      return;
    }
    ++state_->do_gets;
    state_->do_gets_active.fetch_add(1, std::memory_order_relaxed);
    counted_ = true;
    Pump();
  }

  Status WriteMessage(const ipc::EncodedMessage& m) override {
    if (m.body_length > state_->options.max_message_body) {
      // Over the message limit: a placeholder, which WriteBatch replaces with slices.
      oversize_at_ = static_cast<int64_t>(queue_.size());
      oversize_bytes_ = m.body_length;
      queue_.emplace_back();
      return Status::OK();
    }
    queue_.push_back(EncodeFlightData(m, keep_alive_));
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }  // Flight ends with the call

  void OnWriteDone(bool ok) override {
    GrpcTakeBack(this);
    if (!ok) {
      End(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    Pump();
  }
  void OnDone() override {
    GrpcTakeBack(this);
    if (active_id_ != 0) state_->active_reads.Remove(active_id_);
    if (counted_) state_->do_gets_active.fetch_sub(1, std::memory_order_relaxed);
    state_->CallDone();
    delete this;
  }

 private:
  Status Open(const grpc::ByteBuffer& request, grpc::CallbackServerContext* context) {
    pb::Ticket ticket;
    grpc::ByteBuffer copy(request);
    if (!grpc::SerializationTraits<pb::Ticket>::Deserialize(&copy, &ticket).ok()) {
      return Status::Invalid("the DoGet request is not a Ticket message");
    }
    ipc::WriteOptions write;
    FERRY_ASSIGN_OR_RAISE(write.compression, CallCompression(state_->sessions, context));
    FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Partition> flight, state_->Redeem(ticket.ticket()));
    active_id_ = state_->active_reads.Add(ticket.ticket(), context);
    readers_ = flight->readers;
    // Every lent slice holds the dataset (and so the batches' memory) until gRPC drops it.
    keep_alive_ = flight->dataset;
    FERRY_ASSIGN_OR_RAISE(reader_, flight->dataset->Open());
    FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter w,
                          ipc::StreamWriter::Open(this, reader_->schema(), write));
    writer_.emplace(std::move(w));
    return Status::OK();
  }

  // The stream stops counting as a reader, and as a read CancelFlightInfo can end, before its
  // status goes out: a client that saw the end and then drops or cancels the flight must not find
  // it busy (OnDone runs later, on gRPC's time).
  void End(const grpc::Status& status) {
    if (active_id_ != 0) state_->active_reads.Remove(active_id_);
    active_id_ = 0;
    readers_.reset();
    timer_.Finish(status.error_code());
    GrpcHandOff(this);
    Finish(status);
  }

  // Write rows [offset, offset + length) of `batch`. A batch (or slice) whose body would pass
  // the options' max_message_body is not sent: its slices are queued in `pending_` instead, each
  // written when the one before has gone, so that at most one slice's copies (compression, rebased
  // offsets) exist at a time.
  Status WriteBatch(const ArrowDeviceArray* batch, int64_t offset, int64_t length) {
    oversize_at_ = -1;
    std::optional<BatchSlice> slice;
    const ArrowDeviceArray* what = batch;
    if (offset != 0 || length != batch->array.length) {
      slice.emplace(*batch, offset, length);
      what = slice->get();
    }
    // A batch the flight keeps in memory outlives the writer: a dictionary the flight's batches
    // share is then read once (a slice is the writer's only while it is written).
    FERRY_RETURN_NOT_OK(what == batch && reader_->keeps_batches()
                            ? writer_->WriteKeptBatch(what)
                            : writer_->WriteDeviceBatch(what));
    if (oversize_at_ < 0) return Status::OK();
    if (oversize_at_ != static_cast<int64_t>(queue_.size()) - 1) {
      return Status::Invalid("a dictionary of " + std::to_string(oversize_bytes_) +
                             " bytes is over gRPC's message limit and cannot be split");
    }
    queue_.pop_back();
    if (length < 128) {
      return Status::Invalid(std::to_string(length) + " rows take " +
                             std::to_string(oversize_bytes_) +
                             " bytes, over gRPC's message limit even when split");
    }
    const auto ranges = SliceRanges(length, oversize_bytes_ / state_->options.max_message_body + 1);
    for (auto r = ranges.rbegin(); r != ranges.rend(); ++r) {
      pending_.emplace_front(offset + r->first, r->second);
    }
    return Status::OK();
  }

  // Write the next message, encoding the next batch (or slice) when none is waiting.
  void Pump() {
    while (queue_.empty()) {
      if (ended_) {
        End(grpc::Status::OK);
        return;
      }
      if (!pending_.empty()) {
        const auto [offset, length] = pending_.front();
        pending_.pop_front();
        const Status st = WriteBatch(batch_, offset, length);
        if (!st.ok()) {
          End(ToGrpc(st.WithContext("splitting a batch")));
          return;
        }
        continue;
      }
      Result<const ArrowDeviceArray*> batch = reader_->Next();
      Status st = batch.status();
      if (st.ok() && *batch == nullptr) {
        ended_ = true;
        st = writer_->Close();
      } else if (st.ok()) {
        state_->batches_sent.fetch_add(1, std::memory_order_relaxed);
        batch_ = *batch;
        st = WriteBatch(batch_, 0, batch_->array.length);
      }
      if (!st.ok()) {
        End(ToGrpc(st.WithContext("reading the flight")));
        return;
      }
    }
    current_.Swap(&queue_.front());
    queue_.pop_front();
    state_->bytes_sent += static_cast<int64_t>(current_.Length());
    GrpcHandOff(this);
    StartWrite(&current_);
  }

  ServerState* state_;
  RpcTimer timer_;
  std::shared_ptr<const int> readers_;
  std::shared_ptr<const void> keep_alive_;
  std::unique_ptr<dipc::DatasetReader> reader_;
  std::optional<ipc::StreamWriter> writer_;
  std::deque<grpc::ByteBuffer> queue_;
  // The reader's current batch and its slices still to write (offset, length).
  const ArrowDeviceArray* batch_ = nullptr;
  std::deque<std::pair<int64_t, int64_t>> pending_;
  int64_t oversize_at_ = -1;  // the placeholder's index in queue_, -1: none
  int64_t oversize_bytes_ = 0;
  grpc::ByteBuffer current_;
  bool ended_ = false;
  bool counted_ = false;    // in do_gets_active
  uint64_t active_id_ = 0;  // in state_->active_reads (0: not)
};

// Receives an upload: the first FlightData names the flight (a path descriptor) and carries the
// schema; batches are decoded as they come, their bodies referencing gRPC's buffers. At the end
// the flight is stored and served on every plane; any failure before stores nothing.
class DoPutReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  DoPutReactor(ServerState* state, grpc::CallbackServerContext* context)
      : state_(state),
        timer_(state->rpc_metrics.get(), RpcMetricsTable::kDoPut),
        peer_(context->peer()) {
    state_->CallStarted();
    grpc::Status admitted = Authenticate(state_, context);
    if (admitted.ok()) admitted = RefuseIfDraining(state_, "DoPut", context);
    if (!admitted.ok()) {
      timer_.Finish(admitted.error_code());
      GrpcHandOff(this);
      Finish(admitted);
      return;
    }
    (void)StartCall(state_, context, "DoPut");
    GrpcHandOff(this);
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    GrpcTakeBack(this);
    if (!ok) {
      Complete();
      return;
    }
    const Status st = Take();
    in_.Clear();
    if (!st.ok()) {
      Fail(st);
      return;
    }
    GrpcHandOff(this);
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override {
    GrpcTakeBack(this);
    if (!ok) {
      // The client cancelled rather than closing its side (its source failed, or it died): the
      // upload may be cut short, so nothing is stored.
      Fail(Status::Cancelled("the client cancelled the upload of \"" + name_ + "\""));
      return;
    }
    Store();
  }
  void OnDone() override {
    GrpcTakeBack(this);
    state_->CallDone();
    delete this;
  }

 private:
  Status Take() {
    received_ += static_cast<int64_t>(in_.Length());
    state_->bytes_received += static_cast<int64_t>(in_.Length());
    const int64_t limit = state_->options.max_upload_bytes;
    if (received_ > limit) {
      return Status::ResourceExhausted(
          "the upload passed the server's limit of " + std::to_string(limit) +
          " bytes (--max-upload-bytes) after " + std::to_string(received_) + " bytes");
    }
    FERRY_ASSIGN_OR_RAISE(FlightDataView data, DecodeFlightData(in_));
    ++messages_;
    if (name_.empty()) {
      if (!data.has_descriptor) {
        return Status::Invalid("the upload's first FlightData has no flight descriptor");
      }
      pb::FlightDescriptor descriptor;
      if (!descriptor.ParseFromString(data.descriptor)) {
        return Status::Invalid("the upload's flight descriptor is not a FlightDescriptor");
      }
      FERRY_ASSIGN_OR_RAISE(name_, NameOf(descriptor));
      if (state_->catalogue.Taken(name_)) {
        return Status::AlreadyExists("a flight named \"" + name_ +
                                     "\" is already served (drop it first)");
      }
    }
    if (data.header.empty()) return Status::OK();  // app_metadata alone
    const ByteSpan header{data.header.data(), static_cast<int64_t>(data.header.size())};
    FERRY_RETURN_NOT_OK(
        decoder_.ConsumeMessage(header, data.body)
            .WithContext("FlightData " + std::to_string(messages_) + " of the upload"));
    while (std::optional<ipc::DecodedMessage> m = decoder_.Next()) {
      if (m->kind != ipc::MessageKind::kRecordBatch) continue;
      UniqueDeviceArray d;
      m->batch.move_to(&d->array);
      d->device_type = ARROW_DEVICE_CPU;
      d->device_id = -1;
      batches_.push_back(std::move(d));
    }
    return Status::OK();
  }

  void Complete() {
    if (name_.empty()) {
      Fail(Status::Invalid("the upload ended before its first FlightData"));
      return;
    }
    if (decoder_.schema() == nullptr) {
      Fail(Status::Invalid("the upload of \"" + name_ + "\" carried no schema"));
      return;
    }
    Result<UniqueSchema> schema = decoder_.ExportSchema();
    if (!schema.ok()) {
      Fail(schema.status());
      return;
    }
    std::vector<std::vector<UniqueDeviceArray>> partitions;
    partitions.push_back(std::move(batches_));
    Result<std::shared_ptr<Flight>> flight =
        MakeFlight(name_, schema->get(), std::move(partitions));
    if (!flight.ok()) {
      Fail(flight.status());
      return;
    }
    flight_ = std::move(*flight);
    // One PutResult (empty metadata) first: a read that ends because the client cancelled
    // (rather than closed its side) cannot be written to, and then nothing is stored
    // (OnWriteDone). The call's status says whether the flight was stored.
    grpc::Slice empty;
    out_ = grpc::ByteBuffer(&empty, 1);
    GrpcHandOff(this);
    StartWrite(&out_);
  }

  void Store() {
    const Status st = state_->Add(flight_);
    flight_.reset();
    if (!st.ok()) {
      Fail(st);
      return;
    }
    ++state_->do_puts;
    state_->Log("upload_stored",
                "stored \"" + name_ + "\" uploaded by " + peer_ + " (" + std::to_string(received_) +
                    " bytes)",
                peer_);
    timer_.Finish(grpc::StatusCode::OK);
    GrpcHandOff(this);
    Finish(grpc::Status::OK);
  }

  void Fail(const Status& st) {
    ++state_->uploads_failed;
    batches_.clear();
    flight_.reset();
    state_->Log("upload_refused", "refused an upload from " + peer_ + ": " + st.message(), peer_);
    const grpc::Status status = ToGrpc(st.WithContext("nothing was stored"));
    timer_.Finish(status.error_code());
    GrpcHandOff(this);
    Finish(status);
  }

  ServerState* state_;
  RpcTimer timer_;
  std::string peer_;
  grpc::ByteBuffer in_;
  grpc::ByteBuffer out_;
  std::string name_;
  int64_t received_ = 0;
  int64_t messages_ = 0;
  ipc::Decoder decoder_;
  std::vector<UniqueDeviceArray> batches_;
  std::shared_ptr<Flight> flight_;  // decoded whole, stored once the client is known to be there
};

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* MakeDoGet(ServerState* state,
                                                      grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request) {
  return new DoGetReactor(state, context, request);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* MakeDoPut(
    ServerState* state, grpc::CallbackServerContext* context) {
  return new DoPutReactor(state, context);
}

}  // namespace ferry::flight::internal
