// The dissociated-IPC server: an accept thread, and per client a session that writes the dataset
// through an IPC StreamWriter into the connection, plus a thread that takes free_data.
#include "ferry/dipc/server.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "dipc/region_allocator.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::dipc {

using transport::Connection;
using transport::Listener;
using transport::Region;
using transport::TaggedMessage;

namespace {

using namespace std::chrono_literals;

std::string Hex(uint64_t v) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

// A dataset encoded once into a region of its own: each message's flatbuffer and, for bodies,
// the encoded pairs into that region. Sessions replay it without copying a byte of the bodies.
struct KeptMessage {
  std::vector<uint8_t> metadata;
  bool has_body = false;
  std::vector<uint8_t> pairs;  // an encoded type-1 body
  bool lent = false;           // whether the body has buffers the client must return
  uint64_t first_address = 0;  // what the client's free_data names
};

struct Kept {
  std::shared_ptr<Region> region;
  std::vector<KeptMessage> messages;
};

// Encodes a dataset's messages: a first pass (`region` NULL) sizes the bodies, the second copies
// them into the region.
class KeepSink final : public ipc::MessageSink {
 public:
  explicit KeepSink(Kept* kept) : kept_(kept) {}
  Status WriteMessage(const ipc::EncodedMessage& m) override {
    const int64_t at = used_;
    used_ += (std::max<int64_t>(m.body_length, 1) + 63) / 64 * 64;
    if (kept_->region == nullptr) return Status::OK();
    KeptMessage k;
    k.metadata.assign(m.metadata.begin(), m.metadata.end());
    k.has_body = m.has_body;
    if (m.has_body) {
      std::vector<BufferRef> pairs;
      pairs.reserve(m.buffers.size());
      for (const ipc::BodyBuffer& b : m.buffers) {
        if (b.length > 0) std::memcpy(kept_->region->data() + at + b.offset, b.data, b.length);
        pairs.push_back(
            BufferRef{kept_->region->WireAddress(at + b.offset), static_cast<uint64_t>(b.length)});
      }
      k.lent = !pairs.empty();
      k.first_address = k.lent ? pairs[0].address : 0;
      k.pairs = EncodeBufferList(pairs);
    }
    kept_->messages.push_back(std::move(k));
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }
  int64_t used() const { return used_; }

 private:
  Kept* kept_;
  int64_t used_ = 0;
};

Status EncodeAll(Dataset& dataset, ipc::MessageSink* sink, const ipc::WriteOptions& options) {
  FERRY_ASSIGN_OR_RAISE(std::unique_ptr<DatasetReader> reader, dataset.Open());
  FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter writer,
                        ipc::StreamWriter::Open(sink, reader->schema(), options));
  while (true) {
    FERRY_ASSIGN_OR_RAISE(const ArrowDeviceArray* batch, reader->Next());
    if (batch == nullptr) break;
    FERRY_RETURN_NOT_OK(writer.WriteDeviceBatch(batch));
  }
  return writer.Close();
}

struct Shared {
  ServerOptions options;
  std::unique_ptr<Listener> listener;
  std::shared_ptr<Region> region;  // NULL for packed bodies
  std::unique_ptr<internal::RegionAllocator> allocator;
  std::atomic<bool> stopping{false};

  std::mutex datasets_mutex;
  std::map<std::string, std::shared_ptr<Dataset>> datasets;
  std::map<std::string, std::shared_ptr<const Kept>> kept;

  // Data connections of the two-connection shape, waiting for their metadata connection, by the
  // pairing key their ticket carries.
  std::mutex pending_mutex;
  std::condition_variable pending_changed;
  std::map<std::string, std::unique_ptr<Connection>> pending_data;

  std::atomic<int64_t> clients_accepted{0}, clients_active{0}, batches_sent{0}, body_bytes{0},
      sessions_failed{0};
  std::mutex error_mutex;
  std::string last_error;

  void RecordError(const std::string& e) {
    ++sessions_failed;
    std::lock_guard lock(error_mutex);
    last_error = e;
  }
};

