// The UCX transport: listeners, connections and registered regions over a ucx::Worker. Without
// UCX at build time every entry point reports that this build has none.
#include "ferry/transport/ucx.hpp"

#include <cerrno>

#if FERRY_WITH_UCX

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "transport/ucx/worker.hpp"

namespace ferry::transport {

namespace {

using ucx::Peer;
using ucx::Worker;

// "host:port" (or "[v6]:port"; empty means 127.0.0.1:0) resolved to a socket address.
struct Endpoint {
  std::string host;
  sockaddr_storage addr{};
  socklen_t addrlen = 0;
};

Result<Endpoint> Resolve(const std::string& address) {
  Endpoint out;
  std::string port = "0";
  out.host = "127.0.0.1";
  if (!address.empty()) {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) {
      return Status::Invalid("UCX address \"" + address + "\" is not host:port");
    }
    out.host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
      out.host = out.host.substr(1, out.host.size() - 2);
    }
    if (out.host.empty()) out.host = "127.0.0.1";
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(out.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Status::Invalid("cannot resolve UCX address \"" + address + "\": " + gai_strerror(rc));
  }
  std::memcpy(&out.addr, found->ai_addr, found->ai_addrlen);
  out.addrlen = found->ai_addrlen;
  freeaddrinfo(found);
  return out;
}

// Whether `addr` is this host's: a loopback address or one of its interfaces'. Connections to
// it get the fast endpoint (shared memory, CMA) beside the socket-address one, unless
// FERRY_UCX_FAST_PATH=0.
bool SameHost(const sockaddr_storage& addr) {
  const char* env = std::getenv("FERRY_UCX_FAST_PATH");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  if (addr.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
    if ((ntohl(in.sin_addr.s_addr) >> 24) == 127) return true;
  } else if (addr.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
    if (IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr)) return true;
  } else {
    return false;
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != addr.ss_family) continue;
    if (addr.ss_family == AF_INET) {
      found = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr ==
              reinterpret_cast<const sockaddr_in&>(addr).sin_addr.s_addr;
    } else {
      found = std::memcmp(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr,
                          &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr,
                          sizeof(in6_addr)) == 0;
    }
  }
  freeifaddrs(list);
  return found;
}

std::string JoinHostPort(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// Host memory registered with UCP (ucp_mem_map) for the peer's RMA gets.
class UcxRegion final : public Region {
 public:
  static Result<std::shared_ptr<UcxRegion>> Make(std::shared_ptr<Worker> worker, int64_t size) {
    if (size <= 0) return Status::Invalid("a UCX region needs a positive size");
    auto region = std::shared_ptr<UcxRegion>(new UcxRegion(std::move(worker)));
    const size_t rounded = (static_cast<size_t>(size) + 63) / 64 * 64;
    region->data_ = static_cast<uint8_t*>(std::aligned_alloc(64, rounded));
    if (region->data_ == nullptr) {
      return Status::OutOfMemory("cannot allocate a " + std::to_string(size) + "-byte UCX region");
    }
    region->size_ = size;
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = region->data_;
    params.length = static_cast<size_t>(size);
    ucs_status_t st = ucp_mem_map(region->worker_->context(), &params, &region->memh_);
    if (st != UCS_OK) return Status(EIO, std::string("UCX: ucp_mem_map: ") + ucs_status_string(st));
    void* packed = nullptr;
    size_t packed_size = 0;
    st = ucp_rkey_pack(region->worker_->context(), region->memh_, &packed, &packed_size);
    if (st != UCS_OK)
      return Status(EIO, std::string("UCX: ucp_rkey_pack: ") + ucs_status_string(st));
    region->rkey_.assign(static_cast<const char*>(packed), packed_size);
    ucp_rkey_buffer_release(packed);
    return region;
  }

  ~UcxRegion() override {
    if (memh_ != nullptr) ucp_mem_unmap(worker_->context(), memh_);
    std::free(data_);
  }

  uint8_t* data() const noexcept override { return data_; }
  int64_t size() const noexcept override { return size_; }
  uint64_t WireAddress(int64_t offset) const noexcept override {
    return reinterpret_cast<uintptr_t>(data_) + static_cast<uint64_t>(offset);
  }
  std::string remote_handle() const override { return rkey_; }
  const Worker* worker() const { return worker_.get(); }

 private:
  explicit UcxRegion(std::shared_ptr<Worker> worker) : worker_(std::move(worker)) {}

  std::shared_ptr<Worker> worker_;
  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  ucp_mem_h memh_ = nullptr;
  std::string rkey_;
};

std::string Hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, v);
  return text;
}

class UcxConnection final : public Connection {
 public:
  UcxConnection(std::shared_ptr<Worker> worker, std::shared_ptr<Peer> peer)
      : worker_(std::move(worker)), peer_(std::move(peer)) {}
  ~UcxConnection() override { Close(); }

  Status Send(std::span<const ByteSpan> pieces) override {
    FERRY_RETURN_NOT_OK(CheckOpen());
    return worker_->Send(peer_, ucx::kUntaggedTag, pieces);
  }

