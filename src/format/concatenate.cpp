// Concatenate: the entry, the dispatch on a node's type, and the flat nodes (validity,
// fixed-width values, binary and string, views). Nested nodes are in concatenate_nested.cpp.
#include "ferry/format/concatenate.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "ferry/format/bits.hpp"
#include "format/concatenate_joiner.hpp"

namespace ferry {

namespace internal {

namespace {

// Bits [from, from + n) of `src` (all set where `src` is NULL) to bits [at, at + n) of `dst`.
void CopyBits(const uint8_t* src, int64_t from, int64_t n, uint8_t* dst, int64_t at) {
  if (src != nullptr && from % 8 == 0 && at % 8 == 0) {
    std::memcpy(dst + at / 8, src + from / 8, static_cast<size_t>(n / 8));
    for (int64_t i = n / 8 * 8; i < n; ++i) SetBit(dst, at + i, GetBit(src, from + i));
    return;
  }
  for (int64_t i = 0; i < n; ++i) SetBit(dst, at + i, src == nullptr || GetBit(src, from + i));
}

}  // namespace

Status Joiner::Join(const ArrayView& shape, std::vector<Slice> slices, const std::string& path,
                    ArrowArray* out) {
  std::erase_if(slices, [](const Slice& s) { return s.length == 0; });
  int64_t length = 0;
  for (const Slice& s : slices) length += s.length;
  const SchemaView& type = shape.type();
  if (shape.dictionary() != nullptr) return JoinDictionary(shape, slices, length, path, out);
  switch (type.storage_type) {
    case TypeId::kNull:
      keep_->MakeNode(out, length, length, 0, nullptr, 0, 0);
      return Status::OK();
    case TypeId::kBinary:
    case TypeId::kString:
      return JoinBinary<int32_t>(slices, length, path, out);
    case TypeId::kLargeBinary:
    case TypeId::kLargeString:
      return JoinBinary<int64_t>(slices, length, path, out);
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      return JoinViews(slices, length, path, out);
    case TypeId::kList:
    case TypeId::kMap:
      return JoinList<int32_t>(shape, slices, length, path, out);
    case TypeId::kLargeList:
      return JoinList<int64_t>(shape, slices, length, path, out);
    case TypeId::kListView:
      return JoinListView<int32_t>(shape, slices, length, path, out);
    case TypeId::kLargeListView:
      return JoinListView<int64_t>(shape, slices, length, path, out);
    case TypeId::kFixedSizeList:
    case TypeId::kStruct:
      return JoinAligned(shape, slices, length, path, out);
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion:
      return JoinUnion(shape, slices, length, path, out);
    case TypeId::kRunEndEncoded:
      return JoinRuns(shape, slices, length, path, out);
    default:
      return JoinFixed(shape, slices, length, out);
  }
}

Result<const void*> Joiner::JoinValidity(const std::vector<Slice>& slices, int64_t length,
                                         int64_t* nulls) {
  *nulls = 0;
  for (const Slice& s : slices) {
    const uint8_t* bits = s.view->buffer(0).data;
    if (bits != nullptr) {
      *nulls += s.length - CountSetBits(bits, s.view->offset() + s.start, s.length);
    }
  }
  if (*nulls == 0) return nullptr;
  HostBuffer* out = NewBuffer();
  FERRY_RETURN_NOT_OK(out->Resize((length + 7) / 8));
  int64_t at = 0;
  for (const Slice& s : slices) {
    CopyBits(s.view->buffer(0).data, s.view->offset() + s.start, s.length, out->data(), at);
    at += s.length;
  }
  return static_cast<const void*>(out->data());
}

Status Joiner::JoinFixed(const ArrayView& shape, const std::vector<Slice>& slices, int64_t length,
                         ArrowArray* out) {
  const SchemaView& type = shape.type();
  int64_t nulls = 0;
  FERRY_ASSIGN_OR_RAISE(const void* validity, JoinValidity(slices, length, &nulls));
  const int64_t bits = type.storage_type == TypeId::kFixedSizeBinary
                           ? int64_t{type.fixed_size} * 8
                           : type.layout.element_size_bits[1];
  HostBuffer* values = NewBuffer();
  if (bits == 1) {
    FERRY_RETURN_NOT_OK(values->Resize((length + 7) / 8));
    int64_t at = 0;
    for (const Slice& s : slices) {
      CopyBits(s.view->buffer(1).data, s.view->offset() + s.start, s.length, values->data(), at);
      at += s.length;
    }
  } else {
    const int64_t width = bits / 8;
    FERRY_RETURN_NOT_OK(values->Resize(length * width));
    int64_t at = 0;
    for (const Slice& s : slices) {
      if (width > 0) {
        std::memcpy(values->data() + at,
                    s.view->buffer(1).data + (s.view->offset() + s.start) * width,
                    static_cast<size_t>(s.length * width));
      }
      at += s.length * width;
    }
  }
  const void* buffers[2] = {validity, Stored(values)};
  keep_->MakeNode(out, length, nulls, 0, buffers, 2, 0);
  return Status::OK();
}

template <typename Offset>
Status Joiner::JoinBinary(const std::vector<Slice>& slices, int64_t length, const std::string& path,
                          ArrowArray* out) {
  int64_t bytes = 0;
  for (const Slice& s : slices) {
    const uint8_t* o = s.view->buffer(1).data;
    const int64_t first = LoadAt<Offset>(o, s.view->offset() + s.start);
    const int64_t last = LoadAt<Offset>(o, s.view->offset() + s.start + s.length);
    if (last < first) {
      return Bad(
          s, "last offset " + std::to_string(last) + " is below its first " + std::to_string(first),
          path);
    }
    bytes += last - first;
  }
  if (bytes > std::numeric_limits<Offset>::max()) {
    return Status::OutOfRange("the parts hold " + std::to_string(bytes) +
                              " bytes of values, past the " +
                              std::to_string(std::numeric_limits<Offset>::max()) +
                              " that 32-bit offsets reach (a large_string or large_binary "
                              "type takes them)" +
                              At(path));
  }
  int64_t nulls = 0;
  FERRY_ASSIGN_OR_RAISE(const void* validity, JoinValidity(slices, length, &nulls));
  HostBuffer* offsets = NewBuffer();
  HostBuffer* data = NewBuffer();
  FERRY_RETURN_NOT_OK(offsets->Resize((length + 1) * static_cast<int64_t>(sizeof(Offset))));
  FERRY_RETURN_NOT_OK(data->Resize(bytes));
  int64_t row = 0;
  int64_t base = 0;
  for (const Slice& s : slices) {
    const uint8_t* o = s.view->buffer(1).data;
    const int64_t at = s.view->offset() + s.start;
    const int64_t first = LoadAt<Offset>(o, at);
    for (int64_t i = 1; i <= s.length; ++i) {
      StoreAt<Offset>(offsets->data(), row + i,
                      static_cast<Offset>(base + (LoadAt<Offset>(o, at + i) - first)));
    }
    const int64_t n = LoadAt<Offset>(o, at + s.length) - first;
    if (n > 0)
      std::memcpy(data->data() + base, s.view->buffer(2).data + first, static_cast<size_t>(n));
    base += n;
    row += s.length;
  }
  const void* buffers[3] = {validity, offsets->data(), Stored(data)};
  keep_->MakeNode(out, length, nulls, 0, buffers, 3, 0);
  return Status::OK();
}

Status Joiner::JoinViews(const std::vector<Slice>& slices, int64_t length, const std::string& path,
                         ArrowArray* out) {
  int64_t nulls = 0;
  FERRY_ASSIGN_OR_RAISE(const void* validity, JoinValidity(slices, length, &nulls));
  HostBuffer* views = NewBuffer();
  FERRY_RETURN_NOT_OK(views->Resize(length * 16));
  std::vector<HostBuffer*> data;
  int64_t row = 0;
  for (const Slice& s : slices) {
    for (int64_t i = 0; i < s.length; ++i, ++row) {
      uint8_t* view = views->data() + row * 16;
      const int64_t at = s.start + i;
      if (!s.view->IsValid(at)) continue;  // zeroed: an empty view
      std::memcpy(view, s.view->buffer(1).data + (s.view->offset() + at) * 16, 16);
      const int32_t size = LoadAt<int32_t>(view, 0);
      if (size <= 12) continue;
      if (!s.view->ViewInBounds(at)) {
        return Bad(s,
                   "element " + std::to_string(at) + " points past its data (buffer " +
                       std::to_string(LoadAt<int32_t>(view, 2)) + ", offset " +
                       std::to_string(LoadAt<int32_t>(view, 3)) + ", size " + std::to_string(size) +
                       ")",
                   path);
      }
      if (data.empty() || data.back()->size() + size > std::numeric_limits<int32_t>::max()) {
        data.push_back(NewBuffer());
      }
      HostBuffer* to = data.back();
      StoreAt<int32_t>(view, 2, static_cast<int32_t>(data.size() - 1));
      StoreAt<int32_t>(view, 3, static_cast<int32_t>(to->size()));
      const std::string_view bytes = s.view->GetBytes(at);
      FERRY_RETURN_NOT_OK(to->Append(ByteSpan(bytes.data(), static_cast<int64_t>(bytes.size()))));
    }
  }
  HostBuffer* sizes = NewBuffer();
  std::vector<const void*> buffers = {validity, Stored(views)};
  for (HostBuffer* d : data) {
    buffers.push_back(Stored(d));
    FERRY_RETURN_NOT_OK(sizes->Append(d->size()));
  }
  buffers.push_back(Stored(sizes));
  keep_->MakeNode(out, length, nulls, 0, buffers.data(), static_cast<int64_t>(buffers.size()), 0);
  return Status::OK();
}

}  // namespace internal

Result<UniqueArray> Concatenate(const ArrowSchema* schema, std::span<const ArrowArray* const> parts,
                                std::span<const std::string_view> part_names) {
  if (schema == nullptr || schema->release == nullptr) {
    return Status::Invalid("the schema is NULL or released");
  }
  FERRY_ASSIGN_OR_RAISE(ArrayView shape, ArrayView::Make(schema));
  std::vector<ArrayView> views;
  views.reserve(parts.size());
  std::vector<internal::Slice> slices;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string name =
        i < part_names.size() ? std::string(part_names[i]) : "part " + std::to_string(i);
    if (parts[i] == nullptr || parts[i]->release == nullptr) {
      return Status::Invalid(name + " is NULL or released");
    }
    FERRY_ASSIGN_OR_RAISE(ArrayView view, ArrayView::Make(schema));
    Status st = view.SetArray(parts[i]);
    if (st.ok()) st = view.Validate(ValidationLevel::kDefault);
    if (!st.ok()) return Status(st.code(), name + " is invalid: " + st.message());
    views.push_back(std::move(view));
  }
  slices.reserve(views.size());
  for (size_t i = 0; i < views.size(); ++i) {
    slices.push_back(internal::Slice{&views[i], 0, views[i].length(), i});
  }
  auto joined = std::make_shared<internal::Joined>();
  KeepAlive keep(joined);
  UniqueArray out;
  internal::Joiner joiner(part_names, joined.get(), &keep);
  Status st = joiner.Join(shape, std::move(slices), "", out.get());
  FERRY_RETURN_NOT_OK(st);
  return out;
}

}  // namespace ferry
