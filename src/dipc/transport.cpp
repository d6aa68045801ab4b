// The in-process transport: two ends sharing one pair of queues.
#include "ferry/dipc/transport.hpp"

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>

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

// What one direction carries, and whether its sender closed.
struct Queue {
  std::deque<ipc::SharedBytes> untagged;
  std::deque<TaggedMessage> tagged;
  bool closed = false;
};

struct Shared {
  std::mutex mutex;
  std::condition_variable changed;
  Queue to[2];  // to[i]: messages for end i
};

class InProcessEnd final : public Connection {
 public:
  InProcessEnd(std::shared_ptr<Shared> shared, int self)
      : shared_(std::move(shared)), self_(self) {}
  ~InProcessEnd() override { Close(); }

  Status Send(std::span<const ipc::ByteSpan> pieces) override {
    FERRY_ASSIGN_OR_RAISE(ipc::SharedBytes message, Gather(pieces));
    return Push([&](Queue& q) { q.untagged.push_back(std::move(message)); });
  }

  Status SendTagged(uint64_t tag, std::span<const ipc::ByteSpan> pieces) override {
    FERRY_ASSIGN_OR_RAISE(ipc::SharedBytes message, Gather(pieces));
    return Push([&](Queue& q) { q.tagged.push_back(TaggedMessage{tag, std::move(message)}); });
  }

  Result<ipc::SharedBytes> Receive(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(shared_->mutex);
    Queue& in = shared_->to[self_];
    const bool ready =
        shared_->changed.wait_for(lock, timeout, [&] { return !in.untagged.empty() || Closed(); });
    if (!in.untagged.empty()) {
      ipc::SharedBytes m = std::move(in.untagged.front());
      in.untagged.pop_front();
      return m;
    }
    if (!ready) return TimedOut("an untagged message");
    return PeerClosed("an untagged message");
  }

  Result<TaggedMessage> ReceiveTagged(uint64_t want, uint64_t mask,
                                      std::chrono::milliseconds timeout) override {
    std::unique_lock lock(shared_->mutex);
    Queue& in = shared_->to[self_];
    auto match = [&]() {
      for (auto it = in.tagged.begin(); it != in.tagged.end(); ++it) {
        if ((it->tag & mask) == (want & mask)) return it;
      }
      return in.tagged.end();
    };
    const bool ready = shared_->changed.wait_for(
        lock, timeout, [&] { return match() != in.tagged.end() || Closed(); });
    if (auto it = match(); it != in.tagged.end()) {
      TaggedMessage m = std::move(*it);
      in.tagged.erase(it);
      return m;
    }
    if (!ready) return TimedOut("a tagged message");
    return PeerClosed("a tagged message");
  }

  void Close() override {
    {
      std::lock_guard lock(shared_->mutex);
      if (shared_->to[1 - self_].closed) {
        shared_->changed.notify_all();
        return;
      }
      shared_->to[1 - self_].closed = true;  // the peer sees this end gone
      shared_->to[self_].closed = true;      // and this end receives nothing more
    }
    shared_->changed.notify_all();
  }

 private:
  template <typename F>
  Status Push(F&& push) {
    {
      std::lock_guard lock(shared_->mutex);
      if (shared_->to[1 - self_].closed) {
        return Status(EPIPE, "the connection is closed");
      }
      push(shared_->to[1 - self_]);
    }
    shared_->changed.notify_all();
    return Status::OK();
  }

  bool Closed() const { return shared_->to[self_].closed; }

  static Status TimedOut(const char* what) {
    return Status(ETIMEDOUT, std::string("timed out waiting for ") + what);
  }
  static Status PeerClosed(const char* what) {
    return Status(EPIPE, std::string("the peer closed the connection while waiting for ") + what);
  }

  std::shared_ptr<Shared> shared_;
  int self_;
};

}  // namespace

std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> MakeInProcessPair() {
  auto shared = std::make_shared<Shared>();
  return {std::make_unique<InProcessEnd>(shared, 0), std::make_unique<InProcessEnd>(shared, 1)};
}

}  // namespace ferry::dipc
