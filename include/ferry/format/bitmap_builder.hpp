// BitmapBuilder: appends bits into an owned HostBuffer, for validity and boolean buffers.
#pragma once

#include <cstdint>

#include "ferry/abi/export.h"
#include "ferry/core/host_buffer.hpp"

namespace ferry {

/// Appends bits (least-significant first) into an owned HostBuffer and counts the unset ones.
class FERRY_EXPORT BitmapBuilder {
 public:
  explicit BitmapBuilder(Allocator* allocator = nullptr) : bytes_(allocator) {}
  /// Append `n` copies of `bit`.
  Status Append(bool bit, int64_t n = 1);
  int64_t length() const noexcept { return length_; }
  int64_t false_count() const noexcept { return false_count_; }
  HostBuffer& buffer() noexcept { return bytes_; }
  /// Move the bytes out and start empty.
  HostBuffer Finish();

 private:
  HostBuffer bytes_;
  int64_t length_ = 0;
  int64_t false_count_ = 0;
};

}  // namespace ferry
