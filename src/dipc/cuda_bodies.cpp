// Type-1 bodies in the server's CUDA memory: the URI's handle, checked and opened.
#include "dipc/cuda_bodies.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>

namespace ferry::dipc::internal {

namespace {

const std::string* Parameter(const Uri& uri) {
  for (const auto& [key, value] : uri.other) {
    if (key == kCudaIpcParameter) return &value;
  }
  return nullptr;
}

}  // namespace

bool CudaBodies::Carries(const Uri& uri) { return Parameter(uri) != nullptr; }

Result<std::shared_ptr<CudaBodies>> CudaBodies::Open(const Uri& uri, Device* target) {
  const std::string* size_text = Parameter(uri);
  if (size_text == nullptr) return Status::Invalid("the URI carries no CUDA IPC handle");
  const std::string where = std::string("the URI's ") + kCudaIpcParameter + " bodies";
  if (target == nullptr || target->device_type() != ARROW_DEVICE_CUDA) {
    return Status::NotSupported(
        where + " are CUDA device memory of the server, which only a CUDA device can read (not " +
        (target == nullptr ? std::string("CPU") : target->ToString()) +
        "): read with a CUDA device (ferry get --device cuda:N), or ask the server for its host "
        "URI (the one without " +
        kCudaIpcParameter + ")");
  }
  int64_t size = 0;
  const char* end = size_text->data() + size_text->size();
  const auto parsed = std::from_chars(size_text->data(), end, size);
  if (parsed.ec != std::errc() || parsed.ptr != end || size <= 0) {
    return Status::Invalid(std::string(kCudaIpcParameter) + "=" + *size_text +
                           " is not a positive size in bytes");
  }
  CudaIpcMemHandle handle;
  const std::string& bytes = uri.remote_handle.value_or("");
  if (bytes.size() != handle.bytes.size()) {
    return Status::Invalid(where + ": the remote_handle has " + std::to_string(bytes.size()) +
                           " bytes, but a CUDA IPC memory handle has " +
                           std::to_string(handle.bytes.size()));
  }
  std::memcpy(handle.bytes.data(), bytes.data(), bytes.size());
  handle.offset = 0;
  handle.allocation_size = size;
  auto out = std::make_shared<CudaBodies>();
  Result<CudaIpcMapping> mapping = OpenCudaIpcMemHandle(*target, handle);
  if (!mapping.ok()) {
    return Status(mapping.status().code(),
                  where + ": opening the remote_handle on " + target->ToString() +
                      " failed (the server must run on this host, in another process): " +
                      mapping.status().message());
  }
  out->mapping_ = std::move(*mapping);
  return out;
}

}  // namespace ferry::dipc::internal
