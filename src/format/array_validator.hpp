// The validator behind ArrayView::Validate, shared by its two files: validate.cpp (the walk, and
// the minimal and default levels) and validate_full.cpp (the full level).
#pragma once

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/format/array_view.hpp"

namespace ferry {
namespace internal {

// One step of the path from the root to the node being validated; rendered only on error.
// One step of the path from the root to the node being validated; rendered only on error.
struct PathFrame {
  const PathFrame* parent;
  const char* kind;  // "child" or "dictionary"; nullptr at the root
  int64_t index;
  std::string_view name;
};

// "field \"a\" > child 1 > dictionary": the path to `frame`, appended to `out`.
void RenderPath(const PathFrame* frame, std::string* out);

template <typename T>
T Load(const uint8_t* p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

}  // namespace internal

// Walks a view tree at one level; a friend of ArrayView so it can read the variadic sizes. Made
// for one Validate call, on the stack; it owns nothing.
class ArrayValidator {
 public:
  using PathFrame = internal::PathFrame;

  ArrayValidator(ValidationLevel level, DictionaryValues dictionaries)
      : level_(level), dictionaries_(dictionaries) {}

  Status Validate(const ArrayView& v, const PathFrame* path, int depth);

 private:
  static Status Fail(const PathFrame* path, int64_t element, const std::string& why);

  // MINIMAL: structure and sizes, no buffer contents (validate.cpp).
  Status Minimal(const ArrayView& v, const PathFrame* path);

  // DEFAULT: O(1) reads of offsets (validate.cpp).
  template <typename Offset>
  Status CheckOffsetEnds(const ArrayView& v, const PathFrame* path, int64_t limit,
                         const char* limit_name);
  Status Default(const ArrayView& v, const PathFrame* path);

  // FULL: every element (validate_full.cpp).
  template <typename Offset>
  Status FullBinary(const ArrayView& v, const PathFrame* path, bool utf8);
  template <typename Offset>
  Status FindBadUtf8(const ArrayView& v, const PathFrame* path);
  Status FullViews(const ArrayView& v, const PathFrame* path, bool utf8);
  // FullViews' UTF-8 check of a string view array whose views were found in bounds; `used` is
  // the bytes the views take of each data buffer.
  Status FullStringViews(const ArrayView& v, const PathFrame* path,
                         const std::vector<int64_t>& used);
  template <typename Offset>
  Status FullListOffsets(const ArrayView& v, const PathFrame* path);
  template <typename Offset>
  Status FullListViews(const ArrayView& v, const PathFrame* path);
  Status FullUnion(const ArrayView& v, const PathFrame* path);
  Status FullDictionary(const ArrayView& v, const PathFrame* path);
  Status FullRunEnds(const ArrayView& v, const PathFrame* path);
  Status FullNullCount(const ArrayView& v, const PathFrame* path);
  Status Full(const ArrayView& v, const PathFrame* path);

  ValidationLevel level_;
  DictionaryValues dictionaries_;
};

}  // namespace ferry
