// The full level of ArrayView::Validate: every element's offsets, views, type ids, indices, run
// ends and UTF-8, and the null count (the walk is validate.cpp).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "array_validator.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/bits.hpp"
#include "type_kinds.hpp"
#include "utf8.hpp"

namespace ferry {

using internal::Load;

template <typename Offset>
Status ArrayValidator::FullBinary(const ArrayView& v, const PathFrame* path, bool utf8) {
  if (v.length() == 0) return Status::OK();
  const Offset* offsets = reinterpret_cast<const Offset*>(v.buffer(1).data);
  const uint8_t* data = v.buffer(2).data;
  const int64_t begin = v.offset();
  const int64_t end = begin + v.length();
  const int64_t data_size = v.buffer(2).size;
  // One branch-free pass over the offsets: monotonic, and (for strings) each string starts on
  // a character boundary. The default level has checked that the first and last offsets lie
  // in the data, so a byte read at an offset clamped between them is always in bounds; an
  // offset out of order makes the clamped read meaningless, but is reported first.
  Offset first;
  Offset last;
  std::memcpy(&first, offsets + begin, sizeof(Offset));
  std::memcpy(&last, offsets + end, sizeof(Offset));
  Offset prev = first;
  bool bad = false;
  bool split = false;
  bool invalid = false;
  if (utf8 && last > first) {
    // A chunk of strings at a time: their bytes checked as UTF-8, then their offsets, while
    // both are in cache. Chunks meet at string starts, so the chunks are valid UTF-8 each
    // exactly when the whole is, and a chunk's first string starts on a character boundary.
    // Within a chunk whose bytes are all ASCII no string can start inside a character, so
    // only the offsets' order is left; in any other chunk the byte at each offset is read too.
    constexpr int64_t kChunk = 8192;
    for (int64_t c = begin; c < end; c += kChunk) {
      const int64_t c_end = std::min(end, c + kChunk);
      const Offset chunk_first = prev;
      Offset chunk_last;
      std::memcpy(&chunk_last, offsets + c_end, sizeof(Offset));
      // Outside [chunk_first, last] some offset goes down, here or later: reported below.
      if (chunk_last < chunk_first || chunk_last > last) {
        bad = true;
        break;
      }
      bool ascii = false;
      if (!invalid) {
        const internal::Utf8Scan scan =
            internal::ScanUtf8(data + chunk_first, static_cast<int64_t>(chunk_last - chunk_first));
        invalid = !scan.valid;
        ascii = scan.ascii;
      }
      // Once a byte is wrong, the string that holds it is searched for below, which needs only
      // the offsets in order.
      const bool boundaries = !ascii && !invalid;
      if constexpr (sizeof(Offset) == 4) {
        const auto* chunk = reinterpret_cast<const uint8_t*>(offsets + c);
        if (boundaries) {
          internal::ScanStringOffsets(chunk, c_end - c, data, first, last, &bad, &split);
        } else {
          bad = !internal::OffsetsInOrder(chunk, c_end - c);
        }
      } else {
        for (int64_t i = c + 1; i <= c_end; ++i) {
          Offset cur;
          std::memcpy(&cur, offsets + i, sizeof(Offset));
          bad |= cur < prev;
          if (boundaries) {
            const Offset at = std::min<Offset>(std::max<Offset>(cur, first), last - 1);
            split |= (cur < last) & internal::IsUtf8Continuation(data[at]);
          }
          prev = cur;
        }
      }
      prev = chunk_last;
      if (bad) break;
    }
  } else if constexpr (sizeof(Offset) == 4) {
    bad = !internal::OffsetsInOrder(reinterpret_cast<const uint8_t*>(offsets + begin), end - begin);
  } else {
    for (int64_t i = begin + 1; i <= end; ++i) {
      Offset cur;
      std::memcpy(&cur, offsets + i, sizeof(Offset));
      bad |= cur < prev;
      prev = cur;
    }
  }
  if (bad) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t a = Load<Offset>(v.buffer(1).data, i);
      const int64_t b = Load<Offset>(v.buffer(1).data, i + 1);
      if (b < a) {
        return Fail(path, i - begin,
                    "offset " + std::to_string(b) + " < previous offset " + std::to_string(a));
      }
      if (b > data_size) {
        return Fail(path, i - begin,
                    "offset " + std::to_string(b) + " > data size " + std::to_string(data_size));
      }
    }
  }
  if (!utf8) return Status::OK();
  // Bytes that are not UTF-8, or a string that starts inside a character: find the string.
  if (invalid || split) return FindBadUtf8<Offset>(v, path);
  return Status::OK();
}

