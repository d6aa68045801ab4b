// The dissociated-IPC client's session (client_session.hpp): the handshake, metadata in
// sequence order, bodies packed or fetched, and the free_data owed for what was lent.
#include "dipc/client_session.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "dipc/fault.hpp"
#include "ferry/core/status_code.hpp"
#include "ferry/device/device_array.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/format/schema.hpp"

namespace ferry::dipc::internal {

using transport::FetchedBody;
using transport::TaggedMessage;

namespace {

// How long a session being closed waits for the gets of a batch it fetched ahead.
constexpr auto kReturnAheadWait = std::chrono::seconds(1);

// How long a client that finds nothing queued looks again before it sends its pending frees and
// sleeps. A server streaming small batches has the next one on its way: sending the frees then
// woke the server for each batch (a send that woke it cost the client 32 us on the benchmarks'
// VM). A server waiting for room waits this much longer for them. Real time, not the session's
// clock: it is no timeout, and each look is one that does not wait.
constexpr auto kLookBeforeFlush = std::chrono::microseconds(20);

// `receive(wait)` with no wait, again until it gives a message, fails otherwise than by finding
// nothing, or kLookBeforeFlush has passed.
template <typename F>
auto LookBriefly(F receive) {
  auto r = receive(std::chrono::milliseconds(0));
  const auto looking = [&r] {
    return !r.ok() && r.status().code() == StatusCode::kDeadlineExceeded;
  };
  // The clock is read only once the first look found nothing: a stream ahead of its reader
  // (a kept dataset) has the message there, and two clock reads a batch cost such a read 4%.
  if (!looking()) return r;
  const auto until = std::chrono::steady_clock::now() + kLookBeforeFlush;
  while (looking() && std::chrono::steady_clock::now() < until) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    r = receive(std::chrono::milliseconds(0));
  }
  return r;
}

}  // namespace

ClientSession::~ClientSession() {
  if (ahead_ && !broken_) ReturnAhead();
  if (broken_) {
    // The server stopped answering or went away: nothing more will reach it, so waiting for a
    // graceful close would only hold the caller.
    data_->Abort();
    conn_->Abort();
  }
  freer_->Finish();
  if (data_ != conn_) conn_->Close();
}

Status ClientSession::Handshake(const std::string& ticket, uint64_t want_data,
                                uint64_t data_want_data) {
  const ByteSpan piece{ticket.data(), static_cast<int64_t>(ticket.size())};
  if (options_.window >= 0) {
    if (!conn_->extensions() || !data_->extensions()) {
      return Status::NotSupported(
          "ClientOptions::window paces a ferry server with its credit extension, which this "
          "connection lacks (a ucx:// URI needs ferry=1)");
    }
    // Before want_data: the server learns that it is paced before it sends anything. On a kept
    // connection it knows already, and takes the credits before want_data as the last
    // stream's: the window goes after it.
    if (!reused_) {
      FERRY_RETURN_NOT_OK(Grant(static_cast<uint64_t>(options_.window), "connecting (window)"));
    }
    paced_ = true;
    // A credit message per batch costs the server a receive per batch. What is owed stays
    // under the step, and the step is at most the window (or 1 with a window of 0, paid at
    // once), so the server always holds a credit for the batch a read waits for.
    credit_step_ = std::max<uint64_t>(1, static_cast<uint64_t>(options_.window) / 4);
  }
  if (data_ != conn_) {
    FERRY_RETURN_NOT_OK(Check(data_->SendTagged(data_want_data, {&piece, 1}),
                              "connecting (want_data to the data server)"));
  }
  FERRY_RETURN_NOT_OK(Check(conn_->SendTagged(want_data, {&piece, 1}), "connecting (want_data)"));
  if (reused_ && paced_) {
    FERRY_RETURN_NOT_OK(Grant(static_cast<uint64_t>(options_.window), "connecting (window)"));
  }
  FaultPoint("client", "want_data");
  FERRY_ASSIGN_OR_RAISE(const Arrived arrived, NextMetadata());
  const MetadataMessage& m = arrived.message;
  if (m.type != MetadataType::kIpcMessage) {
    return Status::Invalid("the stream ended before its schema (message 0)");
  }
  FERRY_RETURN_NOT_OK(decoder_.ConsumeMessage(m.flatbuffer, {}));
  std::optional<ipc::DecodedMessage> first = decoder_.Next();
  if (!first || first->kind != ipc::MessageKind::kSchema) {
    return Status::Invalid("message 0 is not a schema");
  }
  FERRY_ASSIGN_OR_RAISE(schema_, decoder_.ExportSchema());
  started_ = true;
  return Status::OK();
}

