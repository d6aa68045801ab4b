// The dissociated-IPC server: the accept loop, the catalogue's surface and the URIs.
#include "ferry/dipc/server.hpp"

#include <pthread.h>

#include <cerrno>
#include <list>
#include <mutex>
#include <thread>

#include "dipc/served_file.hpp"
#include "dipc/session.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::dipc {

namespace {

using internal::ServerState;
using internal::Session;
using namespace std::chrono_literals;

class ServerImpl final : public Server {
 public:
  explicit ServerImpl(std::unique_ptr<ServerState> state) : state_(std::move(state)) {
    if (state_->options.accept) Open();
  }

  void Open() override {
    std::lock_guard lock(sessions_mutex_);
    if (opened_ || state_->stopping.load()) return;
    opened_ = true;
    accept_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "ferry-accept");  // for top, perf and tests
      AcceptLoop();
    });
  }
  ~ServerImpl() override { Stop(); }

  void Add(const std::string& name, std::shared_ptr<Dataset> dataset) override {
    if (dataset != nullptr && dataset->file() != nullptr &&
        state_->options.body_type == BodyType::kBufferList) {
      // A file is lent to clients as it is; if it cannot be (a compressed or unaligned body, a
      // transport that cannot lend it), it is read and copied per client as any dataset.
      const Status lent = LendFile(name, dataset);
      if (lent.ok()) return;
      ++state_->files_copied;
      state_->Log("dataset_copied",
                  "dataset \"" + name + "\" is copied for each client: " + lent.message());
    }
    state_->catalogue->Add(name, std::move(dataset));
  }

  Status Keep(const std::string& name, std::shared_ptr<Dataset> dataset) override {
    if (dataset == nullptr) return Status::Invalid("the dataset is NULL");
    transport::Listener* listener = state_->listener.get();
    // Packed bodies are sent, never read remotely: plain memory, registered with no one.
    const bool packed = state_->options.body_type == BodyType::kPacked;
    FERRY_ASSIGN_OR_RAISE(
        std::shared_ptr<const internal::Kept> kept,
        internal::EncodeKept(*dataset, state_->options.write, [listener, packed](int64_t size) {
          return packed ? internal::MakeHostRegion(size) : listener->CreateRegion(size);
        }));
    // Written once, never again: sealed, a shared-memory client maps its pages ahead of its
    // reads. Unsealed (no /proc, say) it is served as before, its pages faulted in as read.
    if (const Status sealed = kept->region->Seal(); !sealed.ok()) {
      state_->Log("kept_unsealed",
                  "dataset \"" + name + "\" is served unsealed: " + sealed.message());
    }
    state_->catalogue->Keep(name, std::move(kept));
    return Status::OK();
  }

  Status KeepOnDevice(const std::string& name, std::shared_ptr<Dataset> dataset,
                      Device& device) override {
    if (dataset == nullptr) return Status::Invalid("the dataset is NULL");
    if (state_->options.body_type != BodyType::kBufferList) {
      return Status::Invalid("serving bodies from device memory needs body type 1 (buffer lists)");
    }
    FERRY_ASSIGN_OR_RAISE(std::shared_ptr<const internal::Kept> kept,
                          internal::EncodeKeptOnDevice(*dataset, state_->options.write, device));
    // With the dataset: asked for under the shared region's URI, it is read and copied there.
    state_->catalogue->Keep(name, std::move(kept), std::move(dataset));
    return Status::OK();
  }

  // Serve `dataset`'s file from its own pages: registered as a region, encoded once into pairs
  // that point into it.
  Status LendFile(const std::string& name, const std::shared_ptr<Dataset>& dataset) {
    const DatasetFile& file = *dataset->file();
    FERRY_ASSIGN_OR_RAISE(std::shared_ptr<transport::Region> region,
                          state_->listener->RegisterRegion(LendableBytes(file)));
    FERRY_ASSIGN_OR_RAISE(
        std::shared_ptr<const internal::Kept> kept,
        internal::EncodeFromFile(*dataset, file, std::move(region), state_->options.write));
    state_->catalogue->Keep(name, std::move(kept), dataset);
    ++state_->files_lent;
    return Status::OK();
  }

  Uri uri(const std::string& name) const override { return MakeUri(name, Channel::kBoth); }
  Uri metadata_uri(const std::string& name) const override {
    Uri u = MakeUri(name, Channel::kMetadata);
    // Metadata needs neither free_data nor a key: both belong to the data URI.
    u.free_data.reset();
    u.remote_handle.reset();
    u.other.clear();
    return u;
  }
  Uri data_uri(const std::string& name) const override { return MakeUri(name, Channel::kData); }

  void Serve(std::unique_ptr<transport::Connection> connection) override {
    if (connection == nullptr || state_->stopping.load()) return;
    ++state_->clients_accepted;
    auto session = std::make_unique<Session>(state_.get(), std::move(connection));
    session->Start();
    std::lock_guard lock(sessions_mutex_);
    sessions_.remove_if([](const std::unique_ptr<Session>& s) { return s->done(); });
    sessions_.push_back(std::move(session));
  }

  Result<std::string> IssueTicket(const std::string& name, std::chrono::seconds ttl) override {
    if (ttl.count() <= 0) ttl = state_->options.ticket_ttl;
    return state_->catalogue->Issue(name, state_->options.tickets->clock()->After(ttl));
  }

  Status RefreshTicket(const std::string& ticket, std::chrono::seconds ttl) override {
    if (ttl.count() <= 0) ttl = state_->options.ticket_ttl;
    TicketBook& book = *state_->options.tickets;
    return book.Refresh(ticket, book.clock()->After(ttl));
  }

  int64_t CancelTicket(const std::string& ticket) override {
    std::lock_guard lock(sessions_mutex_);
    int64_t n = 0;
    for (auto& s : sessions_) {
      if (s->done() || !s->Redeemed(ticket)) continue;
      s->Kill(/*abort=*/true);
      ++n;
    }
    return n;
  }

  Status Remove(const std::string& name) override { return state_->catalogue->Remove(name); }
  int64_t readers(const std::string& name) const override {
    return state_->catalogue->Readers(name);
  }
  std::shared_ptr<TicketBook> tickets() const override { return state_->options.tickets; }
  std::shared_ptr<Allocator> region_allocator() const override {
    if (state_->region_memory) state_->region_memory_taken.store(true, std::memory_order_release);
    return state_->region_memory;
  }

  ServerStats stats() const override {
    ServerStats s;
    s.clients_accepted = state_->clients_accepted.load();
    s.clients_active = state_->clients_active.load();
    s.batches_sent = state_->batches_sent.load();
    s.body_bytes_sent = state_->body_bytes.load();
    s.bytes_in_flight = state_->allocator ? state_->allocator->in_use() : 0;
    s.sessions_failed = state_->sessions_failed.load();
    s.tickets_refused = state_->tickets_refused.load();
    s.addresses_lent = state_->addresses_lent.load();
    s.addresses_freed = state_->addresses_freed.load();
    s.addresses_reclaimed = state_->addresses_reclaimed.load();
    s.unknown_frees = state_->unknown_frees.load();
    s.files_lent = state_->files_lent.load();
    s.files_copied = state_->files_copied.load();
    s.bodies_from_file = state_->bodies_from_file.load();
    s.bodies_lent_in_place = state_->bodies_lent_in_place.load();
    s.requests_reused = state_->requests_reused.load();
    s.packed_batches_sent = state_->packed_batches.load(std::memory_order_relaxed);
    s.packed_body_bytes_sent = state_->packed_body_bytes.load(std::memory_order_relaxed);
    for (size_t code = 0; code < state_->errors.size(); ++code) {
      const int64_t n = state_->errors[code].load(std::memory_order_relaxed);
      if (n > 0) s.session_errors[static_cast<StatusCode>(code)] = n;
    }
    return s;
  }

  std::string last_error() const override {
    std::lock_guard lock(state_->error_mutex);
    return state_->last_error;
  }

  bool AwaitIdle(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(state_->idle_mutex);
    return state_->idle_changed.wait_for(lock, timeout,
                                         [&] { return state_->clients_active.load() == 0; });
  }

  void Drain() override {
    if (!state_->draining.exchange(true))
      state_->Log("draining", "draining: new requests are refused");
  }
  bool draining() const override { return state_->draining.load(); }

  bool AwaitIdleUntil(Clock::time_point deadline) override {
    std::unique_lock lock(state_->idle_mutex);
    return state_->options.clock->WaitUntil(state_->idle_changed, lock, deadline,
                                            [&] { return state_->clients_active.load() == 0; });
  }

  void Stop() override {
    if (state_->stopping.exchange(true)) return;
    state_->listener->Close();
    std::thread accept;
    {
      // Open checks `stopping` under this lock, so no loop starts after this.
      std::lock_guard lock(sessions_mutex_);
      accept = std::move(accept_);
    }
    if (accept.joinable()) accept.join();
    std::lock_guard lock(sessions_mutex_);
    for (auto& s : sessions_) s->Kill(/*abort=*/true);
    sessions_.clear();  // joins each session's threads
  }

 private:
  Uri MakeUri(const std::string& name, Channel channel) const {
    Uri u;
    u.scheme = state_->listener->scheme();
    const std::string address = state_->listener->address();
    if (!address.empty() && address[0] == '/') {
      u.path = address;
    } else {
      u.authority = address;
    }
    const uint32_t region = state_->catalogue->RegionOf(name);
    u.want_data = MakeWantTag(state_->options.want_data_tag, region, channel);
    u.free_data = state_->options.free_data_tag;
    const std::shared_ptr<transport::Region> memory =
        region == 0 ? state_->region : state_->catalogue->Memory(region);
    if (memory) {
      std::string handle = memory->remote_handle();
      if (!handle.empty()) u.remote_handle = std::move(handle);
    }
    if (const std::shared_ptr<const internal::Kept> kept = state_->catalogue->KeptAt(region);
        kept && !kept->device_handle.empty()) {
      u.remote_handle = kept->device_handle;
      u.other.emplace_back(kCudaIpcParameter, std::to_string(kept->device_bytes));
    }
    u.ferry = true;
    return u;
  }

  void AcceptLoop() {
    bool serving = false;  // sessions not yet joined
    while (!state_->stopping.load()) {
      // Stop closes the listener, which ends the wait at once. The slice bounds how long a
      // finished session keeps its connection and threads (5 turns a second while any exist); a
      // server with none waits 30 s a turn, so an idle one does not wake.
      Result<std::unique_ptr<transport::Connection>> c =
          state_->listener->Accept(serving ? 200ms : 30s);
      {
        std::lock_guard lock(sessions_mutex_);
        sessions_.remove_if([](const std::unique_ptr<Session>& s) { return s->done(); });
        serving = !sessions_.empty();
      }
      if (!c.ok()) {
        if (c.status().code() == StatusCode::kDeadlineExceeded) continue;
        break;
      }
      ++state_->clients_accepted;
      auto session = std::make_unique<Session>(state_.get(), std::move(*c));
      // Listed before it starts, under the lock CancelTicket and Stop take: a session serving
      // its first batch is always one they find.
      std::lock_guard lock(sessions_mutex_);
      if (state_->stopping.load()) break;  // Stop has killed the listed ones: this one never runs
      sessions_.push_back(std::move(session));
      sessions_.back()->Start();
      serving = true;
    }
  }

  std::unique_ptr<ServerState> state_;
  std::mutex sessions_mutex_;
  std::list<std::unique_ptr<Session>> sessions_;
  bool opened_ = false;  // guarded by sessions_mutex_
  std::thread accept_;
};

}  // namespace

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  auto state = std::make_unique<ServerState>();
  if (options.body_type != BodyType::kPacked && options.body_type != BodyType::kBufferList) {
    return Status::Invalid("unknown body type " +
                           std::to_string(static_cast<int>(options.body_type)));
  }
  if (options.max_clients <= 0) return Status::Invalid("max_clients must be positive");
  transport::TransportLimits limits;
  limits.timeout = options.timeout;
  limits.max_message_bytes = options.max_request_bytes;
  limits.max_tagged_bytes = options.max_request_bytes;
  // Packed bodies lend no memory: no client may reach this process's memory.
  limits.remote_memory = options.body_type == BodyType::kBufferList;
  // A client the transport could not take is refused at once and logged here (copies: the
  // listener's thread may call it before the state holds the options).
  limits.refused = [sink = options.log_sink, lines = options.log,
                    plane = options.transport](const std::string& message) {
    LogRecord r;
    r.level = LogLevel::kWarning;
    r.event = "connection_refused";
    r.message = message;
    r.plane = plane;
    EmitLog(sink, lines, r);
  };
  FERRY_ASSIGN_OR_RAISE(state->listener,
                        transport::Listen(options.transport, options.listen, limits));
  // One clock for the server's waits and its tickets, unless the book it shares has its own.
  if (options.clock == nullptr) {
    options.clock = options.tickets ? options.tickets->clock() : Clock::Real();
  }
  if (options.body_type == BodyType::kBufferList) {
    // Registered before any URI is handed out: the URI carries its key.
    FERRY_ASSIGN_OR_RAISE(state->region, state->listener->CreateRegion(options.region_bytes));
    state->allocator =
        std::make_shared<internal::RegionAllocator>(state->region->size(), options.clock);
    state->region_memory =
        internal::MakeRegionMemory(state->region, state->allocator, options.timeout);
  }
  if (options.tickets == nullptr) options.tickets = std::make_shared<TicketBook>(options.clock);
  state->catalogue = std::make_unique<internal::Catalogue>(options.tickets, !options.token.empty());
  state->options = std::move(options);
  return std::unique_ptr<Server>(std::make_unique<ServerImpl>(std::move(state)));
}

}  // namespace ferry::dipc
