// ArrayBuilder: builds an array of any Arrow type, element by element, into owned buffers.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/format/bitmap_builder.hpp"
#include "ferry/format/schema_view.hpp"

namespace ferry {

/// A builder for one schema node and, recursively, its children and dictionary. It owns the
/// buffers it fills; Finish moves them into an exported ArrowArray whose release frees each
/// exactly once. Every append checks that it fits the type and fails with a clear error
/// otherwise. Nested values are built by appending to children, then calling FinishElement.
///
///     auto b = ArrayBuilder::Make(schema.get()).ValueOrDie();   // list<int32>
///     b->child(0)->AppendInt(1); b->child(0)->AppendInt(2); b->FinishElement();  // [1, 2]
///     b->AppendNull();                                                          // null
///     UniqueArray array = b->Finish().ValueOrDie();
class FERRY_EXPORT ArrayBuilder {
 public:
  /// A builder for arrays of `schema` (which must outlive the builder).
  static Result<std::unique_ptr<ArrayBuilder>> Make(const ArrowSchema* schema,
                                                    Allocator* allocator = nullptr);

  const SchemaView& type() const noexcept { return type_; }
  /// Elements appended so far.
  int64_t length() const noexcept { return length_; }
  int64_t n_children() const noexcept { return static_cast<int64_t>(children_.size()); }
  ArrayBuilder* child(int64_t i) { return children_[static_cast<size_t>(i)].get(); }
  /// The builder of the dictionary's values (nullptr when not dictionary-encoded).
  ArrayBuilder* dictionary() { return dictionary_.get(); }

  /// Append `n` nulls. Unions append a null to their first child; run-end encoded arrays a run
  /// of `n` over one null value; structs and fixed-size lists append nulls to their children.
  Status AppendNull(int64_t n = 1);
  /// Append `n` valid default elements (zero, empty string, empty list, ...).
  Status AppendEmpty(int64_t n = 1);
  /// Append an integer (integer, bool, date, time, timestamp, duration, interval months and
  /// decimal types; range-checked). On a dictionary builder the value is looked up or added.
  Status AppendInt(int64_t value);
  Status AppendUInt(uint64_t value);
  /// Append a float (half, float, double; half is rounded to nearest even).
  Status AppendDouble(double value);
  /// Append bytes: string and binary types (any width or view), fixed-size binary (exact
  /// width), and the raw little-endian bytes of any fixed-width type (decimals, intervals).
  Status AppendBytes(std::string_view value);
  /// Append a decimal written in base 10 ("-12.345"); the type's scale is applied.
  Status AppendDecimal(std::string_view text);
  /// Start a union element whose value is appended next to the child of `type_id`.
  Status AppendUnion(int8_t type_id);
  /// Close one valid element of a list kind, map or struct from what its children received.
  Status FinishElement();
  /// Run-end encoded: close a run of `run_length` over the value just appended to child 1.
  Status AppendRun(int64_t run_length);
  /// Run-end encoded: lengthen the last run by `n`.
  Status ExtendLastRun(int64_t n);
  /// Dictionary: append a raw index into the dictionary values.
  Status AppendIndex(int64_t index);

  /// Export what was built (this builder starts over empty).
  Result<UniqueArray> Finish();

  ArrayBuilder(const ArrayBuilder&) = delete;
  ArrayBuilder& operator=(const ArrayBuilder&) = delete;
  ~ArrayBuilder();

 private:
  ArrayBuilder() = default;
  Status Init(const ArrowSchema* schema, Allocator* allocator, int depth);
  void ResetBuffers();
  Status TypeError(const char* what) const;
  Status AppendFixed(ByteSpan value);
  Status AppendValidity(bool valid, int64_t n);
  Status AppendOffsetValue(HostBuffer* buffer, int64_t value);
  Status AppendDictionaryKey(std::string key, const std::function<Status(ArrayBuilder*)>& append);
  Status CheckIntRange(int64_t value) const;

  SchemaView type_;
  Allocator* allocator_ = nullptr;
  bool is_dictionary_ = false;
  int64_t length_ = 0;
  int64_t null_count_ = 0;
  BitmapBuilder validity_;
  HostBuffer data_;     // values, bool bits, views, union type ids
  BitmapBuilder bits_;  // boolean values
  HostBuffer offsets_;  // data, list or union offsets
  HostBuffer sizes_;    // list-view sizes
  std::vector<HostBuffer> variadic_;
  int64_t list_view_start_ = 0;
  int64_t last_run_end_ = 0;
  std::vector<std::unique_ptr<ArrayBuilder>> children_;
  std::unique_ptr<ArrayBuilder> dictionary_;
  std::unordered_map<std::string, int64_t> dictionary_index_;
};

}  // namespace ferry