Status ClientSession::Grant(uint64_t count, const char* doing) {
  const std::array<uint8_t, 8> body = EncodeCredit(count);
  const ByteSpan piece{body.data(), static_cast<int64_t>(body.size())};
  if (data_ != conn_) FERRY_RETURN_NOT_OK(Check(data_->SendTagged(kCreditTag, {&piece, 1}), doing));
  return Check(conn_->SendTagged(kCreditTag, {&piece, 1}), doing);
}

Status ClientSession::PayOwed(const char* doing) {
  if (owed_ == 0) return Status::OK();
  const uint64_t count = owed_;
  owed_ = 0;
  return Grant(count, doing);
}

Status ClientSession::Next(ArrowDeviceArray* out) {
  std::memset(out, 0, sizeof(*out));
  // One credit for the batch asked for now (sent with the next credit_step_ - 1, or before
  // this read waits); the end of the stream comes against it too.
  if (paced_ && !finished_ && ++owed_ >= credit_step_) {
    FERRY_RETURN_NOT_OK(PayOwed("asking for a batch (credit)"));
  }
  while (!finished_) {
    if (std::optional<ipc::DecodedMessage> d = decoder_.Next()) {
      if (d->kind == ipc::MessageKind::kRecordBatch) return Deliver(std::move(d->batch), out);
      continue;  // a dictionary: kept by the decoder for the batches after it
    }
    FERRY_ASSIGN_OR_RAISE(const Arrived arrived, NextMetadata());
    const MetadataMessage& m = arrived.message;
    FaultPoint("client", "metadata");
    if (m.type == MetadataType::kEndOfStream) {
      finished_ = true;
      if (metadata_.held() > 0) {
        return Status::Invalid(std::to_string(metadata_.held()) +
                               " metadata message(s) arrived after the end of stream (" +
                               std::to_string(m.sequence) + ")");
      }
      // Nothing more to wait for: free what is pending and close when nothing is borrowed,
      // or keep a connection that lent nothing for the next stream.
      FaultPoint("client", "free");
      if (pool_ && !lent_ && data_ == conn_ && conn_->reusable() && !ahead_ && !lookahead_ &&
          conn_->SendTagged(kStreamDoneTag, {}).ok()) {
        freer_->Keep();
        pool_->Give(pool_key_, conn_);
        break;
      }
      freer_->Finish();
      if (data_ != conn_) conn_->Close();
      break;
    }
    FERRY_RETURN_NOT_OK(ReadBody(m));
  }
  return Status::OK();
}

Result<ClientSession::Arrived> ClientSession::NextMetadata() {
  if (lookahead_) {
    Result<Arrived> r = std::move(*lookahead_);
    lookahead_.reset();
    return r;
  }
  while (true) {
    if (std::optional<Arrived> m = metadata_.Pop()) {
      held_bytes_ -= m->bytes.size;
      return std::move(*m);
    }
    Result<SharedBytes> r =
        LookBriefly([&](std::chrono::milliseconds wait) { return ReceiveMetadata(wait); });
    if (!r.ok() && r.status().code() == StatusCode::kDeadlineExceeded) {
      // The server may be waiting for our frees, never for our credits: what we owe is always
      // under the window, so the server holds a credit for the batch we wait for. Sending them
      // anyway woke its worker at every wait: two thirds of a live UCX server's context switches.
      const Freer::Wait wait(*freer_);
      r = ReceiveMetadata(SilenceAllowed());
    }
    if (!r.ok()) {
      return Check(r.status(), "metadata (message " + std::to_string(metadata_.next()) + ")");
    }
    FERRY_RETURN_NOT_OK(Hold(std::move(*r)));
  }
}

