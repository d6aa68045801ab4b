// ArrowArrayStream producers over C++ sources, and a C++ consumer of any stream.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/format/array.hpp"

namespace ferry {

/// A pull source for MakeArrayStream: the next array, nullopt at the end, or an error.
using ArraySource = std::function<Result<std::optional<UniqueArray>>()>;

/// Make a stream that yields `arrays` in order, then the end (an array whose release is NULL).
/// get_schema hands out deep copies of `schema`. Nothing is copied: arrays are moved out.
FERRY_EXPORT Result<UniqueArrayStream> MakeArrayStream(UniqueSchema schema,
                                                       std::vector<UniqueArray> arrays);

/// Make a stream over a generator. A failing source makes get_next return its errno-style code
/// and get_last_error its message; the stream stays usable for release.
FERRY_EXPORT Result<UniqueArrayStream> MakeArrayStream(UniqueSchema schema, ArraySource source);

/// A C++ consumer of any ArrowArrayStream: owns the stream, reads the schema once, and yields
/// owned Arrays. Never looks at the producer's private_data.
class FERRY_EXPORT ArrayStreamReader {
 public:
  /// Take ownership of `*stream` (marked released) and fetch its schema.
  static Result<ArrayStreamReader> Open(ArrowArrayStream* stream);

  ArrayStreamReader(ArrayStreamReader&&) noexcept = default;
  ArrayStreamReader& operator=(ArrayStreamReader&&) noexcept = default;

  const ArrowSchema* schema() const noexcept { return schema_.get(); }
  /// The next array (owned, with its schema copied), nullopt at the end of the stream.
  Result<std::optional<Array>> Next();
  /// Read every remaining array.
  Result<std::vector<Array>> ReadAll();

  /// An input iterator over the remaining arrays. Each item is a Result<Array>; iteration ends at
  /// the end of the stream, or right after yielding the first error.
  class Iterator {
   public:
    Result<Array>& operator*() { return *current_; }
    Result<Array>* operator->() { return &*current_; }
    Iterator& operator++();
    bool operator==(const Iterator& other) const { return reader_ == other.reader_; }
    bool operator!=(const Iterator& other) const { return reader_ != other.reader_; }

   private:
    friend class ArrayStreamReader;
    explicit Iterator(ArrayStreamReader* reader) : reader_(reader) {}
    ArrayStreamReader* reader_;
    std::optional<Result<Array>> current_;
  };
  /// Fetch the first array and point at it (or at end()).
  Iterator begin();
  Iterator end() { return Iterator(nullptr); }

 private:
  ArrayStreamReader() = default;
  UniqueArrayStream stream_;
  UniqueSchema schema_;
};

}  // namespace ferry
