// Array: an owned ArrowSchema + ArrowArray pair with a view over it.
#pragma once

#include <memory>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/format/array_view.hpp"

namespace ferry {

/// An owned schema and array, imported from any producer or built by ferry, plus an ArrayView of
/// them. Move-only; the C structs live on the heap so the view stays valid when the Array moves.
/// Import and Export move the structs (no buffer is copied); the release callbacks run once.
class FERRY_EXPORT Array {
 public:
  /// Take ownership of `*schema` and `*array` (both are marked released) and point a view at them
  /// with ArrayView::SetArray. Validation is a separate step: call Validate.
  static Result<Array> Import(ArrowSchema* schema, ArrowArray* array);
  /// Same, from owners.
  static Result<Array> Import(UniqueSchema schema, UniqueArray array);

  Array(Array&&) noexcept = default;
  Array& operator=(Array&&) noexcept = default;

  const ArrowSchema* schema() const noexcept;
  const ArrowArray* array() const noexcept;
  const ArrayView& view() const noexcept { return *view_; }
  int64_t length() const noexcept { return view_->length(); }

  /// Validate at `level` (see ArrayView::Validate).
  Status Validate(ValidationLevel level,
                  DictionaryValues dictionaries = DictionaryValues::kCheck) const {
    return view_->Validate(level, dictionaries);
  }

  /// Move the structs out to the caller (who then owns them); this Array becomes empty.
  void Export(ArrowSchema* out_schema, ArrowArray* out_array) &&;

 private:
  Array() = default;
  std::unique_ptr<UniqueSchema> schema_;
  std::unique_ptr<UniqueArray> array_;
  std::unique_ptr<ArrayView> view_;
};

}  // namespace ferry
