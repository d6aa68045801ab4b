// ArrayView: a non-owning, recursive view of an ArrowArray read through its ArrowSchema.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/export.h"
#include "ferry/core/bytes.hpp"
#include "ferry/core/result.hpp"
#include "ferry/format/schema_view.hpp"

namespace ferry {

/// One buffer as the view sees it: a ByteSpan of the size the layout implies. Its `size` is -1
/// while unknown (a data buffer after SetArrayMinimal, before the offsets are read).
using BufferView = ByteSpan;

/// How much validation to run. Each level includes the ones before it.
enum class ValidationLevel : int32_t {
  kNone = 0,
  /// Structure, buffer counts and the sizes that follow from length and offset. Never reads a
  /// data buffer, so it is safe on device memory.
  kMinimal = 1,
  /// Adds O(1) reads of buffer contents (first and last offsets).
  kDefault = 2,
  /// Checks every element: offsets, union ids, dictionary indices, run ends, UTF-8, null counts.
  kFull = 3,
};

/// Whether ArrayView::Validate walks the values of the dictionaries it meets, or takes them as
/// checked already at that level (a decoder's, each checked once as it arrived, which every batch
/// that uses it shares). A dictionary's indices are checked against its length either way.
enum class DictionaryValues : uint8_t { kCheck, kAlreadyChecked };

/// A recursive view over a schema + array pair. It never owns: the ArrowSchema and ArrowArray it
/// was given must outlive it. Build it once per schema with Make, then point it at any number of
/// arrays of that schema with SetArray*; neither step validates beyond what populating requires.
/// Copying it is not allowed (children hold parent-sized state); moving is cheap.
class FERRY_EXPORT ArrayView {
 public:
  /// Build an empty view tree for `schema` (parses every node, no array yet).
  static Result<ArrayView> Make(const ArrowSchema* schema);

  ArrayView() = default;
  ArrayView(ArrayView&&) noexcept = default;
  ArrayView& operator=(ArrayView&&) noexcept = default;
  ArrayView(const ArrayView&) = delete;
  ArrayView& operator=(const ArrayView&) = delete;

  /// Point the view at `array` and fill every buffer size that follows from lengths and offsets
  /// alone, without reading any buffer's contents (safe for device memory). Data-buffer sizes of
  /// binary/string types stay -1. Fails when the structure does not match the schema.
  Status SetArrayMinimal(const ArrowArray* array);
  /// SetArrayMinimal, then read the last offset of each variable-size node (O(1) host reads per
  /// node) to learn data-buffer sizes. The array must be host-accessible.
  Status SetArray(const ArrowArray* array);
  /// Forget the array (keeps the schema-derived tree).
  void Reset();
  /// Record a buffer size learnt elsewhere: device-aware populators read offsets through the
  /// device and store the result here. No effect when `i` is out of range.
  void set_buffer_size(int64_t i, int64_t size) noexcept {
    if (i >= 0 && i < n_buffers()) buffers_[static_cast<size_t>(i)].size = size;
  }

  /// Check the array at `level`. Errors name the path, e.g.
  /// `field "a" > child 0 > element 17: offset 40 > data size 32`.
  Status Validate(ValidationLevel level,
                  DictionaryValues dictionaries = DictionaryValues::kCheck) const;

  // -- Structure --------------------------------------------------------------------------------
  const SchemaView& type() const noexcept { return type_; }
  const ArrowArray* array() const noexcept { return array_; }
  int64_t length() const noexcept { return length_; }
  int64_t offset() const noexcept { return offset_; }
  /// The null count as the producer declared it (-1 when unknown).
  int64_t null_count() const noexcept { return null_count_; }
  /// The field name from the schema ("" when none).
  std::string_view name() const noexcept;
  int64_t n_buffers() const noexcept { return static_cast<int64_t>(buffers_.size()); }
  const BufferView& buffer(int64_t i) const { return buffers_[static_cast<size_t>(i)]; }
  /// The type of buffer i (variadic buffers of view types included).
  BufferType buffer_type(int64_t i) const noexcept;
  int64_t n_children() const noexcept { return static_cast<int64_t>(children_.size()); }
  const ArrayView& child(int64_t i) const { return children_[static_cast<size_t>(i)]; }
  ArrayView& child(int64_t i) { return children_[static_cast<size_t>(i)]; }
  /// The dictionary's view, or nullptr when the type is not dictionary-encoded.
  const ArrayView* dictionary() const noexcept { return dictionary_.get(); }
  /// Child index for a union type id, -1 when the id is not declared.
  int8_t union_child_index(int8_t type_id) const noexcept {
    return type_id < 0 ? -1 : union_child_index_[static_cast<uint8_t>(type_id)];
  }

  // -- Element access (host-accessible arrays; index i is relative to offset()) -----------------
  bool IsValid(int64_t i) const noexcept;
  bool IsNull(int64_t i) const noexcept { return !IsValid(i); }
  /// Integer value of an integer, boolean, date, time, timestamp, duration or dictionary index.
  int64_t GetInt(int64_t i) const noexcept;
  uint64_t GetUInt(int64_t i) const noexcept;
  /// Float value of half, float and double (and integers converted).
  double GetDouble(int64_t i) const noexcept;
  /// Bytes of binary, string, their large and view variants, and fixed-size binary; also the raw
  /// bytes of a decimal or interval element.
  std::string_view GetBytes(int64_t i) const noexcept;
  /// Binary and string views: whether element i's bytes lie inside the array, inline or within
  /// the data buffer its view names (GetBytes reads them unchecked). O(1).
  bool ViewInBounds(int64_t i) const noexcept;
  /// Start and end offsets in the child for list, large list, list view, map and fixed-size list.
  int64_t ListStart(int64_t i) const noexcept;
  int64_t ListEnd(int64_t i) const noexcept;
  /// Union type id of element i, and its index in its child (dense: offset; sparse: i + offset).
  int8_t UnionTypeId(int64_t i) const noexcept;
  int64_t UnionChildOffset(int64_t i) const noexcept;
  /// Run index (within the run-ends child) that holds logical element i; binary search.
  int64_t RunIndex(int64_t i) const noexcept;

 private:
  friend class ArrayValidator;
  Status InitFromSchema(const ArrowSchema* schema, int depth);
  Status SetArrayImpl(const ArrowArray* array, bool read_offsets, int depth);
  // Bytes of view element i (binary/string view), from its inline or out-of-line storage.
  std::string_view GetViewBytes(int64_t i) const noexcept;

  SchemaView type_;
  const ArrowArray* array_ = nullptr;
  int64_t length_ = 0;
  int64_t offset_ = 0;
  int64_t null_count_ = 0;
  std::vector<BufferView> buffers_;
  std::vector<ArrayView> children_;
  std::unique_ptr<ArrayView> dictionary_;
  std::array<int8_t, 128> union_child_index_{};
  // The int64 sizes of the variadic buffers of a view type (host-resident, last buffer).
  const int64_t* variadic_sizes_ = nullptr;
};

}  // namespace ferry
