// The server's end of a UCX connection.
#if FERRY_WITH_UCX

#include "transport/ucx/server_connection.hpp"

#include <cerrno>

namespace ferry::transport::internal::ucx {

Result<std::unique_ptr<ServerConnection>> ServerConnection::Accept(std::shared_ptr<Context> context,
                                                                   ucp_conn_request_h request,
                                                                   TransportLimits limits,
                                                                   bool* taken,
                                                                   std::unique_ptr<Worker> worker) {
  *taken = false;
  if (worker == nullptr) {
    FERRY_ASSIGN_OR_RAISE(worker, Worker::Make(std::move(context)));
  }
  std::unique_ptr<ServerConnection> conn(
      new ServerConnection(std::move(worker), std::move(limits)));
  {
    // Before the thread starts, this thread owns the worker.
    auto registering = RegisterGuard();
    *taken = true;
    FERRY_ASSIGN_OR_RAISE(conn->ep_, AcceptRequest(conn->worker_->handle(), request,
                                                   &UcxConnection::OnEndpointError, conn.get()));
    conn->peer_ = RemoteAddress(conn->ep_);
  }
  FERRY_RETURN_NOT_OK(conn->StartWorker());
  return conn;
}

ServerConnection::~ServerConnection() { Close(); }

void ServerConnection::Poll() {
  SendAnswer();
  ucp_tag_recv_info_t info{};
  while (ucp_tag_message_h m = ucp_tag_probe_nb(worker_->handle(), 0, 0, 1, &info)) {
    const uint64_t tag = info.sender_tag;
    const uint64_t length = info.length;
    Take(m, info, [this, tag, length](ucs_status_t status, SharedBytes bytes) {
      if (status == UCS_ERR_MESSAGE_TRUNCATED) {
        Fail("the client sent a " + std::to_string(length) +
                 "-byte tagged message, over the limit of " +
                 std::to_string(limits_.max_tagged_bytes) + " bytes",
             true);
      } else if (status != UCS_OK) {
        Fail(std::string("a message from the client was lost on the way (UCX: ") +
                 ucs_status_string(status) + ")",
             true);
      } else if (tag == kHelloTag) {
        Answer(bytes);
      } else {
        (void)inbox_.PushTagged(TaggedMessage{tag, std::move(bytes)});
      }
    });
  }
}

void ServerConnection::Answer(const SharedBytes& hello) {
  uint8_t flags = 0;
  std::string address;
  std::string trace;
  if (!DecodeHello(hello, &flags, &address, &trace) || ep_ == nullptr) return;  // not ours
  {
    std::lock_guard lock(trace_mutex_);
    trace_ = std::move(trace);
  }
  uint8_t granted = flags & (kHelloErrors | kHelloPairs | kHelloReuse);
  sends_pairs_.store((granted & kHelloPairs) != 0, std::memory_order_release);
  reusable_.store((granted & kHelloReuse) != 0);
  auto wired = std::make_shared<Completion>();
  if ((flags & kHelloFastPath) != 0 && !address.empty() && fast_ep_ == nullptr) {
    Result<ucp_ep_h> fast = ConnectToWorker(worker_->handle(), address);
    if (fast.ok()) {
      fast_ep_ = *fast;
      granted |= kHelloFastPath;
      // Answered once the fast endpoint is wired up: an endpoint without error handling that
      // fails mid-wire-up trips UCX 1.13, so no traffic may start before it is done.
      FlushEndpoint(fast_ep_, new Pending{wired, nullptr, worker_.get()});
    }
  }
  if (fast_ep_ == nullptr) wired->Done(UCS_OK);
  // Gets are emulated on one host before UCX 1.16, and over TCP lanes in every UCX: the server's
  // worker would copy each get's bytes into messages, which costs more than one rendezvous send
  // of the packed body (across hosts on TCP: 0.45-0.48 s against 0.55-0.60 s for 1.1 GiB).
  const bool emulated = fast_ep_ != nullptr ? !OneSidedGetsOnOneHost() : GetsEmulated(ep_);
  packed_preferred_ = emulated && (flags & kHelloBufferLists) == 0;
  extensions_ = true;
  answer_ = std::make_shared<std::string>(
      EncodeHello(granted, (granted & kHelloFastPath) != 0 ? worker_->address() : std::string()));
  answer_ready_ = wired;
  SendAnswer();
}

void ServerConnection::SendAnswer() {
  if (!answer_ || !answer_ready_->Wait(std::chrono::steady_clock::now())) return;
  if (answer_ready_->status() != UCS_OK) {
    answer_.reset();
    Fail("the client went away while its fast path was set up", true);
    return;
  }
  // On the checked endpoint: the client waits for this before it sends its request.
  auto* pending = new Pending{std::make_shared<Completion>(), answer_, worker_.get()};
  SendTaggedMessage(ep_, kHelloTag, {{answer_->data(), answer_->size()}}, pending);
  answer_.reset();
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
