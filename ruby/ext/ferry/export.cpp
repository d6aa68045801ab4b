// Ferry's objects as Ruby MemoryView exporters: filling rb_memory_view_t from a ferry view and
// releasing exactly what was allocated, exactly once.
#include <unordered_map>
#include <vector>

#include "ferry_ext.hpp"

namespace ferry_ruby {
namespace {

namespace mv = ferry::memview;

// What one export allocated: the ferry view (whose owner keeps the memory alive) and the
// arrays Ruby's struct points into.
struct ExportState {
  mv::MemoryView view;
  std::vector<ssize_t> shape;
  std::vector<ssize_t> strides;
};

// Views handed out per exported object. Only touched with the GVL held; the objects are pinned
// by Ruby's exported-object registry while their count is positive, so VALUE keys are stable.
std::unordered_map<VALUE, int64_t>& Counts() {
  static std::unordered_map<VALUE, int64_t> counts;
  return counts;
}

}  // namespace

bool ExportToRuby(VALUE obj, mv::MemoryView view, int flags, rb_memory_view_t* out) {
  // Ruby's consumers (Fiddle::MemoryView asks with 0) read format, shape and strides whatever
  // they asked, so the check keeps them; the flags only refuse what cannot be met.
  mv::MemoryView checked = view;
  ferry::Status st = mv::ConformToRequest(&checked, flags | mv::kStrides | mv::kFormat);
  if (!st.ok()) {
    LastExportError() = st.message();
    return false;
  }
  auto* state = new ExportState{std::move(view), {}, {}};
  const mv::MemoryView& v = state->view;
  if (v.format.empty()) state->view.format.assign(1, 'C');
  for (int64_t d = 0; d < v.ndim; ++d) {
    state->shape.push_back(static_cast<ssize_t>(v.shape[static_cast<size_t>(d)]));
    state->strides.push_back(static_cast<ssize_t>(v.stride(d)));
  }
  out->obj = obj;
  out->data = v.data;
  // The bytes from data to the end of the furthest item, so that a consumer reading byte_size
  // bytes from data (Fiddle's #to_s) stays inside the memory, whatever the strides' signs.
  int64_t span = v.n_items() == 0 ? 0 : v.item_size;
  for (int64_t d = 0; d < v.ndim && span > 0; ++d) {
    const int64_t reach = (v.shape[static_cast<size_t>(d)] - 1) * v.stride(d);
    if (reach > 0) span += reach;
  }
  out->byte_size = static_cast<ssize_t>(span);
  out->readonly = v.readonly;
  out->format = v.format.c_str();
  out->item_size = static_cast<ssize_t>(v.item_size);
  // Ruby's release frees item_desc.components, so it must start empty (Ruby fills it lazily).
  out->item_desc.components = nullptr;
  out->item_desc.length = 0;
  out->ndim = static_cast<ssize_t>(v.ndim);
  out->shape = state->shape.data();
  out->strides = state->strides.data();
  out->sub_offsets = nullptr;
  out->private_data = state;
  ++Counts()[obj];
  LastExportError().clear();
  return true;
}

bool ReleaseRubyExport(VALUE obj, rb_memory_view_t* view) {
  auto* state = static_cast<ExportState*>(view->private_data);
  if (state == nullptr) return false;  // released already: nothing of ours is left
  view->private_data = nullptr;
  view->data = nullptr;
  view->shape = nullptr;
  view->strides = nullptr;
  view->format = nullptr;
  delete state;
  auto it = Counts().find(obj);
  if (it != Counts().end() && --it->second <= 0) Counts().erase(it);
  return true;
}

int64_t RubyExportCount(VALUE obj) {
  auto it = Counts().find(obj);
  return it == Counts().end() ? 0 : it->second;
}

}  // namespace ferry_ruby