Result<SharedBytes> ClientSession::ReceiveMetadata(std::chrono::milliseconds wait) {
  // A transport that posts a body's receive (Expect) takes it best by a receive of its own.
  if (data_ != conn_ || ahead_ || data_->posts_receives()) return conn_->Receive(wait);
  const uint32_t turn = metadata_.next();
  FERRY_ASSIGN_OR_RAISE(transport::MessageAndBody got,
                        conn_->ReceiveMessageAndBody(turn, kSequenceMask, wait));
  if (got.body) ahead_.emplace(Ahead{turn, std::move(*got.body), nullptr});
  return std::move(got.message);
}

Status ClientSession::Hold(SharedBytes bytes) {
  FERRY_ASSIGN_OR_RAISE(MetadataMessage m, Parse(bytes));
  if (finished_) {
    return Status::Invalid("metadata message " + std::to_string(m.sequence) +
                           " arrived after the end of stream");
  }
  const int64_t size = bytes.size;
  if (m.sequence != metadata_.next() && held_bytes_ + size > options_.reorder_bytes) {
    return Status::Invalid("metadata message " + std::to_string(m.sequence) + " would hold " +
                           std::to_string(held_bytes_ + size) +
                           " bytes ahead of their turn, over the limit of " +
                           std::to_string(options_.reorder_bytes));
  }
  FERRY_RETURN_NOT_OK(metadata_.Put(m.sequence, Arrived{std::move(bytes), m}));
  held_bytes_ += size;
  return Status::OK();
}

Result<TaggedMessage> ClientSession::ReceiveBody(uint32_t sequence, const ipc::MessageInfo& info) {
  // A packed body's size is the metadata's bodyLength: let the transport post its receive now.
  // (A server sending buffer lists uses another tag; that receive is then dropped.)
  if (data_->posts_receives()) {
    data_->Expect(MakeBodyTag(BodyType::kPacked, sequence), info.body_length);
  }
  const auto receive = [&](std::chrono::milliseconds wait) {
    return data_->ReceiveTagged(sequence, kSequenceMask, wait);
  };
  Result<TaggedMessage> r = LookBriefly(receive);
  if (r.ok() || r.status().code() != StatusCode::kDeadlineExceeded) return r;
  const Freer::Wait wait(*freer_);  // the server may be waiting for our frees
  return receive(options_.timeout);
}

