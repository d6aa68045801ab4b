// Internal to the UCX transport: the order UCX keeps between its workers, which
// ThreadSanitizer cannot see.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ferry/core/bytes.hpp"
#include "ferry/core/result.hpp"
#include "ferry/core/sanitizers.hpp"

namespace ferry::transport::internal::ucx {

#if FERRY_TSAN
// Reads UCX's buffer byte by byte, uninstrumented (no memcpy, which TSan intercepts).
__attribute__((no_sanitize("thread"))) inline void CopyUnchecked(uint8_t* out, const uint8_t* in,
                                                                 size_t n) {
  for (size_t i = 0; i < n; ++i) static_cast<volatile uint8_t*>(out)[i] = in[i];
}
#endif

/// The bytes of an eager message, copied out of UCX's own receive buffer (valid only during the
/// Active Message callback). UCX's shared-memory transports fill that buffer in a SysV segment
/// from the sending worker's thread and publish it with fences on their FIFO, which TSan cannot
/// see (UCX is not instrumented), so in TSan builds the read of UCX's buffer goes unchecked; the
/// copy's own use is checked as usual. Elsewhere: SharedBytes::Copy.
inline Result<SharedBytes> CopyFromUcxBuffer(ByteSpan bytes) {
#if FERRY_TSAN
  std::vector<uint8_t> local(static_cast<size_t>(bytes.size));
  CopyUnchecked(local.data(), bytes.data, local.size());
  return SharedBytes::Copy({local.data(), static_cast<int64_t>(local.size())});
#else
  return SharedBytes::Copy(bytes);
#endif
}

}  // namespace ferry::transport::internal::ucx
