// One client's session on the dissociated-IPC server.
#include "dipc/session.hpp"

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dipc/fault.hpp"
#include "ferry/core/status_code.hpp"
#include "ferry/dipc/protocol.hpp"
#include "ferry/ipc/decoder.hpp"

namespace ferry::dipc::internal {

namespace {

// Deeper than any batch the IPC writer accepts: such a batch is copied, not lent in place.
constexpr int kMaxNesting = 64;

// Whether any buffer of `a`, its children or its dictionary lies in the `size` bytes at `base`:
// the mark of a batch its producer wrote in the shared region (Server::region_allocator).
bool AnyBufferIn(const ArrowArray& a, uintptr_t base, uintptr_t size, int depth) {
  if (depth > kMaxNesting) return false;
  if (a.buffers != nullptr) {
    for (int64_t i = 0; i < a.n_buffers; ++i) {
      if (reinterpret_cast<uintptr_t>(a.buffers[i]) - base < size) return true;
    }
  }
  if (a.children != nullptr) {
    for (int64_t i = 0; i < a.n_children; ++i) {
      if (a.children[i] != nullptr && AnyBufferIn(*a.children[i], base, size, depth + 1)) {
        return true;
      }
    }
  }
  return a.dictionary != nullptr && AnyBufferIn(*a.dictionary, base, size, depth + 1);
}

using transport::TaggedMessage;

// How long a refused client has to read the server's error (ferry's extension) and hang up.
constexpr auto kRefusalWait = std::chrono::seconds(1);

// Whether every batch of `kept` has its packed body in host memory.
bool HasPackedBodies(const Kept& kept) {
  if (kept.region == nullptr) return false;
  return std::all_of(kept.messages.begin(), kept.messages.end(),
                     [](const KeptMessage& m) { return !m.has_body || m.body_offset >= 0; });
}

}  // namespace

void ServerState::RecordError(LogRecord record, StatusCode code) {
  ++sessions_failed;
  errors[static_cast<size_t>(code) % errors.size()].fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(error_mutex);
    last_error = record.message;
  }
  record.level = LogLevel::kWarning;
  Log(std::move(record));
}

void ServerState::Log(LogRecord record) const {
  if (!options.log_sink && !options.log) return;
  if (record.plane.empty()) record.plane = options.transport;
  EmitLog(options.log_sink, options.log, record);
}

void ServerState::Log(const char* event, const std::string& message) const {
  LogRecord r;
  r.event = event;
  r.message = message;
  Log(std::move(r));
}

LogRecord Session::Record(LogLevel level, const char* event, std::string message) const {
  LogRecord r;
  r.level = level;
  r.event = event;
  r.message = std::move(message);
  r.session = id_;
  if (conn_) r.peer = conn_->peer();
  std::lock_guard lock(ticket_mutex_);  // a kept connection's next request sets trace_ anew
  r.trace_id = trace_.trace_id;
  r.span_id = trace_.span_id;
  return r;
}

void Session::FindTrace(const std::string& ticket) {
  TraceContext parent;
  if (const std::string sent = conn_->trace(); !sent.empty()) {
    // ferry's hello field: the traceparent, then a newline and the tracestate when there is one.
    const size_t nl = sent.find('\n');
    const std::string_view text(sent);
    Result<TraceContext> parsed =
        ParseTraceparent(text.substr(0, nl), nl == std::string::npos ? "" : text.substr(nl + 1));
    if (parsed.ok()) {
      parent = std::move(*parsed);
    } else {
      state_->Log(Record(LogLevel::kWarning, "bad_traceparent",
                         "ignoring the client's trace: " + parsed.status().message()));
    }
  }
  if (!parent.valid()) parent = state_->options.tickets->Trace(ticket);
  std::lock_guard lock(ticket_mutex_);
  trace_ = parent.Child();
}

Session::~Session() {
  Kill();
  if (serve_.joinable()) serve_.join();
  if (frees_.joinable()) frees_.join();
}

void Session::Start() {
  serve_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "ferry-session");  // for top, perf and tests
    Serve();
  });
}

void Session::Kill(bool abort) {
  dead_.store(true);
  if (conn_ && abort) conn_->Abort();
  if (conn_) conn_->Close();
  if (state_->allocator) state_->allocator->Wake();
  FreeAll();
}

