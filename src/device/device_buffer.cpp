// Device buffers: allocation + copy, copies into existing memory, zero-copy moves.
#include "ferry/device/device_buffer.hpp"

#include <cstring>
#include <string>

#include "device/device_support.hpp"

namespace ferry {

namespace internal {

namespace {

struct BlockOwner {
  Device* device;
  int64_t size;
};

void ReleaseBlock(FerryBuffer* buffer) {
  auto* owner = static_cast<BlockOwner*>(buffer->private_data);
  if (owner != nullptr) {
    owner->device->Free(buffer->data, owner->size);
    delete owner;
  }
  buffer->data = nullptr;
  buffer->size = 0;
  buffer->private_data = nullptr;
  buffer->release = nullptr;
}

}  // namespace

Status WrapBlock(Device& device, void* data, int64_t size, FerryBuffer* out) {
  out->data = static_cast<uint8_t*>(data);
  out->size = size;
  out->private_data = new BlockOwner{&device, size};
  out->release = &ReleaseBlock;
  return Status::OK();
}

Status SynchronizeStream(Device& a, Device& b, void* stream) {
  if (stream == nullptr) return Status::OK();
  Device& owner = a.device_type() != ARROW_DEVICE_CPU ? a : b;
  return owner.SynchronizeEvent(nullptr, stream);
}

Status BufferInit(Device& src_dev, FerryBufferView src, Device& dst_dev, FerryBuffer* dst,
                  void* stream) {
  if (dst == nullptr) return Status::Invalid("buffer init: destination is NULL");
  if (src.size < 0) {
    return Status::Invalid("buffer init: negative size " + std::to_string(src.size));
  }
  if (src.size > 0 && src.data == nullptr) {
    return Status::Invalid("buffer init: source is NULL but has " + std::to_string(src.size) +
                           " bytes");
  }
  FERRY_ASSIGN_OR_RAISE(void* block, dst_dev.Allocate(src.size, stream));
  Status st = CopyBytes(src_dev, src.data, dst_dev, block, src.size, stream);
  if (!st.ok()) {
    dst_dev.Free(block, src.size);
    return st;
  }
  return WrapBlock(dst_dev, block, src.size, dst);
}

Status BufferMove(Device& src_dev, FerryBuffer* src, Device& dst_dev, FerryBuffer* dst) {
  if (src == nullptr || dst == nullptr) return Status::Invalid("buffer move: NULL buffer");
  if (src->release == nullptr) return Status::Invalid("buffer move: source is released");
  const MemoryKind& from = src_dev.memory();
  const MemoryKind& to = dst_dev.memory();
  bool reachable = &src_dev == &dst_dev;
  // Pinned and managed memory is addressable from the host, and (with unified addressing) from
  // the GPU of the same ordinal.
  if (!reachable && from.host_accessible && from.device_type != ARROW_DEVICE_CPU) {
    reachable = to.device_type == ARROW_DEVICE_CPU ||
                ((to.device_type == ARROW_DEVICE_CUDA || to.device_type == ARROW_DEVICE_CUDA_HOST ||
                  to.device_type == ARROW_DEVICE_CUDA_MANAGED) &&
                 dst_dev.device_id() == src_dev.device_id());
  }
  if (!reachable) {
    return Status::NotSupported("no zero-copy buffer move from " + src_dev.ToString() + " to " +
                                dst_dev.ToString() + " (copy it instead)");
  }
  std::memcpy(dst, src, sizeof(FerryBuffer));
  src->release = nullptr;
  return Status::OK();
}

}  // namespace internal

namespace {

Status CheckSameSize(FerryBufferView src, FerryMutableBufferView dst) {
  if (src.size == dst.size) return Status::OK();
  return Status::Invalid("buffer copy: source has " + std::to_string(src.size) +
                         " bytes but the destination " + std::to_string(dst.size));
}

}  // namespace

Result<UniqueBuffer> BufferInitAsync(Device& src_dev, FerryBufferView src, Device& dst_dev,
                                     void* stream) {
  FERRY_RETURN_NOT_OK(internal::NeedStream(src_dev, dst_dev, stream, "BufferInitAsync"));
  UniqueBuffer out;
  FERRY_RETURN_NOT_OK(internal::BufferInit(src_dev, src, dst_dev, out.get(), stream));
  return out;
}

Result<UniqueBuffer> BufferInit(Device& src_dev, FerryBufferView src, Device& dst_dev) {
  FERRY_ASSIGN_OR_RAISE(void* stream, InternalStreamFor(src_dev, dst_dev));
  UniqueBuffer out;
  FERRY_RETURN_NOT_OK(internal::BufferInit(src_dev, src, dst_dev, out.get(), stream));
  FERRY_RETURN_NOT_OK(internal::SynchronizeStream(src_dev, dst_dev, stream));
  return out;
}

Status BufferMove(Device& src_dev, FerryBuffer* src, Device& dst_dev, FerryBuffer* dst) {
  return internal::BufferMove(src_dev, src, dst_dev, dst);
}

Status BufferCopyAsync(Device& src_dev, FerryBufferView src, Device& dst_dev,
                       FerryMutableBufferView dst, void* stream) {
  FERRY_RETURN_NOT_OK(internal::NeedStream(src_dev, dst_dev, stream, "BufferCopyAsync"));
  FERRY_RETURN_NOT_OK(CheckSameSize(src, dst));
  return CopyBytes(src_dev, src.data, dst_dev, dst.data, src.size, stream);
}

Status BufferCopy(Device& src_dev, FerryBufferView src, Device& dst_dev,
                  FerryMutableBufferView dst) {
  FERRY_RETURN_NOT_OK(CheckSameSize(src, dst));
  // No stream: the device knows the caller waits, so a copy to or from pageable memory goes
  // through the driver's own staging rather than a host function on a stream.
  return CopyBytes(src_dev, src.data, dst_dev, dst.data, src.size, nullptr);
}

}  // namespace ferry
