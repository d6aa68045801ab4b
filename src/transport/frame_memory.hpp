// Internal to the shared-memory transport: memory for the payloads of the frames its reader
// thread takes off the socket.
#pragma once

#include <cstdint>
#include <memory>

#include "ferry/core/bytes.hpp"
#include "ferry/core/host_buffer.hpp"
#include "ferry/core/result.hpp"

namespace ferry::transport::internal::shm {

/// Payload memory for one reader thread (not thread-safe: its one thread allocates; any thread
/// may release what it handed out). A small payload (metadata, a buffer list, a free_data) is
/// carved from a slab the frames share, so the reader does not allocate per frame: allocations
/// made on the reader's thread and freed on the caller's made glibc grow and trim that thread's
/// heap, zeroing fresh pages, batch after batch. A slab goes with its last frame, so a frame held
/// long holds at most kSlabBytes. A larger payload (a packed body) is one allocation with its
/// owner, 16-aligned (Arrow asks 8 of a packed body's buffers), or past kOwnBlockBytes a
/// HostBuffer, 64-aligned.
class FrameMemory {
 public:
  static constexpr uint64_t kSlabBytes = 64 << 10;
  static constexpr uint64_t kSlabFrameBytes = 1 << 10;
  static constexpr uint64_t kOwnBlockBytes = 64 << 10;

  /// `size` writable bytes (the reader fills them before anyone else sees them), 16-aligned.
  /// Errors: out of memory for a large one.
  Result<SharedBytes> Allocate(uint64_t size) {
    const uint64_t rounded = (size + 15) / 16 * 16;
    if (rounded <= kSlabFrameBytes) {
      if (slab_ == nullptr || slab_used_ + rounded > kSlabBytes) {
        slab_ = std::make_shared_for_overwrite<Block[]>(kSlabBytes / sizeof(Block));
        slab_used_ = 0;
      }
      const auto* data = reinterpret_cast<const uint8_t*>(slab_.get()) + slab_used_;
      slab_used_ += rounded;
      return SharedBytes{data, static_cast<int64_t>(size), slab_};
    }
    if (size <= kOwnBlockBytes) {
      std::shared_ptr<Block[]> own = std::make_shared_for_overwrite<Block[]>(rounded / 16);
      const auto* data = reinterpret_cast<const uint8_t*>(own.get());
      return SharedBytes{data, static_cast<int64_t>(size), std::move(own)};
    }
    auto buffer = std::make_shared<HostBuffer>();
    FERRY_RETURN_NOT_OK(buffer->Resize(static_cast<int64_t>(size)));
    return SharedBytes{buffer->data(), buffer->size(), buffer};
  }

 private:
  struct alignas(16) Block {
    uint8_t bytes[16];
  };
  std::shared_ptr<Block[]> slab_;  // the slab small frames come from now
  uint64_t slab_used_ = 0;
};

}  // namespace ferry::transport::internal::shm