void Session::Serve() {
  SetActive(true);
  Status st = ServeRequest();
  After after = After::kNotReusable;
  for (;;) {
    if (st.ok()) {
      // The last body may still be on the wire (a gathered one over TCP lanes): a client that
      // never gets it was not served.
      phase_ = "body";
      st = conn_->Flush();
    }
    if (!st.ok() || end_ != End::kServed) break;
    transport::TaggedMessage next;
    after = AwaitNextRequest(&next);
    if (after != After::kNext) break;
    ++state_->requests_reused;
    next_seq_ = 0;  // AwaitNextRequest let the last stream's dataset go
    st = ServeWant(next);
  }
  if (end_ == End::kRefused || end_ == End::kGoneBeforeRequest) {
    // Refused (counted as such), or a client gone before it asked: not a failure.
    if (end_ == End::kGoneBeforeRequest) {
      state_->Log(Record(LogLevel::kInfo, "session_abandoned", st.message()));
    }
  } else if (!st.ok()) {
    // A client that is gone cannot read why.
    if (st.code() != StatusCode::kUnavailable) SendError(st);
    if (!state_->stopping.load()) Failed(st.message(), st.code());
  } else if (after == After::kIdle) {
    state_->Log(Record(LogLevel::kInfo, "session_idle",
                       "the client kept its connection " +
                           std::to_string(state_->options.timeout.count()) +
                           " ms without a request: closed"));
  } else if (after == After::kNotReusable) {
    if (const Status end = AwaitEnd(); !end.ok()) Failed(end.message(), end.code());
  }
  // A failed or unresponsive client gets no graceful close: nothing more reaches it.
  Kill(unresponsive_ || (!st.ok() && end_ != End::kRefused));
  if (!failed_.load() && st.ok() && !end_logged_) LogEnd();
  entry_ = Catalogue::Entry{};  // the client is done: the dataset may be removed now
  SetActive(false);
  done_.store(true);
}

Status Session::ServeRequest() {
  // The first tagged message is the request: its tag says which URI (memory and channel) the
  // client used, its body is the ticket.
  Result<TaggedMessage> want = conn_->ReceiveTagged(0, 0, state_->options.timeout);
  // A ferry client that paces the server sends its window first (never a protocol tag).
  while (want.ok() && want->tag == kCreditTag && conn_->extensions()) {
    paced_ = true;
    (void)AddCredit(*want);  // a bad one fails the session, which ends at its first batch
    want = conn_->ReceiveTagged(0, 0, state_->options.timeout);
  }
  if (!want.ok()) {
    if (want.status().code() == StatusCode::kDeadlineExceeded) {
      return Status::DeadlineExceeded("the client sent no want_data request for " +
                                      std::to_string(state_->options.timeout.count()) + " ms");
    }
    // Not a failure of the server's: counted as neither a refusal nor a failed session.
    end_ = End::kGoneBeforeRequest;
    return Status::Unavailable("the client went away before its request: " +
                               want.status().message());
  }
  const std::string ticket(reinterpret_cast<const char*>(want->payload.data),
                           static_cast<size_t>(want->payload.size));
  FindTrace(ticket);  // before the free_data thread, whose records carry it
  frees_ = std::thread([this] { TakeFrees(); });
  pthread_setname_np(frees_.native_handle(), "ferry-frees");
  return ServeWant(*want);
}

