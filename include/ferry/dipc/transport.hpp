// The transport interface of the Dissociated IPC protocol: untagged (metadata) messages and
// tagged (body, want_data, free_data) messages matched by tag and mask. Every transport
// (in-process, shared memory, UCX) implements it, and one conformance suite tests them all.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "ferry/format/result.hpp"
#include "ferry/ipc/bytes.hpp"
#include "ferry/ipc/sink.hpp"

namespace ferry::dipc {

/// A received tagged message: the sender's full tag and the payload, owned by the receiver.
struct TaggedMessage {
  uint64_t tag = 0;
  ipc::SharedBytes payload;
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
  virtual Result<ipc::SharedBytes> Receive(std::chrono::milliseconds timeout) = 0;
  /// The oldest tagged message whose tag satisfies `(tag & mask) == (want & mask)`.
  virtual Result<TaggedMessage> ReceiveTagged(uint64_t want, uint64_t mask,
                                              std::chrono::milliseconds timeout) = 0;
  /// Close this end; the peer's receives drain what was sent, then fail with EPIPE.
  virtual void Close() = 0;
};

/// Two connected in-process ends (for tests and threads). Messages are copied once, into the
/// receiver's queue.
std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> MakeInProcessPair();

}  // namespace ferry::dipc
