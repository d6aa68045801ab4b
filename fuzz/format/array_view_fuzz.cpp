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
  if (size < 2) return 0;
  Bytes in(data, size);
  auto schema = PickField(in).Export();
  if (!schema.ok()) std::abort();
  auto view = ferry::ArrayView::Make(schema->get());
  if (!view.ok()) std::abort();
  Tree tree;
  if (ValidTree(schema->get(), in, tree, &*view) == nullptr) return 0;
  if (!ferry::ArrayToJson(*view).ok()) std::abort();
  return 0;
}