Status Session::ServeWant(const TaggedMessage& want) {
  ++requests_;
  const std::string ticket(reinterpret_cast<const char*>(want.payload.data),
                           static_cast<size_t>(want.payload.size));
  {
    std::lock_guard lock(ticket_mutex_);
    ticket_ = ticket;
  }
  if (requests_ > 1) FindTrace(ticket);
  Result<WantTag> tag = ParseWantTag(state_->options.want_data_tag, want.tag);
  if (!tag.ok()) return Refuse(tag.status());
  if (state_->draining.load()) {
    // Refused before its ticket is looked at: a draining server takes no new session, and the
    // client, told UNAVAILABLE, may go to another server.
    return Refuse(Status::Unavailable(
        "the server is draining: it finishes the sessions in progress and takes no new one"));
  }
  if (state_->clients_active.load() > state_->options.max_clients) {
    return Refuse(Status::FailedPrecondition("the server is serving its most clients (" +
                                             std::to_string(state_->options.max_clients) + ")"));
  }
  Result<Catalogue::Entry> entry = state_->catalogue->Find(ticket, tag->region);
  if (!entry.ok()) return Refuse(entry.status());
  entry_ = std::move(*entry);
  state_->Log(Record(LogLevel::kDebug, "session_start",
                     "client " + (conn_->peer().empty() ? std::string("?") : conn_->peer()) +
                         ": serving " + (tag->channel == Channel::kData ? "bodies" : "a stream")));
  send_metadata_ = tag->channel != Channel::kData;
  send_bodies_ = tag->channel != Channel::kMetadata;
  FaultPoint("server", "want_data", [this] { return dead_.load(); });
  phase_ = "metadata";
  // Bodies in device memory stay lent: the client opens them by CUDA IPC handle, not by gets.
  const bool on_device = entry_.kept && entry_.kept->region == nullptr;
  packed_ = state_->options.body_type == BodyType::kPacked ||
            (send_bodies_ && !on_device && conn_->prefers_packed_bodies());
  if (packed_ && state_->options.body_type != BodyType::kPacked) {
    state_->Log(Record(LogLevel::kInfo, "packed_bodies",
                       "client " + conn_->peer() +
                           ": sending packed bodies, since UCX would emulate its reads of lent "
                           "memory (over TCP, or on this host before UCX 1.16)"));
  }
  if (entry_.kept && (!packed_ || HasPackedBodies(*entry_.kept))) return Replay(*entry_.kept);
  // A lent file's, to be sent packed: read afresh, each body going from the file's pages.
  if (!entry_.dataset) return Status::NotSupported("this kept dataset has no packed bodies");
  FERRY_ASSIGN_OR_RAISE(std::unique_ptr<DatasetReader> reader, entry_.dataset->Open());
  if (send_bodies_ && state_->region && !packed_) {
    FERRY_RETURN_NOT_OK(conn_->ShareRegion(state_->region));
  }
  FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter writer,
                        ipc::StreamWriter::Open(&sink_, reader->schema(), state_->options.write));
  // Only once a producer has taken region memory can a batch lie there (no walk otherwise).
  const bool lend_in_place = send_bodies_ && state_->region && !packed_ &&
                             state_->region_memory_taken.load(std::memory_order_acquire);
  const auto region_base =
      lend_in_place ? reinterpret_cast<uintptr_t>(state_->region->data()) : uintptr_t{0};
  const auto region_size =
      lend_in_place ? static_cast<uintptr_t>(state_->region->size()) : uintptr_t{0};
  while (!dead_.load()) {
    // Paced: the next batch is read only once the client asked for it, so the dataset's own
    // source (an async producer's too) goes at the client's pace.
    FERRY_RETURN_NOT_OK(AwaitCredit());
    FERRY_ASSIGN_OR_RAISE(const ArrowDeviceArray* batch, reader->Next());
    if (batch == nullptr) break;
    // Counted before the send: a client that has read the batch must find it in the stats.
    if (send_bodies_) {
      ++state_->batches_sent;
      if (packed_) state_->packed_batches.fetch_add(1, std::memory_order_relaxed);
    }
    // A batch its producer wrote in the shared region is taken from the reader and held while
    // it is written, so that WriteMessage can lend it in place (LendInPlace).
    if (lend_in_place && batch->device_type == ARROW_DEVICE_CPU &&
        AnyBufferIn(batch->array, region_base, region_size, 0)) {
      UniqueDeviceArray taken = reader->TakeBatch();
      if (taken.valid()) {
        loan_ = std::allocate_shared<UniqueDeviceArray>(
            PoolAllocator<UniqueDeviceArray>(loan_blocks_), std::move(taken));
        batch = loan_->get();
      }
    }
    const Status written = loan_ == nullptr ? WriteReaderBatch(writer, *reader, batch)
                                            : writer.WriteDeviceBatch(batch);
    loan_.reset();  // the loans hold it now, if it was lent in place
    FERRY_RETURN_NOT_OK(written);
  }
  if (dead_.load()) return Status::Unavailable("the client went away");
  return writer.Close();
}

Status Session::Refuse(const Status& why) {
  ++state_->tickets_refused;
  state_->Log(Record(LogLevel::kInfo, "session_refused", "refused a client: " + why.message()));
  // The protocol's answer to a refused ticket is a closed connection. A client that asked for
  // ferry's extensions also gets the reason first, and a moment to read it and hang up.
  if (conn_->extensions()) {
    SendError(why);
    std::unique_lock lock(mutex_);
    state_->options.clock->WaitFor(changed_, lock, kRefusalWait, [&] { return client_closed_; });
  }
  conn_->Close();
  end_ = End::kRefused;
  return why;
}

Status Session::SendMetadata(ByteSpan flatbuffer, uint32_t seq) {
  phase_ = "metadata";
  uint8_t header[kMetadataHeaderSize];
  EncodeMetadataHeader(MetadataType::kIpcMessage, seq, header);
  const ByteSpan meta[] = {{header, kMetadataHeaderSize}, flatbuffer};
  FERRY_RETURN_NOT_OK(conn_->Send(meta));
  FaultPoint("server", "metadata", [this] { return dead_.load(); });
  return Status::OK();
}

