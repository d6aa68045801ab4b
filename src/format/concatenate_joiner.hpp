// The joiner behind Concatenate (ferry/format/concatenate.hpp): each node of a type joined from
// slices of the parts' nodes, buffer by buffer. Flat nodes are in concatenate.cpp, nested ones
// in concatenate_nested.cpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/core/host_buffer.hpp"
#include "ferry/core/keep_alive.hpp"
#include "ferry/core/result.hpp"
#include "ferry/format/array_view.hpp"

namespace ferry::internal {

// Non-NULL storage for buffers of no bytes.
alignas(64) inline constexpr uint8_t kNoBytes[64] = {};

// Rows [start, start + length) of one part's node, `start` counted as the view's accessors count
// (from the view's own offset).
struct Slice {
  const ArrayView* view;
  int64_t start;
  int64_t length;
  size_t part;
};

// Every buffer of the joined array, kept by its nodes.
struct Joined {
  std::deque<HostBuffer> buffers;
};

template <typename T>
T LoadAt(const uint8_t* data, int64_t i) {
  T v;
  std::memcpy(&v, data + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <typename T>
void StoreAt(uint8_t* data, int64_t i, T v) {
  std::memcpy(data + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

/// Joins nodes of one type from slices of the parts' nodes into buffers `joined` owns, making
/// each node with `keep`. Names parts by `names` in its errors. Used once, by Concatenate.
class Joiner {
 public:
  Joiner(std::span<const std::string_view> names, Joined* joined, KeepAlive* keep)
      : names_(names), joined_(joined), keep_(keep) {}

  // `out` becomes the join of `slices`, nodes of `shape`'s type (a view that may hold no array).
  Status Join(const ArrayView& shape, std::vector<Slice> slices, const std::string& path,
              ArrowArray* out);

 private:
  std::string Name(size_t part) const {
    return part < names_.size() ? std::string(names_[part]) : "part " + std::to_string(part);
  }
  static std::string At(const std::string& path) {
    return path.empty() ? "" : " (at " + path + ")";
  }
  static std::string ChildPath(const std::string& path, const ArrayView& child, int64_t i) {
    std::string p = path.empty() ? "" : path + " > ";
    p += "child " + std::to_string(i);
    if (!child.name().empty()) p += " \"" + std::string(child.name()) + "\"";
    return p;
  }
  Status Bad(const Slice& s, const std::string& what, const std::string& path) const {
    return Status::Invalid(Name(s.part) + "'s " + what + At(path));
  }

  HostBuffer* NewBuffer() { return &joined_->buffers.emplace_back(); }
  static const void* Stored(const HostBuffer* b) { return b->size() > 0 ? b->data() : kNoBytes; }

  // The joined validity bitmap (NULL when no row is null) and its null count.
  Result<const void*> JoinValidity(const std::vector<Slice>& slices, int64_t length,
                                   int64_t* nulls);

  // Fixed-width values (booleans' bits too) and their validity.
  Status JoinFixed(const ArrayView& shape, const std::vector<Slice>& slices, int64_t length,
                   ArrowArray* out);

  // Offsets rebased to follow what comes before, and the bytes they span.
  template <typename Offset>
  Status JoinBinary(const std::vector<Slice>& slices, int64_t length, const std::string& path,
                    ArrowArray* out);

  // Views copied; the bytes of those that are not inline gathered into fresh data buffers of at
  // most 2 GiB each, where each view is pointed again.
  Status JoinViews(const std::vector<Slice>& slices, int64_t length, const std::string& path,
                   ArrowArray* out);

  // Lists and maps: offsets rebased, the child joined from the ranges the slices span.
  template <typename Offset>
  Status JoinList(const ArrayView& shape, const std::vector<Slice>& slices, int64_t length,
                  const std::string& path, ArrowArray* out);

  // List views: each slice's child range is the span of its valid, non-empty elements, joined;
  // offsets moved by where that range lands. Null and empty elements become (0, 0).
  template <typename Offset>
  Status JoinListView(const ArrayView& shape, const std::vector<Slice>& slices, int64_t length,
                      const std::string& path, ArrowArray* out);

  // Structs and fixed-size lists: each child joined from the rows its parent's slices cover.
  Status JoinAligned(const ArrayView& shape, const std::vector<Slice>& slices, int64_t length,
                     const std::string& path, ArrowArray* out);

  // Unions: type ids copied. Sparse children are joined row for row; a dense child from the span
  // of offsets its slices use, each offset moved by where that span lands.
  Status JoinUnion(const ArrayView& shape, const std::vector<Slice>& slices, int64_t length,
                   const std::string& path, ArrowArray* out);

  // Run-end encoded: the runs each slice touches, their ends cut to the slice and moved by the
  // rows before it; the values joined from those runs.
  Status JoinRuns(const ArrayView& shape, const std::vector<Slice>& slices, int64_t length,
                  const std::string& path, ArrowArray* out);

  // Dictionary-encoded: indices moved past the dictionaries before their part's; parts whose
  // dictionary is one array share it. A null row's index becomes 0.
  Status JoinDictionary(const ArrayView& shape, const std::vector<Slice>& slices, int64_t length,
                        const std::string& path, ArrowArray* out);

  std::span<const std::string_view> names_;
  Joined* joined_;
  KeepAlive* keep_;
};

}  // namespace ferry::internal
