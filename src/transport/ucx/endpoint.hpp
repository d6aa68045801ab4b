// Internal to the UCX transport: endpoints and the operations on them. Every function here runs
// on the progress thread of the worker that owns the endpoint.
#pragma once

#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ferry/core/bytes.hpp"
#include "ferry/core/clock.hpp"
#include "ferry/core/result.hpp"

namespace ferry::transport::internal::ucx {

/// How long a look at an unfinished completion naps (Completion::Wait with a deadline already
/// past): Linux's default timer slack, all that such a futex wait slept before the nap was
/// asked for (about 56 us with the wake-up), and what UcxConnection::Await and the type-1
/// fetch were measured with. Spinning there instead read small batches at about half the rate.
constexpr std::chrono::microseconds kLookNap{50};

/// Waits for one or more UCX operations. The first failure is kept.
class Completion {
 public:
  explicit Completion(int count = 1) : remaining_(count) {}
  /// Record one finished operation (progress thread).
  void Done(ucs_status_t status);
  /// Give up: waiters return now with `status` (the connection failed). Operations that finish
  /// later are ignored.
  void Abandon(ucs_status_t status);
  /// Wait until every operation finished or `deadline` passed; false on timeout. A deadline
  /// already past still naps while an operation is unfinished, for kLookNap whatever the
  /// thread's timer slack (a real-time thread has none), unless the operation finishes first;
  /// UcxConnection::Await relies on that nap. A finished completion returns at once.
  bool Wait(std::chrono::steady_clock::time_point deadline);
  /// The same, with `deadline` by `clock`: how a timeout of the connection's is waited out.
  bool Wait(const Clock& clock, Clock::time_point deadline);
  ucs_status_t status();

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  int remaining_;
  ucs_status_t status_ = UCS_OK;
};

class Worker;

/// One operation in flight: the completion to report to, what the operation reads or writes
/// (kept alive until UCX is done with it, whoever waits or gives up), and the worker that tracks
/// its request. Freed by its callback, or by the worker's teardown if none ever comes.
struct Pending {
  std::shared_ptr<Completion> done;
  std::shared_ptr<const void> keep;
  Worker* worker = nullptr;
  // Set while the UCX call that makes the request runs: a callback UCX fires inside that call
  // (a forced close, a failed endpoint) is finished by the caller, which then holds the request.
  bool in_call = false;
  bool fired = false;
  ucs_status_t fired_status = UCS_OK;
};

/// Called when an endpoint fails (the peer died, closed or is unreachable); `arg` is what the
/// endpoint was made with. Runs inside progress.
using EndpointErrorHandler = void (*)(void* arg, ucp_ep_h ep, ucs_status_t status);

/// An endpoint to a listener's socket address, checked by UCX (peer error mode, keepalive).
Result<ucp_ep_h> ConnectToSocket(ucp_worker_h worker, const sockaddr* addr, socklen_t addrlen,
                                 EndpointErrorHandler on_error, void* arg);
/// An endpoint for a client's connection request, checked like the client's.
Result<ucp_ep_h> AcceptRequest(ucp_worker_h worker, ucp_conn_request_h request,
                               EndpointErrorHandler on_error, void* arg);
/// An endpoint to a worker address. Unchecked: UCX 1.13 gives checked endpoints only TCP lanes,
/// and this one exists for shared memory and CMA on one host; a checked endpoint to the same peer
/// watches it.
Result<ucp_ep_h> ConnectToWorker(ucp_worker_h worker, const std::string& address);

/// The address at the other end of `ep` ("host:port"), or "" when UCX cannot say.
std::string RemoteAddress(ucp_ep_h ep);
/// The address a connection request came from ("host:port"), or "" when UCX cannot say.
std::string RequestingAddress(ucp_conn_request_h request);

/// The transports of `ep`'s lanes ("tcp", "self", "rc_mlx5", ...), read from what
/// ucp_ep_print_info writes, the one report of them UCX 1.13 has; empty when it names none.
/// Costs a print into memory.
std::vector<std::string> LaneTransports(ucp_ep_h ep);
/// Whether UCX would emulate a get on `ep` with messages that the peer's worker copies: its
/// lanes are TCP (and self) only, and TCP has no one-sided read in any UCX. False when UCX names
/// no lane.
bool GetsEmulated(ucp_ep_h ep);

/// Whether one of `ep`'s lanes is UCX's shared memory (posix, sysv or xpmem), where a message
/// waits in the receiver's FIFO of a few dozen slots until the receiver's worker progresses.
/// Costs a print into memory (LaneTransports).
bool HasSharedMemoryLane(ucp_ep_h ep);

/// Send `pieces` as Active Message `id` with no header. Reports to `pending`.
void SendActiveMessage(ucp_ep_h ep, unsigned id, std::vector<ucp_dt_iov_t> pieces,
                       Pending* pending);
/// Send `pieces` as one tagged message. Reports to `pending`.
void SendTaggedMessage(ucp_ep_h ep, uint64_t tag, std::vector<ucp_dt_iov_t> pieces,
                       Pending* pending);
/// Read `length` bytes at the peer's `address` into `into`. Reports to `pending`.
void GetRemote(ucp_ep_h ep, ucp_rkey_h rkey, uint64_t address, void* into, size_t length,
               Pending* pending);
/// Flush `ep`: reports once what was sent on it has reached the peer, or the endpoint failed.
void FlushEndpoint(ucp_ep_h ep, Pending* pending);
/// Close `ep` gracefully (flush, then tell the peer) or, with `force`, at once (what is in
/// flight fails). Reports to `pending`, or (NULL) to nobody, tracked by `worker` either way.
void CloseEndpoint(Worker& worker, ucp_ep_h ep, bool force, Pending* pending = nullptr);

/// A byte vector as the pieces of a UCX I/O vector (empty pieces skipped). Errors name a NULL
/// piece or a negative size.
Result<std::vector<ucp_dt_iov_t>> ToIov(std::span<const ByteSpan> pieces);

}  // namespace ferry::transport::internal::ucx
