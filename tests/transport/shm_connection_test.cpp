// The shared-memory connection's sends to a peer that takes nothing (stopped, or too slow): a
// send waits for room in the socket up to the timeout by the connection's clock, then fails the
// connection, at the deadline and not a tick before.
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "support/clock_util.hpp"
#include "support/test_util.hpp"
#include "transport/shm_common.hpp"

namespace ferry::transport {
namespace {

using namespace std::chrono_literals;
using ferry::testing::AtTheDeadline;

TEST(ShmConnection, ASendToAPeerThatTakesNothingFailsAtTheTimeout) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  auto clock = std::make_shared<ManualClock>();
  TransportLimits limits;
  limits.timeout = 30s;
  limits.clock = clock;
  // fds[1] is the peer: nothing reads it, so the socket fills.
  std::unique_ptr<Connection> sender = internal::shm::MakeConnection(fds[0], limits);
  const std::vector<uint8_t> body(8 << 20, 7);
  const ByteSpan piece{body.data(), static_cast<int64_t>(body.size())};
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "the peer took nothing for 30000 ms",
                     AtTheDeadline(*clock, 30s, [&] {
                       return sender->SendTagged(1, {&piece, 1});
                     }));
  // The connection failed: what follows says why.
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "closed", sender->SendTagged(2, {&piece, 1}));
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "the peer took nothing for 30000 ms",
                     sender->Receive(0ms));
  sender.reset();
  close(fds[1]);
}

}  // namespace
}  // namespace ferry::transport
