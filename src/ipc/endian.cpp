// Byte swapping of body buffers.
#include "ipc/endian.hpp"

#include <algorithm>
#include <cstring>

namespace ferry::ipc::internal {

namespace {

template <typename T>
void SwapEach(const uint8_t* src, uint8_t* dst, int64_t size) {
  const int64_t n = size / static_cast<int64_t>(sizeof(T));
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, src + i * sizeof(T), sizeof(T));
    if constexpr (sizeof(T) == 2) v = __builtin_bswap16(v);
    if constexpr (sizeof(T) == 4) v = __builtin_bswap32(v);
    if constexpr (sizeof(T) == 8) v = __builtin_bswap64(v);
    std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
  }
  // A ragged tail (a buffer longer than its elements) is copied as is.
  const int64_t done = n * static_cast<int64_t>(sizeof(T));
  std::memcpy(dst + done, src + done, static_cast<size_t>(size - done));
}

void Reverse(const uint8_t* src, uint8_t* dst, int64_t size, int64_t width) {
  const int64_t n = size / width;
  for (int64_t i = 0; i < n; ++i)
    std::reverse_copy(src + i * width, src + (i + 1) * width, dst + i * width);
  std::memcpy(dst + n * width, src + n * width, static_cast<size_t>(size - n * width));
}

}  // namespace

Swap SwapOf(const SchemaView& type, int32_t index) {
  const BufferType bt = type.layout.buffer_type[static_cast<size_t>(index)];
  const int bits = type.layout.element_size_bits[static_cast<size_t>(index)];
  switch (bt) {
    case BufferType::kValidity:
    case BufferType::kTypeId:
      return Swap::kNone;
    case BufferType::kView:
      return Swap::kView;
    default:
      break;
  }
  if (bt == BufferType::kData) {
    switch (type.storage_type) {
      case TypeId::kBool:
      case TypeId::kFixedSizeBinary:
      case TypeId::kBinary:
      case TypeId::kLargeBinary:
      case TypeId::kString:
      case TypeId::kLargeString:
        return Swap::kNone;
      case TypeId::kDecimal128:
        return Swap::kReverse16;
      case TypeId::kDecimal256:
        return Swap::kReverse32;
      case TypeId::kIntervalDayTime:
        return Swap::kWidth4;  // two int32 fields
      case TypeId::kIntervalMonthDayNano:
        return Swap::kMonthDayNano;
      default:
        break;
    }
  }
  switch (bits) {
    case 16:
      return Swap::kWidth2;
    case 32:
      return Swap::kWidth4;
    case 64:
      return Swap::kWidth8;
    default:
      return Swap::kNone;
  }
}

void SwapBytes(Swap kind, const uint8_t* src, uint8_t* dst, int64_t size, bool to_native) {
  switch (kind) {
    case Swap::kNone:
      std::memcpy(dst, src, static_cast<size_t>(size));
      return;
    case Swap::kWidth2:
      return SwapEach<uint16_t>(src, dst, size);
    case Swap::kWidth4:
      return SwapEach<uint32_t>(src, dst, size);
    case Swap::kWidth8:
      return SwapEach<uint64_t>(src, dst, size);
    case Swap::kReverse16:
      return Reverse(src, dst, size, 16);
    case Swap::kReverse32:
      return Reverse(src, dst, size, 32);
    case Swap::kMonthDayNano:
      std::memcpy(dst, src, static_cast<size_t>(size));
      for (int64_t i = 0; i + 16 <= size; i += 16) {
        SwapEach<uint32_t>(src + i, dst + i, 8);
        SwapEach<uint64_t>(src + i + 8, dst + i + 8, 8);
      }
      return;
    case Swap::kView:
      std::memcpy(dst, src, static_cast<size_t>(size));
      for (int64_t i = 0; i + 16 <= size; i += 16) {
        uint32_t length;
        std::memcpy(&length, src + i, 4);
        const uint32_t swapped = __builtin_bswap32(length);
        std::memcpy(dst + i, &swapped, 4);
        // Read the length in native order to tell inline views from referencing ones.
        if ((to_native ? swapped : length) > 12) {
          SwapEach<uint32_t>(src + i + 8, dst + i + 8, 8);  // buffer index, offset
        }
      }
      return;
  }
}

}  // namespace ferry::ipc::internal
