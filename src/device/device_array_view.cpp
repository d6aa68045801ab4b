// DeviceArrayView: learning sizes with one gathered read and one wait (its copies are in
// device_array_view_copy.cpp).
#include "ferry/device/device_array_view.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "device/device_array_view_nodes.hpp"
#include "device/device_support.hpp"

namespace ferry {

namespace internal {

bool HasOffsets(const ArrayView& v) {
  const Layout& l = v.type().layout;
  if (l.n_fixed_buffers < 2) return false;
  const TypeId t = v.type().storage_type;
  if (t == TypeId::kListView || t == TypeId::kLargeListView) return false;
  return l.buffer_type[1] == BufferType::kDataOffset || l.buffer_type[1] == BufferType::kListOffset;
}

int OffsetWidth(const ArrayView& v) { return v.type().layout.element_size_bits[1] / 8; }

namespace {

int64_t LoadWidth(const uint8_t* p, int width) {
  if (width == 4) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

Status ReadValues(Device& device, const std::vector<Read>& reads, void* stream,
                  int64_t* round_trips) {
  if (reads.empty()) return Status::OK();
  if (device.host_accessible()) {
    for (const Read& r : reads) *r.out = LoadWidth(r.ptr, r.width);
    return Status::OK();
  }
  const auto n = static_cast<int64_t>(reads.size());
  std::vector<uint8_t> staging(static_cast<size_t>(n) * 8);
  void* scratch = nullptr;
  Status st;
  if (n == 1) {
    st = CopyBytes(device, reads[0].ptr, *CpuDevice(), staging.data(), reads[0].width, stream);
  } else {
    FERRY_ASSIGN_OR_RAISE(scratch, device.Allocate(n * 8, stream));
    auto* gather = static_cast<uint8_t*>(scratch);
    for (int64_t i = 0; i < n && st.ok(); ++i) {
      const Read& r = reads[static_cast<size_t>(i)];
      st = CopyBytes(device, r.ptr, device, gather + i * 8, r.width, stream);
    }
    if (st.ok()) st = CopyBytes(device, gather, *CpuDevice(), staging.data(), n * 8, stream);
  }
  if (st.ok()) {
    st = device.SynchronizeEvent(nullptr, stream);
    *round_trips += 1;
  }
  if (scratch != nullptr) device.Free(scratch, n * 8);
  FERRY_RETURN_NOT_OK(st);
  for (size_t i = 0; i < reads.size(); ++i) {
    *reads[i].out = LoadWidth(staging.data() + i * 8, reads[i].width);
  }
  return Status::OK();
}

}  // namespace internal

namespace {

// The data size of every string and binary node under `v` from its last offset, read in place
// (host memory: no gather, no copy). `wait` runs once, before the first read.
template <typename Wait>
Status SizeDataOnHost(const ArrayView& v, Wait& wait) {
  for (int64_t i = 0; i < v.n_children(); ++i)
    FERRY_RETURN_NOT_OK(SizeDataOnHost(v.child(i), wait));
  if (v.dictionary() != nullptr) FERRY_RETURN_NOT_OK(SizeDataOnHost(*v.dictionary(), wait));
  if (!internal::HasOffsets(v) || v.type().layout.buffer_type[1] != BufferType::kDataOffset) {
    return Status::OK();
  }
  const uint8_t* offsets = v.buffer(1).data;
  int64_t last = 0;
  if (v.length() > 0 && offsets != nullptr) {
    FERRY_RETURN_NOT_OK(wait());
    const int w = internal::OffsetWidth(v);
    last = internal::LoadWidth(offsets + (v.offset() + v.length()) * w, w);
  }
  const_cast<ArrayView&>(v).set_buffer_size(2, last);
  return Status::OK();
}

}  // namespace

using internal::HasOffsets;
using internal::OffsetWidth;
using internal::Read;
using internal::ReadValues;

Result<DeviceArrayView> DeviceArrayView::Make(const ArrowSchema* schema) {
  DeviceArrayView out;
  FERRY_ASSIGN_OR_RAISE(out.view_, ArrayView::Make(schema));
  return out;
}

void DeviceArrayView::Reset() {
  view_.Reset();
  device_ = nullptr;
  array_ = nullptr;
  offsets_.clear();
}

Status DeviceArrayView::SetArrayMinimal(const ArrowDeviceArray* array) {
  // The view's tree is reset only where setting it fails: on success every node is set anew,
  // and a walk to clear it first would cost as much again.
  device_ = nullptr;
  array_ = nullptr;
  if (!offsets_.empty()) offsets_.clear();
  Status st;
  if (array == nullptr) {
    st = Status::Invalid("device array is NULL");
  } else if (array->array.release == nullptr) {
    st = Status::Invalid("device array is released");
  } else if (Result<Device*> device = ResolveDevice(array->device_type, array->device_id);
             !device.ok()) {
    st = device.status();
  } else {
    st = view_.SetArrayMinimal(&array->array);
    if (st.ok()) {
      device_ = *device;
      array_ = array;
      return st;
    }
  }
  view_.Reset();
  return st;
}

Status DeviceArrayView::WaitSourceEvent(void* stream, bool host_reads) const {
  if (array_->sync_event == nullptr) return Status::OK();
  if (host_reads || stream == nullptr) {
    FERRY_RETURN_NOT_OK(device_->SynchronizeEvent(array_->sync_event, nullptr));
    round_trips_ += 1;
    return Status::OK();
  }
  return device_->SynchronizeEvent(array_->sync_event, stream);
}

Status DeviceArrayView::Learn(void* stream) {
  if (device_->host_accessible()) {
    // Each offset is one load where it lies: nothing to gather, and nothing kept for Copy or
    // Validate, which read host offsets themselves as cheaply.
    bool waited = false;
    auto wait = [&]() -> Status {
      if (waited) return Status::OK();
      waited = true;
      return WaitSourceEvent(stream, /*host_reads=*/true);
    };
    return SizeDataOnHost(view_, wait);
  }
  // Offset-bearing nodes anywhere in the tree have explicit lengths, so all their first and
  // last offsets are known up front: one gather serves every depth.
  std::vector<std::pair<const ArrayView*, std::pair<int64_t, int64_t>*>> targets;
  std::vector<Read> reads;
  std::vector<const ArrayView*> stack{&view_};
  while (!stack.empty()) {
    const ArrayView* v = stack.back();
    stack.pop_back();
    for (int64_t i = 0; i < v->n_children(); ++i) stack.push_back(&v->child(i));
    if (v->dictionary() != nullptr) stack.push_back(v->dictionary());
    if (!HasOffsets(*v)) continue;
    auto& slot = offsets_[v];
    slot = {0, 0};
    const uint8_t* offsets = v->buffer(1).data;
    if (v->length() == 0 || offsets == nullptr) continue;
    const int w = OffsetWidth(*v);
    reads.push_back({offsets + v->offset() * w, w, &slot.first});
    reads.push_back({offsets + (v->offset() + v->length()) * w, w, &slot.second});
  }
  if (!reads.empty()) FERRY_RETURN_NOT_OK(WaitSourceEvent(stream, device_->host_accessible()));
  FERRY_RETURN_NOT_OK(ReadValues(*device_, reads, stream, &round_trips_));
  for (auto& [v, range] : offsets_) {
    if (v->type().layout.buffer_type[1] == BufferType::kDataOffset) {
      const_cast<ArrayView*>(v)->set_buffer_size(2,
                                                 v->buffer(1).data == nullptr ? 0 : range.second);
    }
  }
  return Status::OK();
}

Status DeviceArrayView::SetArrayAsync(const ArrowDeviceArray* array, void* stream) {
  FERRY_RETURN_NOT_OK(SetArrayMinimal(array));
  round_trips_ = 0;
  FERRY_RETURN_NOT_OK(internal::NeedStream(*device_, *device_, stream, "SetArrayAsync"));
  return Learn(stream);
}

Status DeviceArrayView::SetArray(const ArrowDeviceArray* array) {
  FERRY_RETURN_NOT_OK(SetArrayMinimal(array));
  round_trips_ = 0;
  FERRY_ASSIGN_OR_RAISE(void* stream, device_->InternalStream());
  return Learn(stream);
}

Status DeviceArrayView::Validate(ValidationLevel level) const {
  if (array_ == nullptr) return Status::Invalid("device array view has no array (call SetArray)");
  if (level == ValidationLevel::kNone) return Status::OK();
  FERRY_RETURN_NOT_OK(view_.Validate(ValidationLevel::kMinimal));
  if (level == ValidationLevel::kMinimal) return Status::OK();
  if (device_->host_accessible()) return view_.Validate(level);
  for (const auto& [v, range] : offsets_) {
    const std::string where = "field \"" + std::string(v->name()) + "\"";
    if (range.first < 0 || range.second < range.first) {
      return Status::Invalid(where + ": offsets run from " + std::to_string(range.first) + " to " +
                             std::to_string(range.second));
    }
    if (v->type().layout.buffer_type[1] == BufferType::kListOffset && v->n_children() > 0 &&
        range.second > v->child(0).length()) {
      return Status::Invalid(where + ": last offset " + std::to_string(range.second) +
                             " > child length " + std::to_string(v->child(0).length()));
    }
  }
  if (level == ValidationLevel::kDefault) return Status::OK();
  FERRY_ASSIGN_OR_RAISE(UniqueDeviceArray host, Copy(*CpuDevice()));
  FERRY_ASSIGN_OR_RAISE(ArrayView copy, ArrayView::Make(view_.type().schema));
  FERRY_RETURN_NOT_OK(copy.SetArray(&host->array));
  return copy.Validate(ValidationLevel::kFull);
}

}  // namespace ferry
