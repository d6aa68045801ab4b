// Kept datasets in device memory (Server::KeepOnDevice): bodies copied once into one CUDA
// allocation through the device layer, lent to clients on the same host by its CUDA IPC handle.
#include <algorithm>
#include <string>
#include <vector>

#include "dipc/catalogue.hpp"
#include "ferry/device/cuda_ipc.hpp"
#include "ferry/dipc/protocol.hpp"
#include "ferry/ipc/sink.hpp"

namespace ferry::dipc::internal {

namespace {

// Lays a dataset's bodies out by KeptLayout, as KeepSink does. Without a base it only sizes them;
// with one it copies each body's buffers to the device on `stream` and waits for them before
// the encoder's buffers may go away. Pairs are offsets from the allocation's base.
class DeviceKeepSink final : public ipc::MessageSink {
 public:
  DeviceKeepSink(Kept* kept, Device* device, uint8_t* base, KeptLayout layout, void* stream)
      : kept_(kept), device_(device), base_(base), layout_(layout), stream_(stream) {}

  Status WriteMessage(const ipc::EncodedMessage& m) override {
    FERRY_ASSIGN_OR_RAISE(const int64_t at, layout_.Place(m.body_length));
    if (base_ == nullptr) return Status::OK();
    KeptMessage k;
    k.metadata.assign(m.metadata.begin(), m.metadata.end());
    k.has_body = m.has_body;
    if (m.has_body) {
      std::vector<BufferRef> pairs;
      pairs.reserve(m.buffers.size());
      for (const ipc::BodyBuffer& b : m.buffers) {
        if (b.length > 0) {
          FERRY_RETURN_NOT_OK(
              CopyBytes(*CpuDevice(), b.data, *device_, base_ + at + b.offset, b.length, stream_));
        }
        pairs.push_back(
            BufferRef{static_cast<uint64_t>(at + b.offset), static_cast<uint64_t>(b.length)});
      }
      k.SetBody(pairs);
      k.body_length = m.body_length;  // counted in body_bytes_sent; the body is on the device
      // The encoder's buffers may be gone once this returns: the copies must be done.
      FERRY_RETURN_NOT_OK(device_->SynchronizeEvent(nullptr, stream_));
    }
    kept_->messages.push_back(std::move(k));
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }
  const KeptLayout& layout() const { return layout_; }

 private:
  Kept* kept_;
  Device* device_;
  uint8_t* base_;
  KeptLayout layout_;  // limited, in the second pass, to the bytes the allocation holds
  void* stream_;
};

}  // namespace

Result<std::shared_ptr<const Kept>> EncodeKeptOnDevice(Dataset& dataset,
                                                       const ipc::WriteOptions& options,
                                                       Device& device) {
  if (device.device_type() != ARROW_DEVICE_CUDA) {
    return Status::Invalid("serving bodies from device memory needs a CUDA device, not " +
                           device.ToString());
  }
  if (options.compression != ipc::Compression::kNone) {
    return Status::Invalid(
        "bodies kept in device memory cannot be compressed: clients could not decompress them");
  }
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Dataset> held, HoldForKeeping(dataset));
  Dataset& source = held != nullptr ? *held : dataset;
  auto kept = std::make_shared<Kept>();
  DeviceKeepSink sizing(kept.get(), &device, nullptr, KeptLayout(), nullptr);
  FERRY_RETURN_NOT_OK(EncodeAll(source, &sizing, options));
  const int64_t sized = sizing.layout().used();
  const int64_t size = std::max<int64_t>(sized, 64);
  // Without a stream: cuMemAlloc, whose memory the driver can export.
  FERRY_ASSIGN_OR_RAISE(void* base, device.Allocate(size, nullptr));
  Device* owner_device = &device;
  kept->device_memory =
      std::shared_ptr<void>(base, [owner_device, size](void* p) { owner_device->Free(p, size); });
  kept->device_bytes = size;
  FERRY_ASSIGN_OR_RAISE(CudaIpcMemHandle handle, ExportCudaIpcMemHandle(device, base));
  if (handle.offset != 0 || handle.allocation_size < size) {
    return Status::IOError("the CUDA IPC handle of " + device.ToString() +
                           "'s allocation does not start at its base (offset " +
                           std::to_string(handle.offset) + ")");
  }
  kept->device_handle.assign(reinterpret_cast<const char*>(handle.bytes.data()),
                             handle.bytes.size());
  FERRY_ASSIGN_OR_RAISE(void* stream, device.InternalStream());
  DeviceKeepSink writing(kept.get(), &device, static_cast<uint8_t*>(base), KeptLayout(sized),
                         stream);
  Status written = EncodeAll(source, &writing, options);
  if (written.ok()) written = writing.layout().Finish();
  if (!written.ok()) {
    // Nothing may still be copying into the memory when it is freed.
    (void)device.SynchronizeEvent(nullptr, stream);
    return written;
  }
  return std::shared_ptr<const Kept>(std::move(kept));
}

}  // namespace ferry::dipc::internal