template <typename Offset>
Status ArrayValidator::FindBadUtf8(const ArrayView& v, const PathFrame* path) {
  for (int64_t i = 0; i < v.length(); ++i) {
    std::string_view s = v.GetBytes(i);
    if (!internal::ValidateUtf8(reinterpret_cast<const uint8_t*>(s.data()),
                                static_cast<int64_t>(s.size()))) {
      return Fail(path, i, "invalid UTF-8 in a string value");
    }
  }
  return Fail(path, -1, "invalid UTF-8 in the string data");
}

namespace {

// Whether any of an inline view's `size` (at most 12) bytes has its top bit set. The bytes after
// them are left out: the format asks for zeros there, but a producer may leave anything.
inline bool InlineHasHighByte(const uint8_t* view, int32_t size) {
  if constexpr (std::endian::native == std::endian::little) {
    uint64_t first;  // bytes 4..11 of the view, the first at the bottom
    uint32_t last;   // bytes 12..15
    std::memcpy(&first, view + 4, 8);
    std::memcpy(&last, view + 12, 4);
    const int32_t in_first = size < 8 ? size : 8;
    const int32_t in_last = size - in_first;
    const uint64_t first_mask = in_first == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * in_first)) - 1;
    const uint32_t last_mask = in_last == 4 ? ~uint32_t{0} : (uint32_t{1} << (8 * in_last)) - 1;
    return (((first & first_mask) | (last & last_mask)) & 0x8080808080808080ULL) != 0;
  } else {
    uint8_t high = 0;
    for (int32_t k = 0; k < size; ++k) high |= view[4 + k];
    return high >= 0x80;
  }
}

}  // namespace

Status ArrayValidator::FullViews(const ArrayView& v, const PathFrame* path, bool utf8) {
  const int64_t n_variadic = v.n_buffers() - 3;
  const uint8_t* views = v.buffer(1).data;
  // For strings: the bytes the views take of each data buffer (saturating), to know which
  // buffers are worth checking whole.
  std::vector<int64_t> used(utf8 ? static_cast<size_t>(n_variadic) : 0, 0);
  const uint8_t* validity = v.buffer(0).data;  // views have one; NULL when all are valid
  for (int64_t i = 0; i < v.length(); ++i) {
    if (validity != nullptr && !GetBit(validity, v.offset() + i)) continue;
    const uint8_t* view = views + (v.offset() + i) * 16;
    int32_t size;
    std::memcpy(&size, view, 4);
    if (size < 0) return Fail(path, i, "view length " + std::to_string(size) + " is negative");
    if (size > 12) {
      int32_t index;
      int32_t offset;
      std::memcpy(&index, view + 8, 4);
      std::memcpy(&offset, view + 12, 4);
      if (index < 0 || index >= n_variadic) {
        return Fail(path, i,
                    "view buffer index " + std::to_string(index) + " is outside [0, " +
                        std::to_string(n_variadic) + ")");
      }
      const int64_t buf_size = v.buffer(2 + index).size;
      if (offset < 0 || static_cast<int64_t>(offset) + size > buf_size) {
        return Fail(path, i,
                    "view range [" + std::to_string(offset) + ", " +
                        std::to_string(static_cast<int64_t>(offset) + size) +
                        ") exceeds variadic buffer " + std::to_string(index) + " of size " +
                        std::to_string(buf_size));
      }
      const uint8_t* data = v.buffer(2 + index).data + offset;
      if (std::memcmp(data, view + 4, 4) != 0) {
        return Fail(path, i, "view prefix does not match the first 4 bytes of its data");
      }
      if (utf8) {
        int64_t& u = used[static_cast<size_t>(index)];
        if (__builtin_add_overflow(u, int64_t{size}, &u)) u = INT64_MAX;
      }
    } else if (utf8 && InlineHasHighByte(view, size) &&
               !internal::ValidateUtf8Scalar(view + 4, size)) {  // inline: after the length
      return Fail(path, i, "invalid UTF-8 in a string value");
    }
  }
  if (!utf8) return Status::OK();
  return FullStringViews(v, path, used);
}

