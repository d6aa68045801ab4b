// Internal to the UCX transport: memory registered with UCX, which peers read with RMA gets.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <string>

#include "ferry/core/result.hpp"
#include "ferry/transport/region.hpp"
#include "transport/ucx/context.hpp"

namespace ferry::transport::internal::ucx {

/// Host memory registered with a context (ucp_mem_map). Its packed rkey is the URI's
/// remote_handle: a client that has it reads any byte of the region with ucp_get, and nothing
/// about the region travels in-band. Owned by the server (and by each connection it was lent
/// on); unregistered, and its memory released, when the last owner goes.
class UcxRegion final : public Region {
 public:
  /// `size` bytes of fresh, 64-byte aligned memory.
  static Result<std::shared_ptr<UcxRegion>> Allocate(std::shared_ptr<Context> context,
                                                     int64_t size);
  /// Memory the caller has (a mapped file), kept alive by `owner` while the region lives.
  static Result<std::shared_ptr<UcxRegion>> Register(std::shared_ptr<Context> context,
                                                     const void* data, int64_t size,
                                                     std::shared_ptr<const void> owner);
  ~UcxRegion() override;

  uint8_t* data() const noexcept override { return data_; }
  int64_t size() const noexcept override { return size_; }
  uint64_t WireAddress(int64_t offset) const noexcept override {
    return reinterpret_cast<uintptr_t>(data_) + static_cast<uint64_t>(offset);
  }
  std::string remote_handle() const override { return rkey_; }
  const Context* context() const noexcept { return context_.get(); }

 private:
  explicit UcxRegion(std::shared_ptr<Context> context) : context_(std::move(context)) {}
  Status Map();

  std::shared_ptr<Context> context_;
  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  bool owns_data_ = false;
  std::shared_ptr<const void> owner_;
  ucp_mem_h memh_ = nullptr;
  std::string rkey_;
};

}  // namespace ferry::transport::internal::ucx
