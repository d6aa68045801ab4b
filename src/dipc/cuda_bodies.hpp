// Internal to the dissociated-IPC client: type-1 bodies in the server's CUDA memory, reached
// through the URI's CUDA IPC handle (kCudaIpcParameter) instead of the transport.
#pragma once

#include <cstdint>
#include <memory>

#include "ferry/core/result.hpp"
#include "ferry/device/cuda_ipc.hpp"
#include "ferry/device/device.hpp"
#include "ferry/dipc/uri.hpp"

namespace ferry::dipc::internal {

/// The server's device allocation, opened once per connection on the client's CUDA device and
/// closed when the last holder goes (the session and every array over it hold it). Its bytes
/// are device memory: the host never reads them.
class CudaBodies {
 public:
  /// Whether `uri` says its remote_handle is a CUDA IPC handle.
  static bool Carries(const Uri& uri);
  /// Open the handle `uri` carries on `target`. Errors name what is wrong: a target that is not
  /// a CUDA device (read with one, or use the server's host URI), a remote_handle that is not a
  /// 64-byte handle, a bad size, or a handle the driver refuses (another host, a stale one).
  static Result<std::shared_ptr<CudaBodies>> Open(const Uri& uri, Device* target);

  /// The allocation's base (device memory) and size in bytes.
  const uint8_t* data() const noexcept { return static_cast<const uint8_t*>(mapping_.data()); }
  int64_t size() const noexcept { return mapping_.size(); }
  /// The CUDA device the allocation is mapped on.
  Device* device() const noexcept { return mapping_.device(); }

 private:
  CudaIpcMapping mapping_;
};

}  // namespace ferry::dipc::internal