Status ArrayValidator::FullStringViews(const ArrayView& v, const PathFrame* path,
                                       const std::vector<int64_t>& used) {
  // A data buffer that the views take at least half of is checked as UTF-8 once, whole. If its
  // bytes are all ASCII, so is every view into it; if they are UTF-8, a view into it is UTF-8
  // exactly when it starts and ends on character boundaries (its first byte, and the byte after
  // it, continue no character). Any other buffer (mostly unused, or holding bytes that are not
  // UTF-8, which views may leave out) has each view into it checked alone.
  enum : uint8_t { kEach, kAscii, kBoundaries };
  std::vector<uint8_t> kind(used.size(), kEach);
  bool all_ascii = true;  // every buffer a view takes bytes of is ASCII: nothing is left to do
  for (size_t b = 0; b < used.size(); ++b) {
    if (used[b] == 0) continue;
    const BufferView& buffer = v.buffer(static_cast<int64_t>(2 + b));
    if (used[b] >= buffer.size / 2) {
      const internal::Utf8Scan scan = internal::ScanUtf8(buffer.data, buffer.size);
      kind[b] = scan.ascii ? kAscii : scan.valid ? kBoundaries : kEach;
    }
    all_ascii = all_ascii && kind[b] == kAscii;
  }
  if (all_ascii) return Status::OK();
  const uint8_t* views = v.buffer(1).data;
  const uint8_t* validity = v.buffer(0).data;
  for (int64_t i = 0; i < v.length(); ++i) {
    if (validity != nullptr && !GetBit(validity, v.offset() + i)) continue;
    const uint8_t* view = views + (v.offset() + i) * 16;
    int32_t size;
    std::memcpy(&size, view, 4);
    if (size <= 12) continue;  // inline: checked with the views' structure
    int32_t index;
    int32_t offset;
    std::memcpy(&index, view + 8, 4);
    std::memcpy(&offset, view + 12, 4);
    const BufferView& buffer = v.buffer(2 + index);
    const uint8_t* data = buffer.data + offset;
    bool valid = true;
    switch (kind[static_cast<size_t>(index)]) {
      case kAscii:
        break;
      case kBoundaries:
        valid =
            !internal::IsUtf8Continuation(data[0]) &&
            (offset + int64_t{size} == buffer.size || !internal::IsUtf8Continuation(data[size]));
        break;
      default:
        valid = internal::ValidateUtf8(data, size);
        break;
    }
    if (!valid) return Fail(path, i, "invalid UTF-8 in a string value");
  }
  return Status::OK();
}

template <typename Offset>
Status ArrayValidator::FullListOffsets(const ArrayView& v, const PathFrame* path) {
  const int64_t child_length = v.child(0).length();
  if constexpr (sizeof(Offset) == 4) {
    // In order, from a first offset not below 0 to a last within the child: every offset is
    // then within it too. Compared eight pairs at a time; the loop below finds and names what
    // is wrong otherwise.
    const uint8_t* offsets = v.buffer(1).data + v.offset() * int64_t{sizeof(Offset)};
    if (v.length() > 0 && Load<Offset>(offsets, 0) >= 0 &&
        Load<Offset>(offsets, v.length()) <= child_length &&
        internal::OffsetsInOrder(offsets, v.length())) {
      return Status::OK();
    }
  }
  for (int64_t i = 0; i < v.length(); ++i) {
    const int64_t a = Load<Offset>(v.buffer(1).data, v.offset() + i);
    const int64_t b = Load<Offset>(v.buffer(1).data, v.offset() + i + 1);
    if (b < a) {
      return Fail(path, i,
                  "offset " + std::to_string(b) + " < previous offset " + std::to_string(a));
    }
    if (b > child_length) {
      return Fail(
          path, i,
          "offset " + std::to_string(b) + " > child length " + std::to_string(child_length));
    }
  }
  return Status::OK();
}

template <typename Offset>
Status ArrayValidator::FullListViews(const ArrayView& v, const PathFrame* path) {
  const int64_t child_length = v.child(0).length();
  for (int64_t i = 0; i < v.length(); ++i) {
    const int64_t offset = Load<Offset>(v.buffer(1).data, v.offset() + i);
    const int64_t size = Load<Offset>(v.buffer(2).data, v.offset() + i);
    if (!v.IsValid(i) && size == 0) continue;
    int64_t end = 0;
    // Large list views carry int64 offsets and sizes straight from the producer: the sum may
    // overflow.
    if (offset < 0 || size < 0 || __builtin_add_overflow(offset, size, &end) ||
        end > child_length) {
      return Fail(path, i,
                  "list view [offset " + std::to_string(offset) + ", size " + std::to_string(size) +
                      "] is outside the child of length " + std::to_string(child_length));
    }
  }
  return Status::OK();
}

