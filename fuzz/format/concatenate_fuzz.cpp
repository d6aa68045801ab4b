// Fuzz Concatenate on arbitrary valid arrays (fuzzed_array.hpp): one to three trees of one schema,
// each passing full validation, joined into one array that must pass full validation too and
// render as the parts' rows, one part after the other.
#include <cstdlib>
#include <string>
#include <vector>

#include "ferry/format/array_view.hpp"
#include "ferry/format/concatenate.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "fuzzed_array.hpp"

namespace {

// The rows of a rendered array: its JSON without the outer brackets.
std::string Rows(const std::string& json) { return json.substr(1, json.size() - 2); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ferry::fuzz;
  if (size < 3) return 0;
  Bytes in(data, size);
  auto schema = PickField(in).Export();
  if (!schema.ok()) std::abort();
  const int64_t n_parts = 1 + in.Small(2);
  Tree tree;
  std::vector<const ArrowArray*> parts;
  std::string rows;
  for (int64_t p = 0; p < n_parts; ++p) {
    auto view = ferry::ArrayView::Make(schema->get());
    if (!view.ok()) std::abort();
    ArrowArray* part = ValidTree(schema->get(), in, tree, &*view);
    if (part == nullptr) return 0;
    auto json = ferry::ArrayToJson(*view);
    if (!json.ok()) std::abort();
    const std::string these = Rows(*json);
    if (!these.empty()) rows += (rows.empty() ? "" : ", ") + these;
    parts.push_back(part);
  }
  auto joined = ferry::Concatenate(schema->get(), parts);
  if (!joined.ok()) std::abort();
  auto view = ferry::ArrayView::Make(schema->get());
  if (!view.ok() || !view->SetArray(joined->get()).ok() ||
      !view->Validate(ferry::ValidationLevel::kFull).ok()) {
    std::abort();
  }
  auto json = ferry::ArrayToJson(*view);
  if (!json.ok() || *json != "[" + rows + "]") std::abort();
  return 0;
}