Status ClientSession::ReadBody(const MetadataMessage& m) {
  // The decoder copies the metadata to 8-aligned room of its own (the protocol's 5-byte header
  // leaves it unaligned) and verifies it once; `flatbuffer` is that copy, which the decoder
  // then decodes as it is. Valid until the decoder's next call.
  FERRY_ASSIGN_OR_RAISE(const ipc::InspectedMessage inspected, decoder_.Inspect(m.flatbuffer));
  const ByteSpan flatbuffer = inspected.metadata;
  const ipc::MessageInfo& info = inspected.info;
  if (info.kind == ipc::MessageKind::kSchema) {
    return Status::Invalid("metadata message " + std::to_string(m.sequence) +
                           " is a schema; the protocol allows one only at sequence 0");
  }
  if (info.body_length > options_.max_body_bytes) {
    return Status::Invalid("metadata message " + std::to_string(m.sequence) + " announces a " +
                           std::to_string(info.body_length) + "-byte body, over the limit of " +
                           std::to_string(options_.max_body_bytes) + " bytes");
  }
  std::optional<Ahead> ahead;  // a body taken ahead for another message stays for its turn
  if (ahead_ && ahead_->sequence == m.sequence) {
    ahead = std::move(ahead_);
    ahead_.reset();
  }
  Result<TaggedMessage> r =
      ahead ? Result<TaggedMessage>(std::move(ahead->body)) : ReceiveBody(m.sequence, info);
  if (!r.ok()) return Check(r.status(), "body (message " + std::to_string(m.sequence) + ")");
  FaultPoint("client", "body");
  FERRY_ASSIGN_OR_RAISE(BodyTag tag, ParseBodyTag(r->tag));
  if (tag.type == BodyType::kPacked && cuda_) {
    return Status::Invalid("message " + std::to_string(m.sequence) +
                           " has a packed body, but the URI says bodies are in the server's "
                           "CUDA memory (type 1)");
  }
  if (tag.type == BodyType::kPacked) {
    Count(r->payload.size);
    return decoder_.ConsumeMessage(flatbuffer, r->payload);
  }
  lent_ = true;

  FERRY_RETURN_NOT_OK(ParseBufferList(r->payload, &list_));
  const BufferList& list = list_;
  if (cuda_) return ConsumeOnDevice(flatbuffer, list);
  std::vector<bool> needed;
  std::vector<BufferRef> picked;
  const std::span<const BufferRef> wanted = Wanted(flatbuffer, list, &needed, &picked);
  Status got;
  if (ahead && ahead->fetch) {
    Result<FetchedBody> waited = ahead->fetch->Wait(options_.timeout);
    got = waited.status();
    if (waited.ok()) fetched_ = std::move(*waited);
  } else {
    got = data_->Fetch(wanted, options_.timeout, &fetched_);
  }
  if (!got.ok()) return Check(got, "fetch (message " + std::to_string(m.sequence) + ")");
  FetchedBody* fetched = &fetched_;
  // While this batch is decoded and validated, the next one's buffers travel.
  FetchAhead();
  std::vector<ipc::BufferLocation>& at = locations_;
  at.resize(list.buffers.size());  // its room is reused: no allocation, no push's check per buffer
  size_t next = 0;
  size_t placed = 0;
  int64_t bytes_fetched = 0;
  for (; placed < list.buffers.size(); ++placed) {
    if (!needed.empty() && !needed[placed]) {
      at[placed] = {-1, -1};  // a column left out: the decoder never looks here
      continue;
    }
    if (next >= fetched->buffers.size()) break;  // the decoder names the count mismatch
    const BufferRef& b = fetched->buffers[next++];
    at[placed] = {static_cast<int64_t>(b.address), static_cast<int64_t>(b.length)};
    bytes_fetched += static_cast<int64_t>(b.length);
  }
  at.resize(placed);
  Count(bytes_fetched);
  SharedBytes bytes = std::move(fetched->bytes);
  fetched->bytes = {};
  DistinctAddresses addresses(list.buffers);
  if (fetched->borrowed && !addresses.empty()) {
    // Returned when the last array over it is released (or now, if decoding fails).
    freer_->Borrow();
    bytes.owner = MakeBorrowedBody(std::move(bytes.owner), freer_, std::move(addresses));
  } else if (!addresses.empty()) {
    freer_->Free(addresses.view());  // a local copy: the server's memory is done
  }
  return decoder_.ConsumeMessageBuffers(flatbuffer, bytes, at);
}

void ClientSession::FetchAhead() {
  // With default validation a batch is decoded in microseconds: there is nothing to hide
  // behind, and a second batch's buffer in flight made transfers slower and less even here.
  if (options_.read.validation != ValidationLevel::kFull) return;
  if (!data_->fetches_in_background() || ahead_ || lookahead_ || finished_) return;
  std::optional<Arrived> next = metadata_.Pop();
  if (!next) {
    Result<SharedBytes> r = conn_->Receive(std::chrono::milliseconds(0));
    if (!r.ok()) return;  // nothing taken: the ordinary path sees it again
    // Held as NextMetadata would (an early one waits in the window); an error is handed out
    // in its place.
    if (Status held = Hold(std::move(*r)); !held.ok()) {
      lookahead_ = held;
      return;
    }
    next = metadata_.Pop();
    if (!next) return;  // early: not the next one's turn
  }
  held_bytes_ -= next->bytes.size;
  // From here on the message is taken: NextMetadata hands it out next.
  lookahead_ = std::move(*next);
  const MetadataMessage* m = &(*lookahead_)->message;
  if (m->type != MetadataType::kIpcMessage) return;
  Result<ipc::MessageInfo> info = ipc::InspectMessage(m->flatbuffer);
  if (!info.ok() || info->kind == ipc::MessageKind::kSchema ||
      info->body_length > options_.max_body_bytes) {
    return;
  }
  Result<TaggedMessage> body =
      data_->ReceiveTagged(m->sequence, kSequenceMask, std::chrono::milliseconds(0));
  if (!body.ok()) return;
  Ahead ahead;
  ahead.sequence = m->sequence;
  Result<BodyTag> tag = ParseBodyTag(body->tag);
  if (tag.ok() && tag->type == BodyType::kBufferList) {
    Result<BufferList> list = ParseBufferList(body->payload);
    if (list.ok()) {
      std::vector<bool> needed;
      std::vector<BufferRef> picked;
      const std::span<const BufferRef> wanted = Wanted(m->flatbuffer, *list, &needed, &picked);
      Result<std::unique_ptr<transport::FetchInFlight>> fetch =
          data_->StartFetch(wanted, options_.timeout);
      if (fetch.ok()) ahead.fetch = std::move(*fetch);
    }
  }
  ahead.body = std::move(*body);
  ahead_.emplace(std::move(ahead));
}