// One client: serves its ticket and accounts for every block of the region it holds.
class Session : public ipc::MessageSink {
 public:
  Session(Shared* shared, std::unique_ptr<Connection> conn)
      : shared_(shared), conn_(std::move(conn)), data_(conn_.get()) {}

  ~Session() override {
    Kill();
    if (serve_.joinable()) serve_.join();
    if (frees_.joinable()) frees_.join();
  }

  void Start() {
    serve_ = std::thread([this] { Serve(); });
  }

  bool done() const { return done_.load(); }

  // Close the connection and free everything this client held.
  void Kill() {
    dead_.store(true);
    if (conn_) conn_->Close();
    if (paired_) paired_->Close();
    if (shared_->allocator) shared_->allocator->Wake();
    FreeAll();
  }

  Status WriteMessage(const ipc::EncodedMessage& m) override {
    const uint32_t seq = next_seq_++;
    uint8_t header[kMetadataHeaderSize];
    EncodeMetadataHeader(MetadataType::kIpcMessage, seq, header);
    const ByteSpan meta[] = {{header, kMetadataHeaderSize},
                             {m.metadata.data(), static_cast<int64_t>(m.metadata.size())}};
    if (!m.has_body) return conn_->Send(meta);
    shared_->body_bytes += m.body_length;
    if (shared_->options.body_type == BodyType::kPacked) {
      return SendBoth(meta, MakeBodyTag(BodyType::kPacked, seq), m.body);
    }
    Region& region = *shared_->region;
    FERRY_ASSIGN_OR_RAISE(int64_t block,
                          shared_->allocator->Allocate(m.body_length, shared_->options.wait_timeout,
                                                       [this] { return dead_.load(); }));
    std::vector<BufferRef> pairs;
    pairs.reserve(m.buffers.size());
    for (const ipc::BodyBuffer& b : m.buffers) {
      if (b.length > 0) std::memcpy(region.data() + block + b.offset, b.data, b.length);
      pairs.push_back(
          BufferRef{region.WireAddress(block + b.offset), static_cast<uint64_t>(b.length)});
    }
    if (pairs.empty()) {
      shared_->allocator->Free(block);  // nothing for the client to read or free
    } else {
      // Recorded before sending: the client may free it before SendTagged returns.
      std::lock_guard lock(mutex_);
      held_.emplace(pairs[0].address, block);
    }
    const std::vector<uint8_t> list = EncodeBufferList(pairs);
    const ByteSpan piece{list.data(), static_cast<int64_t>(list.size())};
    return SendBoth(meta, MakeBodyTag(BodyType::kBufferList, seq), {&piece, 1});
  }

  // A message's metadata and its body: together when one connection carries both.
  Status SendBoth(std::span<const ByteSpan> meta, uint64_t tag, std::span<const ByteSpan> body) {
    if (data_ == conn_.get()) return conn_->SendMessageAndBody(meta, tag, body);
    FERRY_RETURN_NOT_OK(conn_->Send(meta));
    return data_->SendTagged(tag, body);
  }

  Status WriteEndOfStream() override {
    uint8_t header[kMetadataHeaderSize];
    EncodeMetadataHeader(MetadataType::kEndOfStream, next_seq_++, header);
    const ByteSpan piece{header, kMetadataHeaderSize};
    return conn_->Send({&piece, 1});
  }

