// The in-process transport: two ends sharing one pair of mailboxes.
#include "ferry/transport/in_process.hpp"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "ferry/core/host_buffer.hpp"
#include "transport/mailbox.hpp"

namespace ferry::transport {

namespace {

// Two in-process ends: each pushes into the other's mailbox, and lends regions to the other.
struct Shared {
  explicit Shared(std::shared_ptr<Clock> clock)
      : to{internal::Mailbox(0, clock), internal::Mailbox(0, std::move(clock))} {}
  internal::Mailbox to[2];  // to[i]: messages for end i, timed by the pair's clock
  std::mutex mutex;
  std::vector<std::shared_ptr<Region>> lent[2];  // lent[i]: regions end i may read
};

class InProcessEnd final : public Connection {
 public:
  InProcessEnd(std::shared_ptr<Shared> shared, int self)
      : shared_(std::move(shared)), self_(self) {}
  ~InProcessEnd() override { Close(); }

  Status Send(std::span<const ByteSpan> pieces) override {
    FERRY_ASSIGN_OR_RAISE(SharedBytes message, SharedBytes::Gather(pieces));
    return shared_->to[1 - self_].PushUntagged(std::move(message));
  }

  Status SendTagged(uint64_t tag, std::span<const ByteSpan> pieces) override {
    FERRY_ASSIGN_OR_RAISE(SharedBytes message, SharedBytes::Gather(pieces));
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

  Status ShareRegion(const std::shared_ptr<Region>& region) override {
    if (region == nullptr) return Status::Invalid("the region is NULL");
    std::lock_guard lock(shared_->mutex);
    shared_->lent[1 - self_].push_back(region);
    return Status::OK();
  }

  // Copies each buffer out of the region the peer lent that holds it, as a UCX get would.
  Status Fetch(std::span<const BufferRef> refs, std::chrono::milliseconds /*timeout*/,
               FetchedBody* out) override {
    std::vector<std::shared_ptr<Region>> regions;
    {
      std::lock_guard lock(shared_->mutex);
      regions = shared_->lent[self_];
    }
    FetchedBody& body = *out;
    body.buffers.clear();
    std::vector<const uint8_t*> from(refs.size(), nullptr);
    uint64_t total = 0;
    for (size_t i = 0; i < refs.size(); ++i) {
      const BufferRef& ref = refs[i];
      for (const auto& r : regions) {
        const uint64_t base = r->WireAddress(0);
        const auto size = static_cast<uint64_t>(r->size());
        if (ref.address >= base && ref.address - base <= size &&
            ref.length <= size - (ref.address - base)) {
          from[i] = r->data() + (ref.address - base);
          break;
        }
      }
      if (from[i] == nullptr && ref.length > 0) {
        return Status::Invalid("buffer " + std::to_string(i) + " (address " +
                               std::to_string(ref.address) + ", length " +
                               std::to_string(ref.length) + ") lies outside every region lent");
      }
      total = (total + 7) / 8 * 8;
      body.buffers.push_back(BufferRef{total, ref.length});
      total += ref.length;
    }
    auto buffer = std::make_shared<HostBuffer>();
    FERRY_RETURN_NOT_OK(buffer->Resize(static_cast<int64_t>(total)));
    for (size_t i = 0; i < refs.size(); ++i) {
      if (refs[i].length > 0) {
        std::memcpy(buffer->data() + body.buffers[i].address, from[i], refs[i].length);
      }
    }
    body.bytes = SharedBytes{buffer->data(), buffer->size(), buffer};
    body.borrowed = false;
    return Status::OK();
  }

 private:
  std::shared_ptr<Shared> shared_;
  int self_;
};

}  // namespace

std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> MakeInProcessPair(
    std::shared_ptr<Clock> clock) {
  auto shared = std::make_shared<Shared>(std::move(clock));
  return {std::make_unique<InProcessEnd>(shared, 0), std::make_unique<InProcessEnd>(shared, 1)};
}

}  // namespace ferry::transport
