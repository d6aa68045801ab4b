// Fuzz DeviceArrayView against ArrayView on arbitrary trees (../format/fuzzed_array.hpp) that pass
// full validation. On the CPU, SetArray learns every node's sizes as the host ArrayView does, and
// a copy of the visible slice passes full validation and renders as the original does. Through
// the guarded device (memory the host may not read: offsets are gathered on the device), the
// round trip renders the same again.
#include <cstdlib>
#include <string>
#include <vector>

#include "../format/fuzzed_array.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/device/guarded.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"

namespace {

using ferry::ArrayView;
using ferry::DeviceArrayView;
using ferry::ValidationLevel;

// Every non-empty node's buffer sizes, in pre-order. An empty node's data size is not compared:
// ArrayView reads its one offset, a DeviceArrayView reads none and says 0.
void Sizes(const ArrayView& v, std::vector<int64_t>* out) {
  if (v.length() > 0) {
    for (int64_t i = 0; i < v.n_buffers(); ++i) out->push_back(v.buffer(i).size);
  }
  for (int64_t i = 0; i < v.n_children(); ++i) Sizes(v.child(i), out);
  if (v.dictionary() != nullptr) Sizes(*v.dictionary(), out);
}

// What a copy holds, rendered after a full validation (either failing is a finding).
std::string Render(const ArrowSchema* schema, const ArrowArray* array) {
  auto view = ArrayView::Make(schema);
  if (!view.ok() || !view->SetArray(array).ok() || !view->Validate(ValidationLevel::kFull).ok()) {
    std::abort();
  }
  auto json = ferry::ArrayToJson(*view);
  if (!json.ok()) std::abort();
  return *json;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ferry::fuzz;
  if (size < 2) return 0;
  Bytes in(data, size);
  auto schema = PickField(in).Export();
  if (!schema.ok()) std::abort();
  auto view = ArrayView::Make(schema->get());
  if (!view.ok()) std::abort();
  Tree tree;
  ArrowArray* root = ValidTree(schema->get(), in, tree, &*view);
  if (root == nullptr) return 0;
  auto json = ferry::ArrayToJson(*view);
  if (!json.ok()) std::abort();

  ArrowDeviceArray host{};
  host.array = *root;
  host.device_id = -1;
  host.device_type = ARROW_DEVICE_CPU;
  auto on_host = DeviceArrayView::Make(schema->get());
  if (!on_host.ok() || !on_host->SetArray(&host).ok()) std::abort();
  std::vector<int64_t> learnt;
  std::vector<int64_t> expected;
  Sizes(on_host->array_view(), &learnt);
  Sizes(*view, &expected);
  if (learnt != expected) std::abort();
  if (!on_host->Validate(ValidationLevel::kFull).ok()) std::abort();
  auto copy = on_host->Copy(*ferry::CpuDevice());
  if (!copy.ok() || Render(schema->get(), &(*copy)->array) != *json) std::abort();

  auto on_device = on_host->Copy(*ferry::GuardedDevice());
  if (!on_device.ok()) std::abort();
  auto guarded = DeviceArrayView::Make(schema->get());
  if (!guarded.ok() || !guarded->SetArray(on_device->get()).ok() ||
      !guarded->Validate(ValidationLevel::kDefault).ok()) {
    std::abort();
  }
  auto back = guarded->Copy(*ferry::CpuDevice());
  if (!back.ok() || Render(schema->get(), &(*back)->array) != *json) std::abort();
  return 0;
}