 private:
  void Serve() {
    ++shared_->clients_active;
    Status st = ServeTicket();
    if (!st.ok()) {
      // Tell the client why, if it still listens, then drop everything it held.
      if (st.code() != EPIPE) SendError(st.message());
      if (!shared_->stopping.load()) Failed(st.message());
      Kill();
    } else if (!handed_over_) {
      // Keep the connection until the client freed every body (or went away).
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return (held_.empty() && lent_.empty()) || dead_.load(); });
      lock.unlock();
      conn_->Close();
      if (paired_) paired_->Close();
    }
    --shared_->clients_active;
    done_.store(true);
  }

  Status ServeTicket() {
    // The first message says what this connection is: a want_data for the metadata (or for both
    // channels), or the data channel of a two-connection client.
    FERRY_ASSIGN_OR_RAISE(TaggedMessage want,
                          conn_->ReceiveTagged(0, 0, shared_->options.wait_timeout));
    std::string ticket(reinterpret_cast<const char*>(want.payload.data),
                       static_cast<size_t>(want.payload.size));
    std::string key;
    if (const size_t at = ticket.find(kPairMarker); at != std::string::npos) {
      key = ticket.substr(at + kPairMarker.size());
      ticket.resize(at);
    }
    if (want.tag == shared_->options.data_want_tag) {
      if (key.empty()) return Status::Invalid("a data-channel request without a pairing key");
      {
        std::lock_guard lock(shared_->pending_mutex);
        shared_->pending_data[key] = std::move(conn_);
      }
      shared_->pending_changed.notify_all();
      handed_over_ = true;
      return Status::OK();
    }
    if (want.tag != shared_->options.want_data_tag) {
      return Status::Invalid("the first request has tag " + Hex(want.tag) + ", not want_data (" +
                             Hex(shared_->options.want_data_tag) + ")");
    }
    if (!key.empty()) FERRY_RETURN_NOT_OK(AwaitDataChannel(key));
    frees_ = std::thread([this] { TakeFrees(); });
    std::shared_ptr<Dataset> dataset;
    std::shared_ptr<const Kept> kept;
    {
      std::lock_guard lock(shared_->datasets_mutex);
      auto it = shared_->datasets.find(ticket);
      auto k = shared_->kept.find(ticket);
      if (k != shared_->kept.end()) kept = k->second;
      if (it == shared_->datasets.end() && kept == nullptr) {
        std::string names;
        for (const auto& [name, d] : shared_->datasets) names += (names.empty() ? "" : ", ") + name;
        for (const auto& [name, d] : shared_->kept) names += (names.empty() ? "" : ", ") + name;
        return Status(ENOENT, "unknown ticket \"" + ticket + "\" (this server has: " + names + ")");
      }
      if (it != shared_->datasets.end()) dataset = it->second;
    }
    if (kept != nullptr) return Replay(*kept);
    FERRY_ASSIGN_OR_RAISE(std::unique_ptr<DatasetReader> reader, dataset->Open());
    if (shared_->region) FERRY_RETURN_NOT_OK(data_->ShareRegion(shared_->region));
    FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter writer,
                          ipc::StreamWriter::Open(this, reader->schema(), shared_->options.write));
    while (!dead_.load()) {
      FERRY_ASSIGN_OR_RAISE(const ArrowDeviceArray* batch, reader->Next());
      if (batch == nullptr) break;
      FERRY_RETURN_NOT_OK(writer.WriteDeviceBatch(batch));
      ++shared_->batches_sent;
    }
    if (dead_.load()) return Status(EPIPE, "the client went away");
    return writer.Close();
  }

  // Lend a kept dataset: its metadata, then pairs into its own region. Nothing is copied; the
  // client's free_data only returns the loan.
  Status Replay(const Kept& kept) {
    FERRY_RETURN_NOT_OK(data_->ShareRegion(kept.region));
    for (const KeptMessage& m : kept.messages) {
      if (dead_.load()) return Status(EPIPE, "the client went away");
      const uint32_t seq = next_seq_++;
      uint8_t header[kMetadataHeaderSize];
      EncodeMetadataHeader(MetadataType::kIpcMessage, seq, header);
      const ByteSpan meta[] = {{header, kMetadataHeaderSize},
                               {m.metadata.data(), static_cast<int64_t>(m.metadata.size())}};
      if (!m.has_body) {
        FERRY_RETURN_NOT_OK(conn_->Send(meta));
        continue;
      }
      if (m.lent) {
        std::lock_guard lock(mutex_);
        ++lent_[m.first_address];
      }
      const ByteSpan piece{m.pairs.data(), static_cast<int64_t>(m.pairs.size())};
      FERRY_RETURN_NOT_OK(SendBoth(meta, MakeBodyTag(BodyType::kBufferList, seq), {&piece, 1}));
      ++shared_->batches_sent;
    }
    return WriteEndOfStream();
  }

  // The two-connection shape: bodies and free_data go over the data connection that carried the
  // same pairing key.
  Status AwaitDataChannel(const std::string& key) {
    std::unique_lock lock(shared_->pending_mutex);
    const bool found = shared_->pending_changed.wait_for(lock, shared_->options.wait_timeout, [&] {
      return shared_->pending_data.count(key) > 0 || shared_->stopping.load();
    });
    auto it = shared_->pending_data.find(key);
    if (!found || it == shared_->pending_data.end()) {
      return Status(ETIMEDOUT, "the data channel paired with this metadata channel never came");
    }
    paired_ = std::move(it->second);
    shared_->pending_data.erase(it);
    data_ = paired_.get();
    return Status::OK();
  }

  void TakeFrees() {
    while (true) {
      Result<TaggedMessage> m =
          data_->ReceiveTagged(shared_->options.free_data_tag, ~uint64_t{0}, 24h);
      if (!m.ok()) break;  // the client closed or went away: Kill below frees what it held
      Result<std::vector<uint64_t>> addresses =
          ParseFreeData({m->payload.data, static_cast<size_t>(m->payload.size)});
      Status st = addresses.status();
      if (st.ok()) st = Release(*addresses);
      if (!st.ok()) {
        Failed("client sent a bad free_data: " + st.message());
        SendError("bad free_data: " + st.message());
        break;
      }
    }
    Kill();
    changed_.notify_all();
  }

  Status Release(const std::vector<uint64_t>& addresses) {
    {
      std::lock_guard lock(mutex_);
      for (uint64_t a : addresses) {
        if (auto lent = lent_.find(a); lent != lent_.end()) {
          if (--lent->second == 0) lent_.erase(lent);
          continue;
        }
        auto it = held_.find(a);
        if (it == held_.end()) {
          return Status::Invalid("free_data names address " + Hex(a) +
                                 ", which this client does not hold");
        }
        shared_->allocator->Free(it->second);
        held_.erase(it);
      }
    }
    changed_.notify_all();
    return Status::OK();
  }

  void FreeAll() {
    {
      std::lock_guard lock(mutex_);
      for (const auto& [address, block] : held_) shared_->allocator->Free(block);
      held_.clear();
      lent_.clear();
    }
    changed_.notify_all();
  }

  // Count a session's failure once, whichever of its threads notices first.
  void Failed(const std::string& why) {
    if (!failed_.exchange(true)) shared_->RecordError(why);
  }

  void SendError(const std::string& text) {
    if (!conn_) return;
    uint8_t header[kMetadataHeaderSize];
    EncodeMetadataHeader(MetadataType::kFerryError, next_seq_, header);
    const ByteSpan pieces[] = {{header, kMetadataHeaderSize},
                               {text.data(), static_cast<int64_t>(text.size())}};
    (void)conn_->Send(pieces);  // best effort: the client may be gone
  }

  Shared* shared_;
  std::unique_ptr<Connection> conn_;    // metadata (and bodies, in the one-connection shape)
  std::unique_ptr<Connection> paired_;  // the data connection of the two-connection shape
  Connection* data_;                    // where bodies, regions and free_data go
  bool handed_over_ = false;            // a data connection, given to its metadata session
  uint32_t next_seq_ = 0;
  std::atomic<bool> dead_{false};
  std::atomic<bool> done_{false};
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<uint64_t, int64_t> held_;  // wire address of a body's first buffer -> block
  std::unordered_map<uint64_t, int64_t> lent_;  // kept bodies lent to this client -> count
  std::thread serve_;
  std::thread frees_;
};

