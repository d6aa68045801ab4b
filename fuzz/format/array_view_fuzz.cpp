// Fuzz ArrayView + Validate on arbitrary ArrowArray trees (fuzzed_array.hpp). Whatever passes
// full validation must render without error.
#include <cstdlib>
#include <vector>

#include "ferry/format/array_view.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "fuzzed_array.hpp"

using namespace ferry::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<ferry::Field> fields = Schemas();
  if (size < 2) return 0;
  Bytes in(data, size);
  auto schema = fields[in.Next() % fields.size()].Export();
  if (!schema.ok()) std::abort();
  Tree tree;
  ArrowArray* root = Shape(schema->get(), in, tree, 0);
  if (root == nullptr) return 0;
  auto view = ferry::ArrayView::Make(schema->get());
  if (!view.ok()) std::abort();
  // Buffers still hold the sentinel: minimal setup must not read them.
  if (!view->SetArrayMinimal(root).ok()) return 0;
  if (!Fill(*view, root, in, tree)) return 0;
  if (!view->SetArray(root).ok()) return 0;
  for (auto level : {ferry::ValidationLevel::kMinimal, ferry::ValidationLevel::kDefault,
                     ferry::ValidationLevel::kFull}) {
    if (!view->Validate(level).ok()) return 0;
  }
  if (!ferry::ArrayToJson(*view).ok()) std::abort();
  return 0;
}
