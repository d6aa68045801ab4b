// The in-process transport: two ends sharing one pair of mailboxes.
#include "ferry/transport/in_process.hpp"

#include <cerrno>
#include <string>

#include "transport/mailbox.hpp"

namespace ferry::transport {

namespace {

Result<SharedBytes> Gather(std::span<const ByteSpan> pieces) {
  return SharedBytes::Gather(pieces.data(), pieces.size());
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

  Status Send(std::span<const ByteSpan> pieces) override {
    FERRY_ASSIGN_OR_RAISE(SharedBytes message, Gather(pieces));
    return shared_->to[1 - self_].PushUntagged(std::move(message));
  }

  Status SendTagged(uint64_t tag, std::span<const ByteSpan> pieces) override {
    FERRY_ASSIGN_OR_RAISE(SharedBytes message, Gather(pieces));
    return shared_->to[1 - self_].PushTagged(TaggedMessage{tag, std::move(message)});
  }

  Result<SharedBytes> Receive(std::chrono::milliseconds timeout) override {
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

std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> MakeInProcessPair() {
  auto shared = std::make_shared<Shared>();
  return {std::make_unique<InProcessEnd>(shared, 0), std::make_unique<InProcessEnd>(shared, 1)};
}

}  // namespace ferry::transport