class ServerImpl final : public Server {
 public:
  explicit ServerImpl(std::unique_ptr<Shared> shared) : shared_(std::move(shared)) {
    accept_ = std::thread([this] { AcceptLoop(); });
  }
  ~ServerImpl() override { Stop(); }

  void Add(const std::string& name, std::shared_ptr<Dataset> dataset) override {
    std::lock_guard lock(shared_->datasets_mutex);
    shared_->kept.erase(name);
    shared_->datasets[name] = std::move(dataset);
  }

  Status Keep(const std::string& name, std::shared_ptr<Dataset> dataset) override {
    if (dataset == nullptr) return Status::Invalid("the dataset is NULL");
    if (shared_->options.body_type != BodyType::kBufferList) {
      return Status::Invalid("keeping a dataset needs body type 1 (buffer lists)");
    }
    auto kept = std::make_shared<Kept>();
    KeepSink sizing(kept.get());
    FERRY_RETURN_NOT_OK(EncodeAll(*dataset, &sizing, shared_->options.write));
    FERRY_ASSIGN_OR_RAISE(kept->region, shared_->listener->CreateRegion(sizing.used()));
    KeepSink writing(kept.get());
    FERRY_RETURN_NOT_OK(EncodeAll(*dataset, &writing, shared_->options.write));
    std::lock_guard lock(shared_->datasets_mutex);
    shared_->datasets.erase(name);
    shared_->kept[name] = std::move(kept);
    return Status::OK();
  }

