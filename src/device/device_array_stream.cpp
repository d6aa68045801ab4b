// Device array streams over a host ArrowArrayStream.
#include "ferry/device/device_array_stream.hpp"

#include <cstring>

#include "device/device_support.hpp"
#include "ferry/core/stream_adapter.hpp"

namespace ferry {

namespace {

// Labels each array of the wrapped stream with a device; end of stream stays end of stream.
class LabellingProducer final : public DeviceArrayProducer {
 public:
  LabellingProducer(UniqueArrayStream inner, Device& device)
      : inner_(std::move(inner)), device_(device) {}

  Status GetSchema(ArrowSchema* out) override { return StreamGetSchema(inner_.get(), out); }

  Status GetNext(ArrowDeviceArray* out) override {
    UniqueArray array;
    FERRY_RETURN_NOT_OK(StreamGetNext(inner_.get(), array.get()));
    if (!array.valid()) {
      // Never wrapped into a releasable array: the device fields only label the end.
      out->device_type = device_.device_type();
      out->device_id = device_.device_id();
      return Status::OK();
    }
    return device_.InitArray(out, array.get(), nullptr, nullptr);
  }

 private:
  UniqueArrayStream inner_;
  Device& device_;
};

}  // namespace

Status BasicDeviceArrayStreamInit(ArrowDeviceArrayStream* out, ArrowArrayStream* array_stream,
                                  Device& device) {
  if (out == nullptr) return Status::Invalid("device array stream init: the output is NULL");
  if (array_stream == nullptr || array_stream->release == nullptr) {
    return Status::Invalid("device array stream init: the array stream is NULL or released");
  }
  auto producer = std::make_unique<LabellingProducer>(UniqueArrayStream(array_stream), device);
  ExportDeviceArrayStream(std::move(producer), device.device_type()).move_to(out);
  return Status::OK();
}

}  // namespace ferry
