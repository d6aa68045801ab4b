// Array: owned schema + array with a view over them.
#include "ferry/format/array.hpp"

namespace ferry {

Result<Array> Array::Import(UniqueSchema schema, UniqueArray array) {
  if (!schema.valid()) return Status::Invalid("schema is released");
  if (!array.valid()) return Status::Invalid("array is released");
  Array out;
  out.schema_ = std::make_unique<UniqueSchema>(std::move(schema));
  out.array_ = std::make_unique<UniqueArray>(std::move(array));
  FERRY_ASSIGN_OR_RAISE(ArrayView view, ArrayView::Make(out.schema_->get()));
  out.view_ = std::make_unique<ArrayView>(std::move(view));
  FERRY_RETURN_NOT_OK(out.view_->SetArray(out.array_->get()));
  return out;
}

Result<Array> Array::Import(ArrowSchema* schema, ArrowArray* array) {
  if (schema == nullptr || array == nullptr) return Status::Invalid("schema or array is NULL");
  return Import(UniqueSchema(schema), UniqueArray(array));
}

const ArrowSchema* Array::schema() const noexcept { return schema_ ? schema_->get() : nullptr; }
const ArrowArray* Array::array() const noexcept { return array_ ? array_->get() : nullptr; }

void Array::Export(ArrowSchema* out_schema, ArrowArray* out_array) && {
  schema_->move_to(out_schema);
  array_->move_to(out_array);
  view_->Reset();
}

}  // namespace ferry