  Uri uri() const override {
    Uri u;
    u.scheme = shared_->listener->scheme();
    const std::string address = shared_->listener->address();
    if (!address.empty() && address[0] == '/') {
      u.path = address;
    } else {
      u.authority = address;
    }
    u.want_data = shared_->options.want_data_tag;
    u.free_data = shared_->options.free_data_tag;
    if (shared_->region) {
      std::string handle = shared_->region->remote_handle();
      if (!handle.empty()) u.remote_handle = std::move(handle);
    }
    return u;
  }

  Uri data_uri() const override {
    Uri u = uri();
    u.want_data = shared_->options.data_want_tag;
    return u;
  }

  ServerStats stats() const override {
    ServerStats s;
    s.clients_accepted = shared_->clients_accepted.load();
    s.clients_active = shared_->clients_active.load();
    s.batches_sent = shared_->batches_sent.load();
    s.body_bytes_sent = shared_->body_bytes.load();
    s.bytes_in_flight = shared_->allocator ? shared_->allocator->in_use() : 0;
    s.sessions_failed = shared_->sessions_failed.load();
    return s;
  }

  std::string last_error() const override {
    std::lock_guard lock(shared_->error_mutex);
    return shared_->last_error;
  }

  void Stop() override {
    if (shared_->stopping.exchange(true)) return;
    shared_->listener->Close();
    if (accept_.joinable()) accept_.join();
    std::lock_guard lock(sessions_mutex_);
    for (auto& s : sessions_) s->Kill();
    sessions_.clear();  // joins each session's threads
  }

 private:
  void AcceptLoop() {
    while (!shared_->stopping.load()) {
      Result<std::unique_ptr<Connection>> c = shared_->listener->Accept(200ms);
      {
        std::lock_guard lock(sessions_mutex_);
        sessions_.remove_if([](const std::unique_ptr<Session>& s) { return s->done(); });
      }
      if (!c.ok()) {
        if (c.status().code() == ETIMEDOUT) continue;
        break;
      }
      ++shared_->clients_accepted;
      auto session = std::make_unique<Session>(shared_.get(), std::move(*c));
      session->Start();
      std::lock_guard lock(sessions_mutex_);
      sessions_.push_back(std::move(session));
    }
  }

  std::unique_ptr<Shared> shared_;
  std::mutex sessions_mutex_;
  std::list<std::unique_ptr<Session>> sessions_;
  std::thread accept_;
};

}  // namespace

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  auto shared = std::make_unique<Shared>();
  if (options.body_type != BodyType::kPacked && options.body_type != BodyType::kBufferList) {
    return Status::Invalid("unknown body type " +
                           std::to_string(static_cast<int>(options.body_type)));
  }
  FERRY_ASSIGN_OR_RAISE(shared->listener, transport::Listen(options.transport, options.address));
  if (options.body_type == BodyType::kBufferList) {
    FERRY_ASSIGN_OR_RAISE(shared->region, shared->listener->CreateRegion(options.region_bytes));
    shared->allocator = std::make_unique<internal::RegionAllocator>(shared->region->size());
  }
  shared->options = std::move(options);
  return std::unique_ptr<Server>(std::make_unique<ServerImpl>(std::move(shared)));
}

}  // namespace ferry::dipc
