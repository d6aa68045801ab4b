// HostBuffer and the default allocator.
#include "ferry/core/host_buffer.hpp"

#include <cstdlib>
#include <limits>

namespace ferry {

namespace {

constexpr int64_t kAlignment = 64;

int64_t RoundUp64(int64_t n) { return (n + kAlignment - 1) & ~(kAlignment - 1); }

class AlignedAllocator final : public Allocator {
 public:
  Result<uint8_t*> Allocate(int64_t size) override {
    if (size < 0) return Status::Invalid("allocation of negative size");
    const int64_t rounded = RoundUp64(size == 0 ? kAlignment : size);
    void* p = std::aligned_alloc(kAlignment, static_cast<size_t>(rounded));
    if (p == nullptr) {
      return Status::OutOfMemory("failed to allocate " + std::to_string(size) + " bytes");
    }
    return static_cast<uint8_t*>(p);
  }
  void Free(uint8_t* ptr, int64_t /*size*/) noexcept override { std::free(ptr); }
};

}  // namespace

Allocator* DefaultAllocator() noexcept {
  static AlignedAllocator allocator;
  return &allocator;
}

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : allocator_(other.allocator_),
      data_(other.data_),
      size_(other.size_),
      capacity_(other.capacity_) {
  other.data_ = nullptr;
  other.size_ = other.capacity_ = 0;
}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    Free();
    allocator_ = other.allocator_;
    data_ = other.data_;
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
  }
  return *this;
}

void HostBuffer::Free() noexcept {
  if (data_ != nullptr) allocator_->Free(data_, capacity_);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

Status HostBuffer::Reserve(int64_t capacity) {
  if (capacity < 0) return Status::Invalid("negative buffer capacity");
  if (capacity <= capacity_) return Status::OK();
  if (capacity > std::numeric_limits<int64_t>::max() / 2) {
    return Status::OutOfMemory("buffer capacity overflows");
  }
  const int64_t grown = RoundUp64(std::max(capacity, capacity_ * 2));
  FERRY_ASSIGN_OR_RAISE(uint8_t * fresh, allocator_->Allocate(grown));
  if (size_ > 0) std::memcpy(fresh, data_, static_cast<size_t>(size_));
  std::memset(fresh + size_, 0, static_cast<size_t>(grown - size_));
  if (data_ != nullptr) allocator_->Free(data_, capacity_);
  data_ = fresh;
  capacity_ = grown;
  return Status::OK();
}

Status HostBuffer::Resize(int64_t size) {
  FERRY_RETURN_NOT_OK(Reserve(size));
  if (size > size_) std::memset(data_ + size_, 0, static_cast<size_t>(size - size_));
  size_ = size;
  return Status::OK();
}

Status HostBuffer::Append(ByteSpan bytes) {
  if (bytes.size == 0) return Status::OK();
  if (bytes.size < 0) {
    return Status::Invalid("HostBuffer::Append: negative size " + std::to_string(bytes.size));
  }
  FERRY_RETURN_NOT_OK(Reserve(size_ + bytes.size));
  std::memcpy(data_ + size_, bytes.data, static_cast<size_t>(bytes.size));
  size_ += bytes.size;
  return Status::OK();
}

Status HostBuffer::AppendZeros(int64_t n) { return Resize(size_ + n); }

}  // namespace ferry