Status Session::SendBody(uint32_t seq, BodyType type, std::span<const ByteSpan> body,
                         ByteSpan flatbuffer) {
  if (!send_bodies_) return SendMetadata(flatbuffer, seq);
  phase_ = "body";
  const uint64_t tag = MakeBodyTag(type, seq);
  if (!send_metadata_) {
    FERRY_RETURN_NOT_OK(conn_->SendTagged(tag, body));
  } else {
    uint8_t header[kMetadataHeaderSize];
    EncodeMetadataHeader(MetadataType::kIpcMessage, seq, header);
    const ByteSpan meta[] = {{header, kMetadataHeaderSize}, flatbuffer};
    FERRY_RETURN_NOT_OK(conn_->SendMessageAndBody(meta, tag, body));
    FaultPoint("server", "metadata", [this] { return dead_.load(); });
  }
  FaultPoint("server", "body", [this] { return dead_.load(); });
  return Status::OK();
}

// A served file's message whose buffers all lie where the file's own body has them: that body,
// one contiguous range of the file, is the packed body (its padding is the file's). Sent as one
// piece, a large body goes by rendezvous straight from the file's pages (UCX reads it with CMA,
// one copy), where an I/O vector of pieces goes through UCX's pipeline of two copies.
std::optional<ByteSpan> Session::BodyInFile(const ipc::EncodedMessage& m) const {
  const DatasetFile* file = entry_.dataset ? entry_.dataset->file() : nullptr;
  if (file == nullptr || !m.in_place || m.body_length <= 0 || m.body.size() <= 1) {
    return std::nullopt;
  }
  const uint8_t* base = nullptr;
  for (const ipc::BodyBuffer& b : m.buffers) {
    if (b.length == 0) continue;
    const auto* at = static_cast<const uint8_t*>(b.data);
    if (base == nullptr) {
      // Compared as integers: `at - offset` may point before the file, which the check below
      // refuses.
      const auto start = reinterpret_cast<uintptr_t>(at) - static_cast<uintptr_t>(b.offset);
      const auto first = reinterpret_cast<uintptr_t>(file->data);
      if (start < first || start - first > static_cast<uintptr_t>(file->size) ||
          static_cast<uintptr_t>(file->size) - (start - first) <
              static_cast<uintptr_t>(m.body_length)) {
        return std::nullopt;
      }
      base = file->data + (start - first);
    }
    if (at != base + b.offset) return std::nullopt;
  }
  if (base == nullptr) return std::nullopt;
  return ByteSpan{base, m.body_length};
}

Status Session::WriteMessage(const ipc::EncodedMessage& m) {
  const uint32_t seq = next_seq_++;
  if (!m.has_body) return send_metadata_ ? SendMetadata(m.metadata, seq) : Status::OK();
  if (send_bodies_) {
    state_->body_bytes += m.body_length;
    if (packed_) state_->packed_body_bytes.fetch_add(m.body_length, std::memory_order_relaxed);
  }
  if (packed_ || !send_bodies_) {
    if (const std::optional<ByteSpan> whole = BodyInFile(m); whole && send_bodies_) {
      ++state_->bodies_from_file;
      return SendBody(seq, BodyType::kPacked, {&*whole, 1}, m.metadata);
    }
    return SendBody(seq, BodyType::kPacked, m.body, m.metadata);
  }
  if (loan_ != nullptr) {
    FERRY_ASSIGN_OR_RAISE(const bool lent, LendInPlace(seq, m));
    if (lent) return Status::OK();
  }
  transport::Region& region = *state_->region;
  // One byte more than the body: a zero-length buffer at its very end still lies inside the
  // block, so no two bodies share an address.
  const int64_t block_size = m.body_length + 1;
  FERRY_ASSIGN_OR_RAISE(int64_t block,
                        state_->allocator->Allocate(block_size, state_->options.timeout,
                                                    [this] { return dead_ || client_gone_; }));
  std::vector<BufferRef>& pairs = pairs_;
  pairs.clear();
  for (const ipc::BodyBuffer& b : m.buffers) {
    if (b.length > 0) std::memcpy(region.data() + block + b.offset, b.data, b.length);
    pairs.push_back(
        BufferRef{region.WireAddress(block + b.offset), static_cast<uint64_t>(b.length)});
  }
  DistinctAddresses addresses(pairs);  // kept with the block until the client frees them
  if (addresses.empty()) {
    (void)state_->allocator->Free(block, block_size);  // nothing for the client to read or free
  } else {
    // Recorded before sending: the client may free them before the send returns.
    std::lock_guard lock(mutex_);
    state_->addresses_lent += static_cast<int64_t>(addresses.size());
    block_addresses_ += static_cast<int64_t>(addresses.size());
    LentBlock lent{block, block_size, std::move(addresses)};
    spare_blocks_.Insert(blocks_, region.WireAddress(block), std::move(lent));
  }
  EncodeBufferList(pairs, &list_);
  const ByteSpan piece(list_);
  return SendBody(seq, BodyType::kBufferList, {&piece, 1}, m.metadata);
}

