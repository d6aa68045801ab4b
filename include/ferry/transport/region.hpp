// Memory a peer may read: a Region the server exposes, the (address, length) references into it
// that travel on the wire, and the bytes a client brings home from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/core/bytes.hpp"
#include "ferry/core/status.hpp"

namespace ferry::transport {

/// One buffer a peer may read: a wire address (a virtual address, or an offset tagged with a
/// segment's index) and a length.
struct FERRY_EXPORT BufferRef {
  uint64_t address = 0;
  uint64_t length = 0;
};

/// Memory a server exposes to its clients for type-1 bodies: a shared-memory segment (memfd) or
/// UCX-registered memory. The server writes bodies into it and sends (wire address, length)
/// pairs. Owned by the listener that made it and by every connection it was shared on.
class FERRY_EXPORT Region {
 public:
  virtual ~Region() = default;
  /// The local mapping, writable by the server until Seal.
  virtual uint8_t* data() const noexcept = 0;
  virtual int64_t size() const noexcept = 0;
  /// The number a pair carries for the byte at `offset`: an offset tagged with the region's
  /// index for shared memory, a virtual address for UCX.
  virtual uint64_t WireAddress(int64_t offset) const noexcept = 0;
  /// The URI's remote_handle for this region (a packed UCX rkey), or empty.
  virtual std::string remote_handle() const = 0;
  /// Make the region read-only for good, once the server has written all it ever will (a kept
  /// dataset) and before it is shared. Over shared memory the server's mapping becomes read-only
  /// and the segment is sealed against writes, so a client knows its bytes never change and may
  /// map its pages ahead of its reads; data() may move. Costs one remap. After a call, failed or
  /// not, the server must not write the region. Where the transport has nothing to seal (UCX,
  /// the in-process transport) it does nothing.
  [[nodiscard]] virtual Status Seal() { return Status::OK(); }
};

/// Type-1 buffers brought to the client. `bytes` covers them all; `buffers[i]` is buffer i's
/// offset and length within `bytes`. When `borrowed`, the bytes are the server's memory, mapped
/// in place (no copy), and free_data may go only once every array over them is released;
/// otherwise they are a local copy and free_data can go at once.
struct FERRY_EXPORT FetchedBody {
  SharedBytes bytes;
  std::vector<BufferRef> buffers;
  bool borrowed = false;
};

}  // namespace ferry::transport