  Status SendTagged(uint64_t tag, std::span<const ByteSpan> pieces) override {
    if (ucx::IsTransportTag(tag)) {
      return Status::Invalid("tag " + Hex(tag) + " is reserved by the UCX transport");
    }
    FERRY_RETURN_NOT_OK(CheckOpen());
    return worker_->Send(peer_, tag, pieces);
  }

  Result<SharedBytes> Receive(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(peer_->mutex);
    const bool ready =
        peer_->changed.wait_for(lock, timeout, [&] { return !peer_->untagged.empty() || Ended(); });
    if (!peer_->untagged.empty()) {
      SharedBytes m = std::move(peer_->untagged.front());
      peer_->untagged.pop_front();
      return m;
    }
    return Failure(ready, "an untagged message");
  }

  void Expect(uint64_t tag, int64_t size) override { worker_->Expect(peer_, tag, size); }
  bool posts_receives() const override { return peer_->on_demand; }

  Result<TaggedMessage> ReceiveTagged(uint64_t want, uint64_t mask,
                                      std::chrono::milliseconds timeout) override {
    std::unique_lock lock(peer_->mutex);
    auto& queue = peer_->tagged;
    auto match = [&] {
      for (auto it = queue.begin(); it != queue.end(); ++it) {
        if ((it->tag & mask) == (want & mask)) return it;
      }
      return queue.end();
    };
    if (!peer_->on_demand) {
      const bool ready =
          peer_->changed.wait_for(lock, timeout, [&] { return match() != queue.end() || Ended(); });
      if (auto it = match(); it != queue.end()) return Pop(it);
      return Failure(ready, "a tagged message");
    }
    // A client: ask the progress thread to look for it in UCX's queue (it may lie behind
    // bodies the read-ahead limit left there). Whatever comes, a receive posted for this
    // sequence number under another tag is no longer needed.
    if (auto it = match(); it != queue.end()) {
      worker_->DropPosted(want, mask);
      return Pop(it);
    }
    const int64_t id = ++peer_->next_want;
    peer_->wants.push_back(ucx::Peer::Want{id, want, mask});
    auto find = [&] {
      return std::find_if(peer_->wants.begin(), peer_->wants.end(),
                          [&](const ucx::Peer::Want& w) { return w.id == id; });
    };
    lock.unlock();
    worker_->Wake();
    lock.lock();
    const bool ready = peer_->changed.wait_for(lock, timeout, [&] {
      return match() != queue.end() || find()->exhausted || peer_->closed;
    });
    peer_->wants.erase(find());
    if (auto it = match(); it != queue.end()) {
      worker_->DropPosted(want, mask);
      return Pop(it);
    }
    return Failure(ready, "a tagged message");
  }

  void Close() override { worker_->Close(peer_); }

  Status ShareRegion(const std::shared_ptr<Region>& region) override {
    auto* ucx_region = dynamic_cast<UcxRegion*>(region.get());
    if (ucx_region == nullptr || ucx_region->worker() != worker_.get()) {
      return Status::Invalid("a UCX connection can share only regions of its own listener");
    }
    FERRY_RETURN_NOT_OK(CheckOpen());
    const uint64_t head[2] = {ucx_region->WireAddress(0), static_cast<uint64_t>(region->size())};
    const std::string rkey = region->remote_handle();
    const ByteSpan pieces[] = {{head, sizeof(head)},
                               {rkey.data(), static_cast<int64_t>(rkey.size())}};
    FERRY_RETURN_NOT_OK(worker_->Send(peer_, kRegionTag, pieces));
    std::lock_guard lock(shared_mutex_);
    shared_.push_back(region);
    return Status::OK();
  }

  Result<FetchedBody> Fetch(std::span<const BufferRef> refs,
                            std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<std::shared_ptr<ucx::RemoteRegion>> regions;
    {
      std::lock_guard lock(peer_->mutex);
      regions = peer_->regions;
    }
    std::vector<std::shared_ptr<ucx::RemoteRegion>> where(refs.size());
    std::vector<uint64_t> offsets(refs.size());
    FetchedBody body;
    uint64_t total = 0;
    for (size_t i = 0; i < refs.size(); ++i) {
      const BufferRef& ref = refs[i];
      const std::string name = "buffer " + std::to_string(i) + " (address " + Hex(ref.address) +
                               ", length " + std::to_string(ref.length) + ")";
      if (ref.address > std::numeric_limits<uint64_t>::max() - ref.length) {
        return Status::Invalid(name + " overflows the address space");
      }
      for (const auto& region : regions) {
        if (ref.address >= region->base && ref.address - region->base <= region->size &&
            ref.length <= region->size - (ref.address - region->base)) {
          where[i] = region;
          break;
        }
      }
      if (!where[i]) return Status::Invalid(name + " lies outside every region the peer shared");
      total = (total + 7) / 8 * 8;
      offsets[i] = total;
      if (ref.length > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - total) {
        return Status::Invalid(name + " makes the body too large");
      }
      total += ref.length;
      body.buffers.push_back(BufferRef{offsets[i], ref.length});
    }
    std::shared_ptr<uint8_t> bytes = ucx::TakeBuffer(total);
    if (!bytes) {
      return Status::OutOfMemory("cannot allocate " + std::to_string(total) +
                                 " bytes for type-1 buffers");
    }
    FERRY_RETURN_NOT_OK(worker_->Get(peer_, where, refs, offsets, bytes, deadline));
    body.bytes = SharedBytes{bytes.get(), static_cast<int64_t>(total), bytes};
    body.borrowed = false;
    return body;
  }