Status Session::WriteEndOfStream() {
  phase_ = "free";
  if (!send_metadata_) return Status::OK();
  uint8_t header[kMetadataHeaderSize];
  EncodeMetadataHeader(MetadataType::kEndOfStream, next_seq_++, header);
  const ByteSpan piece{header, kMetadataHeaderSize};
  return conn_->Send({&piece, 1});
}

// Lend a kept dataset: its metadata, then pairs into its own memory. Nothing is copied; the
// client's free_data only returns the loan. With packed bodies, each goes whole from that memory
// (as ucx_perftest sends from a buffer made beforehand: no gathering per client).
Status Session::Replay(const Kept& kept) {
  const bool packed = packed_;
  // Bodies in device memory need no region: the client opens the URI's CUDA IPC handle.
  if (send_bodies_ && kept.region && !packed) {
    FERRY_RETURN_NOT_OK(conn_->ShareRegion(kept.region));
  }
  for (const KeptMessage& m : kept.messages) {
    if (dead_.load()) return Status::Unavailable("the client went away");
    const uint32_t seq = next_seq_++;
    if (!m.has_body) {
      if (send_metadata_) FERRY_RETURN_NOT_OK(SendMetadata(m.metadata, seq));
      continue;
    }
    if (paced_) {
      FERRY_ASSIGN_OR_RAISE(ipc::MessageInfo info, ipc::InspectMessage(ByteSpan(m.metadata)));
      if (info.kind == ipc::MessageKind::kRecordBatch) FERRY_RETURN_NOT_OK(AwaitCredit());
    }
    if (send_bodies_) {
      state_->body_bytes += m.body_length;
      if (packed) state_->packed_body_bytes.fetch_add(m.body_length, std::memory_order_relaxed);
    }
    if (packed) {
      if (m.body_offset < 0 || kept.region == nullptr) {
        return Status::NotSupported("this kept dataset has no packed body in host memory");
      }
      const ByteSpan whole{kept.region->data() + m.body_offset, m.body_length};
      if (send_bodies_) {
        ++state_->batches_sent;
        state_->packed_batches.fetch_add(1, std::memory_order_relaxed);
      }
      FERRY_RETURN_NOT_OK(SendBody(seq, BodyType::kPacked, {&whole, 1}, m.metadata));
      continue;
    }
    if (send_bodies_) {
      std::lock_guard lock(mutex_);
      for (uint64_t a : m.addresses) lent_.Lend(a);
      state_->addresses_lent += static_cast<int64_t>(m.addresses.size());
    }
    const ByteSpan piece(m.pairs);
    if (send_bodies_) ++state_->batches_sent;
    FERRY_RETURN_NOT_OK(SendBody(seq, BodyType::kBufferList, {&piece, 1}, m.metadata));
  }
  return WriteEndOfStream();
}

// Count a session's failure once, whichever of its threads notices first, naming the client
// and what the session was doing.
void Session::Failed(const std::string& why, StatusCode code) {
  if (failed_.exchange(true)) return;
  const std::string who = conn_ && !conn_->peer().empty() ? conn_->peer() : "a client";
  state_->RecordError(Record(LogLevel::kWarning, "session_failed",
                             "client " + who + ": " + phase_.load() + ": " + why),
                      code);
}

void Session::SendError(const Status& why) {
  // ferry's extension only: a bare-protocol client would take type 0xFF for a broken stream.
  if (!conn_ || !conn_->extensions()) return;
  // The code's name leads, so the client raises what the server would have ("NotFound: ...").
  const std::string text = std::string(StatusCodeName(why.code())) + ": " + why.message();
  uint8_t header[kMetadataHeaderSize];
  EncodeMetadataHeader(MetadataType::kFerryError, next_seq_, header);
  const ByteSpan pieces[] = {{header, kMetadataHeaderSize},
                             {text.data(), static_cast<int64_t>(text.size())}};
  (void)conn_->Send(pieces);  // best effort: the client may be gone
}

}  // namespace ferry::dipc::internal