Status ArrayValidator::FullUnion(const ArrayView& v, const PathFrame* path) {
  const bool dense = v.type().storage_type == TypeId::kDenseUnion;
  for (int64_t i = 0; i < v.length(); ++i) {
    const int8_t id = v.UnionTypeId(i);
    const int8_t child = v.union_child_index(id);
    if (child < 0) {
      return Fail(path, i, "union type id " + std::to_string(id) + " is not declared");
    }
    if (dense) {
      const int64_t off = v.UnionChildOffset(i);
      const int64_t len = v.child(child).length();
      if (off < 0 || off >= len) {
        return Fail(path, i,
                    "dense union offset " + std::to_string(off) + " is outside child " +
                        std::to_string(child) + " of length " + std::to_string(len));
      }
    }
  }
  return Status::OK();
}

Status ArrayValidator::FullDictionary(const ArrayView& v, const PathFrame* path) {
  const int64_t dict_length = v.dictionary()->length();
  for (int64_t i = 0; i < v.length(); ++i) {
    if (!v.IsValid(i)) continue;
    int64_t index;
    if (v.type().storage_type == TypeId::kUInt64) {
      uint64_t u = v.GetUInt(i);
      index = u > static_cast<uint64_t>(INT64_MAX) ? -1 : static_cast<int64_t>(u);
    } else {
      index = v.GetInt(i);
    }
    if (index < 0 || index >= dict_length) {
      return Fail(path, i,
                  "dictionary index " + std::to_string(index) + " is outside [0, " +
                      std::to_string(dict_length) + ")");
    }
  }
  return Status::OK();
}

Status ArrayValidator::FullRunEnds(const ArrayView& v, const PathFrame* path) {
  const ArrayView& run_ends = v.child(0);
  // The default level refused a null count that says there are nulls; an unknown one is read
  // from the bitmap here, so that a count left unknown does not let a null run end through.
  const uint8_t* validity = run_ends.buffer(0).data;
  if (run_ends.null_count() == -1 && validity != nullptr &&
      CountSetBits(validity, run_ends.offset(), run_ends.length()) != run_ends.length()) {
    return Fail(path, -1, "run ends must not contain nulls");
  }
  int64_t prev = 0;
  for (int64_t r = 0; r < run_ends.length(); ++r) {
    const int64_t e = run_ends.GetInt(r);
    if (e <= prev) {
      PathFrame frame{path, "child", 0, run_ends.name()};
      return Fail(&frame, r,
                  "run end " + std::to_string(e) +
                      (r == 0 ? " is not positive"
                              : " does not increase (previous " + std::to_string(prev) + ")"));
    }
    prev = e;
  }
  return Status::OK();
}

Status ArrayValidator::FullNullCount(const ArrayView& v, const PathFrame* path) {
  const SchemaView& t = v.type();
  if (v.null_count() == -1) return Status::OK();
  if (t.layout.n_fixed_buffers == 0 || t.layout.buffer_type[0] != BufferType::kValidity) {
    return Status::OK();
  }
  const uint8_t* validity = v.buffer(0).data;
  if (validity == nullptr) return Status::OK();  // Minimal already required null_count == 0
  const int64_t nulls = v.length() - CountSetBits(validity, v.offset(), v.length());
  if (nulls != v.null_count()) {
    return Fail(path, -1,
                "null_count is " + std::to_string(v.null_count()) +
                    " but the validity buffer has " + std::to_string(nulls) + " nulls");
  }
  return Status::OK();
}

Status ArrayValidator::Full(const ArrayView& v, const PathFrame* path) {
  FERRY_RETURN_NOT_OK(FullNullCount(v, path));
  const TypeId storage = v.type().storage_type;
  if (v.dictionary() != nullptr) FERRY_RETURN_NOT_OK(FullDictionary(v, path));
  switch (storage) {
    case TypeId::kBinary:
    case TypeId::kString:
      return FullBinary<int32_t>(v, path, internal::IsStringType(storage));
    case TypeId::kLargeBinary:
    case TypeId::kLargeString:
      return FullBinary<int64_t>(v, path, internal::IsStringType(storage));
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      return FullViews(v, path, internal::IsStringType(storage));
    case TypeId::kList:
    case TypeId::kMap:
      return FullListOffsets<int32_t>(v, path);
    case TypeId::kLargeList:
      return FullListOffsets<int64_t>(v, path);
    case TypeId::kListView:
      return FullListViews<int32_t>(v, path);
    case TypeId::kLargeListView:
      return FullListViews<int64_t>(v, path);
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion:
      return FullUnion(v, path);
    case TypeId::kRunEndEncoded:
      return FullRunEnds(v, path);
    default:
      return Status::OK();
  }
}

}  // namespace ferry
