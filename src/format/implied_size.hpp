// The size a fixed buffer's layout implies: the one rule ArrayView::SetArray and ArrayBytes share.
#pragma once

#include <cstdint>

#include "ferry/format/type.hpp"

namespace ferry::internal {

/// ImpliedBufferSize's answer for a data buffer of no fixed width (a binary column's
/// characters): its size is learnt from the last offset.
constexpr int64_t kSizeFromOffsets = -1;
/// ImpliedBufferSize's answer where the size overflows int64.
constexpr int64_t kSizeOverflows = -2;

/// The bytes fixed buffer `i` of a node of `layout` holds for elements [0, `end`) (offset +
/// length; `length` the node's own), where `present` says whether its pointer is non-NULL and
/// `list_view` whether the node is a list view (one offset per element, not one more).
/// A validity bitmap that is absent holds nothing, and so may an empty node's offsets.
inline int64_t ImpliedBufferSize(const Layout& layout, int32_t i, bool list_view, int64_t end,
                                 int64_t length, bool present) {
  const int64_t bits = layout.element_size_bits[static_cast<size_t>(i)];
  auto times = [](int64_t count, int64_t width) {
    int64_t out = 0;
    return __builtin_mul_overflow(count, width, &out) ? kSizeOverflows : out;
  };
  switch (layout.buffer_type[static_cast<size_t>(i)]) {
    case BufferType::kValidity:
      return present ? (end + 7) / 8 : 0;
    case BufferType::kData:
      if (bits == 1) return (end + 7) / 8;
      return bits > 0 ? times(end, bits / 8) : kSizeFromOffsets;
    case BufferType::kTypeId:
      return end;
    case BufferType::kUnionOffset:
    case BufferType::kListSize:
    case BufferType::kView:
      return times(end, bits / 8);
    case BufferType::kDataOffset:
    case BufferType::kListOffset:
      if (list_view) return times(end, bits / 8);
      return (length == 0 && !present) ? 0 : times(end + 1, bits / 8);
    default:
      return 0;
  }
}

}  // namespace ferry::internal
