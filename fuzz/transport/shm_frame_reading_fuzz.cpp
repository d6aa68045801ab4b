// libFuzzer target for the shared-memory transport's frame reader: a peer at the other end of
// the Unix socket that sends arbitrary bytes (frame headers of any kind, lying lengths, frames cut
// short, descriptors promised and never passed) and then hangs up. Properties: the reader never
// crashes or leaks; each message it hands over is within the connection's limits; once the peer
// is gone every receive fails with an error, soon (the bytes end or are refused, never waited on
// for the connection's timeout).
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "transport/shm_connection.hpp"

namespace {

using namespace ferry;
using namespace ferry::transport;
using namespace std::chrono_literals;

constexpr int64_t kMaxMessage = int64_t{1} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return 0;
  // The peer: every byte, then the hang-up (a thread: the socket holds less than an input may).
  std::thread peer([fd = fds[1], data, size] {
    size_t sent = 0;
    while (sent < size) {
      const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
      if (n <= 0) break;  // the reader closed first, on a malformed frame
      sent += static_cast<size_t>(n);
    }
    ::close(fd);
  });
  TransportLimits limits;
  limits.max_message_bytes = kMaxMessage;
  limits.max_tagged_bytes = kMaxMessage;
  limits.timeout = 5s;  // a bound, never reached: the peer's hang-up ends every wait
  {
    transport::internal::shm::ShmConnection conn(fds[0], limits);
    while (true) {
      Result<SharedBytes> m = conn.Receive(5s);
      if (!m.ok()) break;
      if (m->size > kMaxMessage) std::abort();
    }
    while (true) {  // tagged messages that arrived before the end
      Result<TaggedMessage> t = conn.ReceiveTagged(0, 0, 0ms);
      if (!t.ok()) break;
      if (t->payload.size > kMaxMessage) std::abort();
    }
    conn.Close();
  }
  peer.join();
  return 0;
}