void ClientSession::ReturnAhead() {
  Ahead ahead = std::move(*ahead_);
  ahead_.reset();
  Result<BodyTag> tag = ParseBodyTag(ahead.body.tag);
  if (!tag.ok() || tag->type != BodyType::kBufferList) return;
  Result<BufferList> list = ParseBufferList(ahead.body.payload);
  if (!list.ok()) return;
  if (ahead.fetch && !ahead.fetch->Wait(kReturnAheadWait).ok()) return;
  const DistinctAddresses addresses(list->buffers);
  if (!addresses.empty()) freer_->Free(addresses.view());
}

std::span<const BufferRef> ClientSession::Wanted(ByteSpan fb, const BufferList& list,
                                                 std::vector<bool>* needed,
                                                 std::vector<BufferRef>* picked) const {
  needed->clear();
  if (options_.read.columns.empty()) return list.buffers;
  Result<std::vector<bool>> n = decoder_.BuffersNeeded(fb);
  if (!n.ok() || n->size() != list.buffers.size()) return list.buffers;
  *needed = std::move(*n);
  for (size_t i = 0; i < list.buffers.size(); ++i) {
    if ((*needed)[i]) picked->push_back(list.buffers[i]);
  }
  return *picked;
}

void ClientSession::Count(int64_t bytes) const {
  if (options_.bytes_read) options_.bytes_read->fetch_add(bytes, std::memory_order_relaxed);
}

Status ClientSession::ConsumeOnDevice(ByteSpan fb, const BufferList& list) {
  std::vector<ipc::BufferLocation> at;
  at.reserve(list.buffers.size());
  for (const BufferRef& b : list.buffers) {
    // An address past INT64_MAX becomes negative, which the decoder refuses, naming it.
    at.push_back({static_cast<int64_t>(b.address), static_cast<int64_t>(b.length)});
  }
  SharedBytes bytes{cuda_->data(), cuda_->size(), cuda_};
  DistinctAddresses addresses(list.buffers);
  if (!addresses.empty()) {
    freer_->Borrow();
    bytes.owner = MakeBorrowedBody(cuda_, freer_, std::move(addresses));
  }
  return decoder_.ConsumeMessageBuffers(fb, bytes, at);
}

Status ClientSession::Deliver(UniqueArray batch, ArrowDeviceArray* out) {
  if (cuda_) {
    // Already on the device, complete (the server waited for its copies before sending the
    // pairs): no copy and no event.
    return DeviceArrayInit(*cuda_->device(), out, batch.get(), nullptr);
  }
  UniqueDeviceArray host;
  batch.move_to(&host->array);
  host->device_id = -1;
  host->device_type = ARROW_DEVICE_CPU;
  Device* target = options_.device;
  if (target == nullptr || target == CpuDevice()) {
    host.move_to(out);
    return Status::OK();
  }
  FERRY_ASSIGN_OR_RAISE(DeviceArrayView view, DeviceArrayView::Make(schema_.get()));
  FERRY_RETURN_NOT_OK(view.SetArray(host.get()));
  FERRY_ASSIGN_OR_RAISE(UniqueDeviceArray copy, view.Copy(*target));
  copy.move_to(out);
  return Status::OK();
}

}  // namespace ferry::dipc::internal
