// The transport interface of the Dissociated IPC protocol: untagged (metadata) messages and
// tagged (body, want_data, free_data) messages matched by tag and mask. Every transport
// (in-process, shared memory, UCX) implements it, and one conformance suite tests them all.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ferry/dipc/protocol.hpp"
#include "ferry/format/result.hpp"
#include "ferry/ipc/bytes.hpp"
#include "ferry/ipc/sink.hpp"

namespace ferry::dipc {

/// A received tagged message: the sender's full tag and the payload, owned by the receiver.
struct TaggedMessage {
  uint64_t tag = 0;
  ipc::SharedBytes payload;
};

/// Tag of the transports' own control messages (a region's descriptor or rkey). Its reserved
/// bits are set, so it never matches a body, want_data or free_data tag.
constexpr uint64_t kRegionTag = 0x00F0000000000000ULL;

/// Memory a server exposes to its clients for type-1 bodies: a shared-memory segment (memfd) or
/// UCX-registered memory. The server writes bodies into it and sends (wire address, length)
/// pairs. Owned by the listener that made it and by every connection it was shared on.
class Region {
 public:
  virtual ~Region() = default;
  /// The local mapping, writable by the server.
  virtual uint8_t* data() const noexcept = 0;
  virtual int64_t size() const noexcept = 0;
  /// The number a pair carries for the byte at `offset`: an offset tagged with the region's
  /// index for shared memory, a virtual address for UCX.
  virtual uint64_t WireAddress(int64_t offset) const noexcept = 0;
  /// The URI's remote_handle for this region (a packed UCX rkey), or empty.
  virtual std::string remote_handle() const = 0;
};

/// Type-1 buffers brought to the client. `bytes` covers them all; `buffers[i]` is buffer i's
/// offset and length within `bytes`. When `borrowed`, the bytes are the server's memory, mapped
/// in place (no copy), and free_data may go only once every array over them is released;
/// otherwise they are a local copy and free_data can go at once.
struct FetchedBody {
  ipc::SharedBytes bytes;
  std::vector<BufferRef> buffers;
  bool borrowed = false;
};

/// One end of a connection. Sends gather `pieces` into one message (a transport may send them
/// without copying); receives block up to `timeout` and fail with ETIMEDOUT, or with EPIPE once
/// the peer has closed and nothing matching is left. Thread-safe: any thread may send or
/// receive.
class Connection {
 public:
  virtual ~Connection() = default;
  [[nodiscard]] virtual Status Send(std::span<const ipc::ByteSpan> pieces) = 0;
  [[nodiscard]] virtual Status SendTagged(uint64_t tag, std::span<const ipc::ByteSpan> pieces) = 0;
  /// Send a metadata message and its body's tagged message together: transports may do it in
  /// one operation (shared memory: one sendmsg). By default, Send then SendTagged.
  [[nodiscard]] virtual Status SendMessageAndBody(std::span<const ipc::ByteSpan> metadata,
                                                  uint64_t tag,
                                                  std::span<const ipc::ByteSpan> body);
  virtual Result<ipc::SharedBytes> Receive(std::chrono::milliseconds timeout) = 0;
  /// A hint: a tagged message with exactly `tag`, of at most `size` bytes, is expected. A
  /// transport may post a receive for it now, into memory of its own (UCX does, so a body is
  /// taken the moment it arrives); a larger message then fails the connection with an error
  /// naming both sizes. By default nothing.
  virtual void Expect(uint64_t tag, int64_t size);
  /// Whether Expect does anything here (callers may skip working out the size otherwise).
  virtual bool posts_receives() const { return false; }
  /// The oldest tagged message whose tag satisfies `(tag & mask) == (want & mask)`.
  virtual Result<TaggedMessage> ReceiveTagged(uint64_t want, uint64_t mask,
                                              std::chrono::milliseconds timeout) = 0;
  /// Close this end; the peer's receives drain what was sent, then fail with EPIPE.
  virtual void Close() = 0;

  /// Server side: make `region` readable by the peer (shared memory passes its descriptor; UCX
  /// sends the packed rkey), before the first pair that points into it. ENOTSUP by default.
  [[nodiscard]] virtual Status ShareRegion(const std::shared_ptr<Region>& region);
  /// Client side: bring the buffers `refs` (wire addresses into regions the peer shared) here.
  /// A ref outside every shared region is an error naming it. Shared memory maps them in place;
  /// UCX gets them into one local allocation. ENOTSUP by default.
  virtual Result<FetchedBody> Fetch(std::span<const BufferRef> refs,
                                    std::chrono::milliseconds timeout);
};

/// A listening endpoint of one transport. Thread-safe.
class Listener {
 public:
  virtual ~Listener() = default;
  /// The next client, waiting up to `timeout` (ETIMEDOUT), or ECANCELED once closed.
  virtual Result<std::unique_ptr<Connection>> Accept(std::chrono::milliseconds timeout) = 0;
  /// The URI scheme ("shm", "ucx") and the authority clients connect to (a socket path, or
  /// host:port).
  virtual std::string scheme() const = 0;
  virtual std::string address() const = 0;
  /// Memory for type-1 bodies, `size` bytes, to be shared on connections. ENOTSUP where the
  /// transport has none.
  virtual Result<std::shared_ptr<Region>> CreateRegion(int64_t size);
  /// Stop accepting; blocked Accept calls return ECANCELED.
  virtual void Close() = 0;
};

/// Two connected in-process ends (for tests and threads). Messages are copied once, into the
/// receiver's queue.
std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> MakeInProcessPair();

/// Listen with the transport a URI scheme names ("shm" or "ucx") at `address` (a socket path or
/// host:port; empty picks a fresh one). Errors name an unknown scheme, or one this build lacks.
Result<std::unique_ptr<Listener>> Listen(const std::string& scheme, const std::string& address);
/// Connect to a listener, waiting up to `timeout`.
Result<std::unique_ptr<Connection>> Connect(const std::string& scheme, const std::string& address,
                                            std::chrono::milliseconds timeout);

}  // namespace ferry::dipc
