// Internal to the UCX transport: the client's end of a connection.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/ucx/connection.hpp"

namespace ferry::transport::internal::ucx {

/// A client holds at most this many bytes of bodies it has not asked for (read-ahead); a body
/// beyond it stays with the sender, so a client that stops reading makes the server wait.
constexpr int64_t kReadAheadBytes = int64_t{64} << 20;
/// About the most bytes of bodies a poll reads ahead in one round under the worker's lock.
constexpr int64_t kReadAheadPerPoll = int64_t{2} << 20;

/// A client's end: its own context and worker, an endpoint to the listener's socket address
/// and, with ferry's extensions on one host, a fast endpoint from worker addresses. Bodies come
/// in on demand: within the read-ahead, when a receive asks for them by tag and mask, or into a
/// receive posted by Expect. Type-1 buffers are read with RMA gets using the URI's
/// remote_handle. Owned by the caller of ConnectUcx.
class ClientConnection final : public UcxConnection {
 public:
  /// Connect to the listener at `addr` and wait (up to the timeout) until the endpoint is up;
  /// with `options.extensions`, say hello and, when `same_host`, set up the fast path. When
  /// `other_host` (the address is none of this host's), the connection's context opens no
  /// shared-memory transport, which could reach nothing there: its worker is made in about 1 ms
  /// instead of 5 (unless the user set UCX_TLS).
  static Result<std::unique_ptr<ClientConnection>> Connect(const sockaddr* addr, socklen_t addrlen,
                                                           const std::string& address,
                                                           bool same_host, bool other_host,
                                                           const ConnectOptions& options);
  ~ClientConnection() override;

  Result<TaggedMessage> ReceiveTagged(uint64_t want, uint64_t mask,
                                      std::chrono::milliseconds timeout) override;
  void Expect(uint64_t tag, int64_t size) override;
  bool posts_receives() const override { return true; }
  Status Fetch(std::span<const BufferRef> refs, std::chrono::milliseconds timeout,
               FetchedBody* out) override;
  Result<std::unique_ptr<FetchInFlight>> StartFetch(std::span<const BufferRef> refs,
                                                    std::chrono::milliseconds timeout) override;
  bool fetches_in_background() const override { return true; }
  bool reusable() const override { return reusable_.load(std::memory_order_acquire); }

  /// For tests: `hook` runs just before each read-ahead, on the thread that polls, with the
  /// worker's lock held (an empty one: none). Set it while the connection is quiet.
  void SetReadAheadHookForTest(std::function<void(Worker&)> hook);

 private:
  ClientConnection(std::unique_ptr<Worker> worker, ConnectOptions options)
      : UcxConnection(std::move(worker), options.limits, true), options_(std::move(options)) {}
  Status Hello(bool same_host);
  void Poll() override;
  void TakeFor(ucp_tag_message_h message, const ucp_tag_recv_info_t& info, int64_t want);
  void Landed(uint64_t tag, int64_t held, int64_t want, ucs_status_t status, SharedBytes bytes);
  void DropPosted(uint64_t want, uint64_t mask);
  /// Split a pair (kPairTagBit) into its body, queued under the body's tag, and its metadata,
  /// queued after it; false (the connection failed, naming why) when the pair is malformed.
  bool SplitPair(uint64_t tag, const SharedBytes& bytes);
  class UcxFetch;
  Result<FetchedBody> FinishFetch(UcxFetch& fetch, std::chrono::milliseconds timeout);
  void ReleaseRemote() override;
  void TearDown() override;

  const ConnectOptions options_;

  /// A receive waiting for a tagged message: the progress thread looks for it in UCX's queue
  /// by tag and mask, past what the read-ahead left there.
  struct Want {
    int64_t id = 0;
    uint64_t tag = 0;
    uint64_t mask = 0;
    bool in_flight = false;  // a match is landing
  };
  // Guarded by mutex_.
  std::vector<Want> wants_;
  int64_t next_want_ = 0;
  int64_t held_bytes_ = 0;  // body bytes landing or waiting in the inbox
  bool answered_ = false;   // the server answered our hello
  uint8_t granted_ = 0;
  std::atomic<bool> takes_pairs_{false};  // the server granted kHelloPairs
  std::atomic<bool> reusable_{false};     // the server granted kHelloReuse
  std::string server_address_;
  std::condition_variable answer_changed_;

  /// A receive posted by Expect: its request until it settles.
  struct Posted {
    void* request = nullptr;
    bool settled = false;
  };
  std::mutex posted_mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<Posted>> posted_;  // by tag
  // Under the worker's lock.
  std::function<void(Worker&)> read_ahead_hook_;
  ucp_rkey_h rkey_ = nullptr;
  ucp_ep_h rkey_ep_ = nullptr;  // the endpoint rkey_ was unpacked for
};

}  // namespace ferry::transport::internal::ucx