 private:
  // Caller holds peer_->mutex. Taking a message frees read-ahead room: the progress thread may
  // take the next body off the wire.
  TaggedMessage Pop(const std::deque<TaggedMessage>::iterator& it) {
    TaggedMessage m = std::move(*it);
    peer_->tagged.erase(it);
    if (peer_->on_demand && !ucx::IsTransportTag(m.tag)) {
      peer_->held_bytes -= m.payload.size + static_cast<int64_t>(sizeof(uint64_t));
      worker_->Wake();
    }
    return m;
  }

  // Caller holds peer_->mutex.
  bool Ended() const { return peer_->closed || peer_->peer_closed; }

  Status CheckOpen() {
    std::lock_guard lock(peer_->mutex);
    if (Ended()) return Status(EPIPE, "the connection is closed");
    return Status::OK();
  }

  // Caller holds peer_->mutex.
  Status Failure(bool ready, const char* what) const {
    if (!ready) return Status(ETIMEDOUT, std::string("timed out waiting for ") + what);
    if (peer_->closed) {
      return Status(EPIPE, std::string("this end closed the connection while waiting for ") + what);
    }
    std::string message = std::string("the peer closed the connection while waiting for ") + what;
    if (peer_->failed && !peer_->failure.empty()) message += " (UCX: " + peer_->failure + ")";
    return Status(EPIPE, message);
  }

  std::shared_ptr<Worker> worker_;
  std::shared_ptr<Peer> peer_;
  std::mutex shared_mutex_;
  std::vector<std::shared_ptr<Region>> shared_;  // kept alive while the peer may read them
};

class UcxListener final : public Listener {
 public:
  UcxListener(std::shared_ptr<Worker> worker, std::string address)
      : worker_(std::move(worker)), address_(std::move(address)) {}
  ~UcxListener() override { Close(); }

  Result<std::unique_ptr<Connection>> Accept(std::chrono::milliseconds timeout) override {
    FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Peer> peer, worker_->Accept(timeout));
    return std::unique_ptr<Connection>(std::make_unique<UcxConnection>(worker_, std::move(peer)));
  }

  std::string scheme() const override { return "ucx"; }
  std::string address() const override { return address_; }

  Result<std::shared_ptr<Region>> CreateRegion(int64_t size) override {
    FERRY_ASSIGN_OR_RAISE(std::shared_ptr<UcxRegion> region, UcxRegion::Make(worker_, size));
    return std::shared_ptr<Region>(std::move(region));
  }

  void Close() override { worker_->StopListening(); }

 private:
  std::shared_ptr<Worker> worker_;
  std::string address_;
};

}  // namespace

bool UcxAvailable() noexcept { return true; }

Result<std::unique_ptr<Listener>> ListenUcx(const std::string& address) {
  FERRY_ASSIGN_OR_RAISE(Endpoint where, Resolve(address));
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Worker> worker, Worker::Create());
  auto port = worker->Listen(reinterpret_cast<const sockaddr*>(&where.addr), where.addrlen);
  if (!port.ok()) {
    return Status(port.status().code(),
                  "cannot listen on " + address + ": " + port.status().message());
  }
  return std::unique_ptr<Listener>(
      std::make_unique<UcxListener>(std::move(worker), JoinHostPort(where.host, *port)));
}

Result<std::unique_ptr<Connection>> ConnectUcx(const std::string& address,
                                               std::chrono::milliseconds timeout) {
  FERRY_ASSIGN_OR_RAISE(Endpoint where, Resolve(address));
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Worker> worker, Worker::Create());
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Peer> peer,
                        worker->Connect(reinterpret_cast<const sockaddr*>(&where.addr),
                                        where.addrlen, address, SameHost(where.addr), timeout));
  return std::unique_ptr<Connection>(std::make_unique<UcxConnection>(std::move(worker), peer));
}

}  // namespace ferry::transport

#else  // !FERRY_WITH_UCX

namespace ferry::transport {

bool UcxAvailable() noexcept { return false; }

Result<std::unique_ptr<Listener>> ListenUcx(const std::string& /*address*/) {
  return Status(ENOTSUP, "this build of ferry has no UCX transport");
}

Result<std::unique_ptr<Connection>> ConnectUcx(const std::string& /*address*/,
                                               std::chrono::milliseconds /*timeout*/) {
  return Status(ENOTSUP, "this build of ferry has no UCX transport");
}

}  // namespace ferry::transport

#endif  // FERRY_WITH_UCX
