// What every transport shares: the interface's defaults, and the choice of a transport by URI
// scheme.
#include "ferry/transport/transport.hpp"

#include <cerrno>
#include <memory>
#include <string>
#include <utility>

#include "ferry/transport/shm.hpp"
#include "ferry/transport/ucx.hpp"

namespace ferry::transport {

Status Connection::SendMessageAndBody(std::span<const ByteSpan> metadata, uint64_t tag,
                                      std::span<const ByteSpan> body) {
  FERRY_RETURN_NOT_OK(Send(metadata));
  return SendTagged(tag, body);
}

void Connection::Expect(uint64_t /*tag*/, int64_t /*size*/) {}

Result<MessageAndBody> Connection::ReceiveMessageAndBody(uint64_t want, uint64_t mask,
                                                         std::chrono::milliseconds timeout) {
  FERRY_ASSIGN_OR_RAISE(SharedBytes message, Receive(timeout));
  MessageAndBody out{std::move(message), std::nullopt};
  Result<TaggedMessage> body = ReceiveTagged(want, mask, std::chrono::milliseconds(0));
  if (body.ok()) out.body = std::move(*body);
  return out;
}

Status Connection::ShareRegion(const std::shared_ptr<Region>& /*region*/) {
  return Status::NotSupported("this transport cannot share memory regions (no type-1 bodies)");
}

Status Connection::Fetch(std::span<const BufferRef> /*refs*/, std::chrono::milliseconds /*timeout*/,
                         FetchedBody* /*out*/) {
  return Status::NotSupported("this transport cannot fetch type-1 bodies");
}

namespace {

// What the default StartFetch returns: a Fetch that already ran.
class FinishedFetch final : public FetchInFlight {
 public:
  explicit FinishedFetch(Result<FetchedBody> result) : result_(std::move(result)) {}
  Result<FetchedBody> Wait(std::chrono::milliseconds /*timeout*/) override {
    return std::move(result_);
  }

 private:
  Result<FetchedBody> result_;
};

}  // namespace

Result<std::unique_ptr<FetchInFlight>> Connection::StartFetch(std::span<const BufferRef> refs,
                                                              std::chrono::milliseconds timeout) {
  FetchedBody body;
  Status st = Fetch(refs, timeout, &body);
  return std::unique_ptr<FetchInFlight>(std::make_unique<FinishedFetch>(
      st.ok() ? Result<FetchedBody>(std::move(body)) : Result<FetchedBody>(std::move(st))));
}

Result<std::shared_ptr<Region>> Listener::CreateRegion(int64_t /*size*/) {
  return Status::NotSupported("this transport has no memory regions (no type-1 bodies)");
}

// `memory` is a sink parameter that the default implementation drops.
Result<std::shared_ptr<Region>> Listener::RegisterRegion(
    LendableBytes /*memory*/) {  // NOLINT(performance-unnecessary-value-param)
  return Status::NotSupported("this transport cannot lend memory it did not make");
}

Result<std::unique_ptr<Listener>> Listen(const std::string& scheme, const std::string& address,
                                         TransportLimits limits) {
  if (scheme == "shm") return ListenShm(address, std::move(limits));
  if (scheme == "ucx") return ListenUcx(address, std::move(limits));
  return Status::Invalid("unknown transport \"" + scheme + "\" (expected shm or ucx)");
}

Result<std::unique_ptr<Connection>> Connect(const std::string& scheme, const std::string& address,
                                            const ConnectOptions& options) {
  if (scheme == "shm") return ConnectShm(address, options);
  if (scheme == "ucx") return ConnectUcx(address, options);
  return Status::Invalid("unknown transport \"" + scheme + "\" (expected shm or ucx)");
}

}  // namespace ferry::transport
