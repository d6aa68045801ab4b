// Internal to the shared-memory transport: the frames on its socket, their header, and sending
// them with a bounded wait for room.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <vector>

#include "ferry/core/status.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::transport::internal::shm {

/// What a frame carries. kFileRegion is a region over a served file: read-only on both ends, and
/// not sealed (a file cannot be), so only the server's promise keeps it from shrinking. kTrace is
/// the client's trace (ConnectOptions::trace): sent first, at most once, tag 0, its payload the
/// trace's bytes. kRing is a client's frame ring (shm_ring.hpp), its descriptor passed with the
/// header, `length` the memfd's size; kRingStart, the server's answer, is the last frame it
/// sends on the socket: what follows comes through the ring, and the socket carries only
/// wake-ups, each a byte, and descriptors with them.
enum class FrameKind : uint8_t {
  kUntagged = 1,
  kTagged = 2,
  kRegion = 3,
  kFileRegion = 4,
  kTrace = 5,
  kRing = 6,
  kRingStart = 7
};

/// Every frame starts with this header, little-endian (the socket never leaves the host).
struct FrameHeader {
  uint8_t kind = 0;
  uint8_t zero[7] = {};
  uint64_t tag = 0;     // the tag, or the region's index
  uint64_t length = 0;  // payload bytes, or the region's size
};
static_assert(sizeof(FrameHeader) == 24);

/// The largest payload a peer may announce: a lying length must not make us allocate without
/// bound.
constexpr uint64_t kMaxPayload = uint64_t{1} << 36;

/// Append one frame to `iov`: its header (stored in `header`, which must outlive the send), then
/// its non-empty pieces. A region frame has no pieces and `length` its size.
[[nodiscard]] Status AddFrame(FrameKind kind, uint64_t tag, std::span<const ByteSpan> pieces,
                              uint64_t length, FrameHeader* header, std::vector<iovec>* iov);

/// Send every iovec of `iov` in order on `fd` (one sendmsg when the socket takes it all; `iov` is
/// advanced as it goes), `pass_fd` (if not -1) with the first byte. While the socket is full it
/// waits for room up to `limits.timeout` by `limits.clock`: a peer that takes nothing for that
/// long fails with kDeadlineExceeded (whose message says so), a peer gone with kUnavailable. The
/// caller serialises sends on one socket.
[[nodiscard]] Status SendFrames(int fd, std::vector<iovec>& iov, int pass_fd,
                                const TransportLimits& limits);

}  // namespace ferry::transport::internal::shm
