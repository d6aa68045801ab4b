// Memory registered with UCX for type-1 bodies.
#if FERRY_WITH_UCX

#include "transport/ucx/region.hpp"

#include <cerrno>
#include <cstdlib>

namespace ferry::transport::internal::ucx {

Result<std::shared_ptr<UcxRegion>> UcxRegion::Allocate(std::shared_ptr<Context> context,
                                                       int64_t size) {
  if (size <= 0) return Status::Invalid("a UCX region needs a positive size");
  std::shared_ptr<UcxRegion> region(new UcxRegion(std::move(context)));
  const size_t rounded = (static_cast<size_t>(size) + 63) / 64 * 64;
  region->data_ = static_cast<uint8_t*>(std::aligned_alloc(64, rounded));
  if (region->data_ == nullptr) {
    return Status::OutOfMemory("cannot allocate a " + std::to_string(size) + "-byte UCX region");
  }
  region->owns_data_ = true;
  region->size_ = size;
  FERRY_RETURN_NOT_OK(region->Map());
  return region;
}

Result<std::shared_ptr<UcxRegion>> UcxRegion::Register(std::shared_ptr<Context> context,
                                                       const void* data, int64_t size,
                                                       std::shared_ptr<const void> owner) {
  if (size <= 0 || data == nullptr) {
    return Status::Invalid("a UCX region needs memory and a positive size");
  }
  std::shared_ptr<UcxRegion> region(new UcxRegion(std::move(context)));
  // Peers only read it; UCX's registration takes a non-const pointer.
  region->data_ = static_cast<uint8_t*>(const_cast<void*>(data));
  region->size_ = size;
  region->owner_ = std::move(owner);
  FERRY_RETURN_NOT_OK(region->Map());
  return region;
}

Status UcxRegion::Map() {
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = data_;
  params.length = static_cast<size_t>(size_);
  ucs_status_t st = ucp_mem_map(context_->handle(), &params, &memh_);
  if (st != UCS_OK) {
    memh_ = nullptr;
    return UcxError(StatusCode::kIOError,
                    "cannot register " + std::to_string(size_) + " bytes with UCX", st);
  }
  void* packed = nullptr;
  size_t packed_size = 0;
  st = ucp_rkey_pack(context_->handle(), memh_, &packed, &packed_size);
  if (st != UCS_OK)
    return UcxError(StatusCode::kIOError, "cannot pack the UCX region's remote key", st);
  rkey_.assign(static_cast<const char*>(packed), packed_size);
  ucp_rkey_buffer_release(packed);
  return Status::OK();
}

UcxRegion::~UcxRegion() {
  if (memh_ != nullptr) ucp_mem_unmap(context_->handle(), memh_);
  if (owns_data_) std::free(data_);
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
