// The in-process transport: two ends sharing one pair of queues.
#include "ferry/dipc/transport.hpp"

#include <cerrno>
#include <string>

#include "dipc/mailbox.hpp"
#include "ferry/dipc/shm_transport.hpp"
#include "ferry/dipc/ucx_transport.hpp"
#include "ferry/format/buffer.hpp"

namespace ferry::dipc {

namespace {

Result<ipc::SharedBytes> Gather(std::span<const ipc::ByteSpan> pieces) {
  auto buffer = std::make_shared<Buffer>();
  int64_t total = 0;
  for (const ipc::ByteSpan& p : pieces) {
    if (p.size < 0 || (p.size > 0 && p.data == nullptr)) {
      return Status::Invalid("a message piece is NULL or has a negative size");
    }
    total += p.size;
  }
  FERRY_RETURN_NOT_OK(buffer->Reserve(total));
  for (const ipc::ByteSpan& p : pieces) FERRY_RETURN_NOT_OK(buffer->Append(p.data, p.size));
  const uint8_t* data = buffer->data();
  return ipc::SharedBytes{data, total, std::move(buffer)};
}

// Two in-process ends: each pushes into the other's mailbox.
struct Shared {
  internal::Mailbox to[2];  // to[i]: messages for end i
};

class InProcessEnd final : public Connection {
 public:
  InProcessEnd(std::shared_ptr<Shared> shared, int self)
      : shared_(std::move(shared)), self_(self) {}
  ~InProcessEnd() override { Close(); }

  Status Send(std::span<const ipc::ByteSpan> pieces) override {
    FERRY_ASSIGN_OR_RAISE(ipc::SharedBytes message, Gather(pieces));
    return shared_->to[1 - self_].PushUntagged(std::move(message));
  }

  Status SendTagged(uint64_t tag, std::span<const ipc::ByteSpan> pieces) override {
    FERRY_ASSIGN_OR_RAISE(ipc::SharedBytes message, Gather(pieces));
    return shared_->to[1 - self_].PushTagged(TaggedMessage{tag, std::move(message)});
  }

  Result<ipc::SharedBytes> Receive(std::chrono::milliseconds timeout) override {
    return shared_->to[self_].PopUntagged(timeout);
  }

  Result<TaggedMessage> ReceiveTagged(uint64_t want, uint64_t mask,
                                      std::chrono::milliseconds timeout) override {
    return shared_->to[self_].PopTagged(want, mask, timeout);
  }

  void Close() override {
    shared_->to[1 - self_].Close();  // the peer sees this end gone
    shared_->to[self_].Close("this end closed the connection");
  }

 private:
  std::shared_ptr<Shared> shared_;
  int self_;
};

}  // namespace

Status Connection::SendMessageAndBody(std::span<const ipc::ByteSpan> metadata, uint64_t tag,
                                      std::span<const ipc::ByteSpan> body) {
  FERRY_RETURN_NOT_OK(Send(metadata));
  return SendTagged(tag, body);
}

void Connection::Expect(uint64_t /*tag*/, int64_t /*size*/) {}

Status Connection::ShareRegion(const std::shared_ptr<Region>& /*region*/) {
  return Status(ENOTSUP, "this transport cannot share memory regions (no type-1 bodies)");
}

Result<FetchedBody> Connection::Fetch(std::span<const BufferRef> /*refs*/,
                                      std::chrono::milliseconds /*timeout*/) {
  return Status(ENOTSUP, "this transport cannot fetch type-1 bodies");
}

Result<std::shared_ptr<Region>> Listener::CreateRegion(int64_t /*size*/) {
  return Status(ENOTSUP, "this transport has no memory regions (no type-1 bodies)");
}

Result<std::unique_ptr<Listener>> Listen(const std::string& scheme, const std::string& address) {
  if (scheme == "shm") return ListenShm(address);
  if (scheme == "ucx") return ListenUcx(address);
  return Status::Invalid("unknown transport \"" + scheme + "\" (expected shm or ucx)");
}

Result<std::unique_ptr<Connection>> Connect(const std::string& scheme, const std::string& address,
                                            std::chrono::milliseconds timeout) {
  if (scheme == "shm") return ConnectShm(address, timeout);
  if (scheme == "ucx") return ConnectUcx(address, timeout);
  return Status::Invalid("unknown transport \"" + scheme + "\" (expected shm or ucx)");
}

std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> MakeInProcessPair() {
  auto shared = std::make_shared<Shared>();
  return {std::make_unique<InProcessEnd>(shared, 0), std::make_unique<InProcessEnd>(shared, 1)};
}

}  // namespace ferry::dipc
