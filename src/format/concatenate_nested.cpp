// Concatenate's nested nodes: lists and maps, list views, structs and fixed-size lists,
// unions, run-end encoded and dictionary-encoded (concatenate_joiner.hpp).
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "format/concatenate_joiner.hpp"

namespace ferry::internal {

template <typename Offset>
Status Joiner::JoinList(const ArrayView& shape, const std::vector<Slice>& slices, int64_t length,
                        const std::string& path, ArrowArray* out) {
  std::vector<Slice> items;
  int64_t total = 0;
  for (const Slice& s : slices) {
    const uint8_t* o = s.view->buffer(1).data;
    const int64_t first = LoadAt<Offset>(o, s.view->offset() + s.start);
    const int64_t last = LoadAt<Offset>(o, s.view->offset() + s.start + s.length);
    if (first < 0 || last < first || last > s.view->child(0).length()) {
      return Bad(s,
                 "offsets run from " + std::to_string(first) + " to " + std::to_string(last) +
                     ", outside its child's " + std::to_string(s.view->child(0).length()) + " rows",
                 path);
    }
    items.push_back(Slice{&s.view->child(0), first, last - first, s.part});
    total += last - first;
  }
  if (total > std::numeric_limits<Offset>::max()) {
    return Status::OutOfRange("the parts' lists hold " + std::to_string(total) +
                              " child rows, past the " +
                              std::to_string(std::numeric_limits<Offset>::max()) +
                              " that 32-bit offsets reach (a large_list takes them)" + At(path));
  }
  int64_t nulls = 0;
  FERRY_ASSIGN_OR_RAISE(const void* validity, JoinValidity(slices, length, &nulls));
  HostBuffer* offsets = NewBuffer();
  FERRY_RETURN_NOT_OK(offsets->Resize((length + 1) * static_cast<int64_t>(sizeof(Offset))));
  int64_t row = 0;
  int64_t base = 0;
  for (size_t k = 0; k < slices.size(); ++k) {
    const Slice& s = slices[k];
    const uint8_t* o = s.view->buffer(1).data;
    const int64_t at = s.view->offset() + s.start;
    for (int64_t i = 1; i <= s.length; ++i) {
      StoreAt<Offset>(offsets->data(), row + i,
                      static_cast<Offset>(base + (LoadAt<Offset>(o, at + i) - items[k].start)));
    }
    base += items[k].length;
    row += s.length;
  }
  const void* buffers[2] = {validity, offsets->data()};
  ArrowArray* children = keep_->MakeNode(out, length, nulls, 0, buffers, 2, 1).children;
  return Join(shape.child(0), std::move(items), ChildPath(path, shape.child(0), 0), children);
}

template <typename Offset>
Status Joiner::JoinListView(const ArrayView& shape, const std::vector<Slice>& slices,
                            int64_t length, const std::string& path, ArrowArray* out) {
  std::vector<Slice> items;
  int64_t total = 0;
  for (const Slice& s : slices) {
    const uint8_t* o = s.view->buffer(1).data;
    const uint8_t* z = s.view->buffer(2).data;
    const int64_t rows = s.view->child(0).length();
    int64_t lo = std::numeric_limits<int64_t>::max();
    int64_t hi = 0;
    for (int64_t i = s.start; i < s.start + s.length; ++i) {
      const int64_t offset = LoadAt<Offset>(o, s.view->offset() + i);
      const int64_t size = LoadAt<Offset>(z, s.view->offset() + i);
      if (!s.view->IsValid(i) || size == 0) continue;
      if (offset < 0 || size < 0 || offset > rows || size > rows - offset) {
        return Bad(s,
                   "element " + std::to_string(i) + " spans rows " + std::to_string(offset) +
                       " to " + std::to_string(offset + size) + " of a child of " +
                       std::to_string(rows),
                   path);
      }
      lo = std::min(lo, offset);
      hi = std::max(hi, offset + size);
    }
    if (hi == 0) lo = 0;
    items.push_back(Slice{&s.view->child(0), lo, hi - lo, s.part});
    total += hi - lo;
  }
  if (total > std::numeric_limits<Offset>::max()) {
    return Status::OutOfRange(
        "the parts' list views span " + std::to_string(total) + " child rows, past the " +
        std::to_string(std::numeric_limits<Offset>::max()) +
        " that 32-bit offsets reach (a large_list_view takes them)" + At(path));
  }
  int64_t nulls = 0;
  FERRY_ASSIGN_OR_RAISE(const void* validity, JoinValidity(slices, length, &nulls));
  HostBuffer* offsets = NewBuffer();
  HostBuffer* sizes = NewBuffer();
  FERRY_RETURN_NOT_OK(offsets->Resize(length * static_cast<int64_t>(sizeof(Offset))));
  FERRY_RETURN_NOT_OK(sizes->Resize(length * static_cast<int64_t>(sizeof(Offset))));
  int64_t row = 0;
  int64_t base = 0;
  for (size_t k = 0; k < slices.size(); ++k) {
    const Slice& s = slices[k];
    for (int64_t i = s.start; i < s.start + s.length; ++i, ++row) {
      const int64_t size = LoadAt<Offset>(s.view->buffer(2).data, s.view->offset() + i);
      if (!s.view->IsValid(i) || size == 0) continue;  // zeroed
      const int64_t offset = LoadAt<Offset>(s.view->buffer(1).data, s.view->offset() + i);
      StoreAt<Offset>(offsets->data(), row, static_cast<Offset>(base + offset - items[k].start));
      StoreAt<Offset>(sizes->data(), row, static_cast<Offset>(size));
    }
    base += items[k].length;
  }
  const void* buffers[3] = {validity, Stored(offsets), Stored(sizes)};
  ArrowArray* children = keep_->MakeNode(out, length, nulls, 0, buffers, 3, 1).children;
  return Join(shape.child(0), std::move(items), ChildPath(path, shape.child(0), 0), children);
}

Status Joiner::JoinAligned(const ArrayView& shape, const std::vector<Slice>& slices, int64_t length,
                           const std::string& path, ArrowArray* out) {
  const int64_t per_row =
      shape.type().storage_type == TypeId::kFixedSizeList ? int64_t{shape.type().fixed_size} : 1;
  int64_t nulls = 0;
  FERRY_ASSIGN_OR_RAISE(const void* validity, JoinValidity(slices, length, &nulls));
  const void* buffers[1] = {validity};
  ArrowArray* children =
      keep_->MakeNode(out, length, nulls, 0, buffers, 1, shape.n_children()).children;
  for (int64_t c = 0; c < shape.n_children(); ++c) {
    std::vector<Slice> rows;
    for (const Slice& s : slices) {
      const ArrayView& child = s.view->child(c);
      const int64_t first = (s.view->offset() + s.start) * per_row;
      if (first + s.length * per_row > child.length()) {
        return Bad(s,
                   "child " + std::to_string(c) + " has " + std::to_string(child.length()) +
                       " rows, fewer than its parent's slice needs",
                   path);
      }
      rows.push_back(Slice{&child, first, s.length * per_row, s.part});
    }
    FERRY_RETURN_NOT_OK(
        Join(shape.child(c), std::move(rows), ChildPath(path, shape.child(c), c), &children[c]));
  }
  return Status::OK();
}

Status Joiner::JoinUnion(const ArrayView& shape, const std::vector<Slice>& slices, int64_t length,
                         const std::string& path, ArrowArray* out) {
  const bool dense = shape.type().storage_type == TypeId::kDenseUnion;
  const int64_t n = shape.n_children();
  HostBuffer* ids = NewBuffer();
  HostBuffer* offsets = NewBuffer();
  FERRY_RETURN_NOT_OK(ids->Resize(length));
  if (dense) FERRY_RETURN_NOT_OK(offsets->Resize(length * 4));
  std::vector<std::vector<Slice>> rows(static_cast<size_t>(n));
  std::vector<int64_t> base(static_cast<size_t>(n), 0);
  int64_t row = 0;
  for (const Slice& s : slices) {
    std::memcpy(ids->data() + row, s.view->buffer(0).data + s.view->offset() + s.start,
                static_cast<size_t>(s.length));
    if (!dense) {
      for (int64_t c = 0; c < n; ++c) {
        const ArrayView& child = s.view->child(c);
        if (s.view->offset() + s.start + s.length > child.length()) {
          return Bad(s, "child " + std::to_string(c) + " is shorter than the union", path);
        }
        rows[static_cast<size_t>(c)].push_back(
            Slice{&child, s.view->offset() + s.start, s.length, s.part});
      }
      row += s.length;
      continue;
    }
    std::vector<int64_t> lo(static_cast<size_t>(n), std::numeric_limits<int64_t>::max());
    std::vector<int64_t> hi(static_cast<size_t>(n), 0);
    for (int64_t i = s.start; i < s.start + s.length; ++i) {
      const int8_t c = s.view->union_child_index(s.view->UnionTypeId(i));
      const int64_t at = s.view->UnionChildOffset(i);
      if (c < 0 || at < 0 || at >= s.view->child(c).length()) {
        return Bad(s,
                   "element " + std::to_string(i) + " has type id " +
                       std::to_string(s.view->UnionTypeId(i)) + " and offset " +
                       std::to_string(at) + ", naming no row of a child",
                   path);
      }
      lo[static_cast<size_t>(c)] = std::min(lo[static_cast<size_t>(c)], at);
      hi[static_cast<size_t>(c)] = std::max(hi[static_cast<size_t>(c)], at + 1);
    }
    for (int64_t i = s.start; i < s.start + s.length; ++i, ++row) {
      // Checked above: a child index, not negative.
      const auto c = static_cast<size_t>(
          static_cast<uint8_t>(s.view->union_child_index(s.view->UnionTypeId(i))));
      StoreAt<int32_t>(offsets->data(), row,
                       static_cast<int32_t>(base[c] + s.view->UnionChildOffset(i) - lo[c]));
    }
    for (size_t c = 0; c < static_cast<size_t>(n); ++c) {
      if (hi[c] == 0) continue;
      rows[c].push_back(
          Slice{&s.view->child(static_cast<int64_t>(c)), lo[c], hi[c] - lo[c], s.part});
      base[c] += hi[c] - lo[c];
      if (base[c] > std::numeric_limits<int32_t>::max()) {
        return Status::OutOfRange("the parts' dense union child " + std::to_string(c) + " holds " +
                                  std::to_string(base[c]) +
                                  " rows, past what its 32-bit offsets reach" + At(path));
      }
    }
  }
  const void* buffers[2] = {Stored(ids), Stored(offsets)};
  ArrowArray* children = keep_->MakeNode(out, length, 0, 0, buffers, dense ? 2 : 1, n).children;
  for (int64_t c = 0; c < n; ++c) {
    FERRY_RETURN_NOT_OK(Join(shape.child(c), std::move(rows[static_cast<size_t>(c)]),
                             ChildPath(path, shape.child(c), c), &children[c]));
  }
  return Status::OK();
}

Status Joiner::JoinRuns(const ArrayView& shape, const std::vector<Slice>& slices, int64_t length,
                        const std::string& path, ArrowArray* out) {
  const int64_t width = shape.child(0).type().layout.element_size_bits[1] / 8;
  const int64_t most = width == 2   ? std::numeric_limits<int16_t>::max()
                       : width == 4 ? std::numeric_limits<int32_t>::max()
                                    : std::numeric_limits<int64_t>::max();
  if (length > most) {
    return Status::OutOfRange("the parts hold " + std::to_string(length) + " rows, past the " +
                              std::to_string(most) + " that the run ends' type reaches" + At(path));
  }
  std::vector<Slice> values;
  HostBuffer* ends = NewBuffer();
  int64_t base = 0;
  int64_t runs = 0;
  for (const Slice& s : slices) {
    const int64_t first = s.view->RunIndex(s.start);
    const int64_t last = s.view->RunIndex(s.start + s.length - 1);
    const int64_t stop = s.view->offset() + s.start + s.length;  // in the run ends' terms
    if (last >= s.view->child(0).length() || last >= s.view->child(1).length()) {
      return Bad(s, "runs end before its rows do", path);
    }
    for (int64_t r = first; r <= last; ++r, ++runs) {
      const int64_t end = std::min(s.view->child(0).GetInt(r), stop) - stop + s.length + base;
      FERRY_RETURN_NOT_OK(ends->Resize((runs + 1) * width));
      if (width == 2) StoreAt<int16_t>(ends->data(), runs, static_cast<int16_t>(end));
      if (width == 4) StoreAt<int32_t>(ends->data(), runs, static_cast<int32_t>(end));
      if (width == 8) StoreAt<int64_t>(ends->data(), runs, end);
    }
    values.push_back(Slice{&s.view->child(1), first, last - first + 1, s.part});
    base += s.length;
  }
  ArrowArray* children = keep_->MakeNode(out, length, 0, 0, nullptr, 0, 2).children;
  const void* end_buffers[2] = {nullptr, Stored(ends)};
  keep_->MakeNode(&children[0], runs, 0, 0, end_buffers, 2, 0);
  return Join(shape.child(1), std::move(values), ChildPath(path, shape.child(1), 1), &children[1]);
}

Status Joiner::JoinDictionary(const ArrayView& shape, const std::vector<Slice>& slices,
                              int64_t length, const std::string& path, ArrowArray* out) {
  std::vector<const ArrowArray*> seen;  // each distinct dictionary, in order of first sight
  std::vector<int64_t> seen_base;       // where its values start in the joined one
  std::vector<Slice> words;
  std::vector<int64_t> base_of(slices.size());
  int64_t base = 0;
  for (size_t k = 0; k < slices.size(); ++k) {
    const ArrayView& dictionary = *slices[k].view->dictionary();
    const auto known = std::find(seen.begin(), seen.end(), dictionary.array());
    if (known != seen.end()) {
      base_of[k] = seen_base[static_cast<size_t>(known - seen.begin())];
      continue;
    }
    base_of[k] = base;
    seen.push_back(dictionary.array());
    seen_base.push_back(base);
    words.push_back(Slice{&dictionary, 0, dictionary.length(), slices[k].part});
    base += dictionary.length();
  }
  const SchemaView& type = shape.type();
  const int64_t width = type.layout.element_size_bits[1] / 8;
  const bool is_signed = type.storage_type == TypeId::kInt8 ||
                         type.storage_type == TypeId::kInt16 ||
                         type.storage_type == TypeId::kInt32 || type.storage_type == TypeId::kInt64;
  const int64_t most = width == 8 ? std::numeric_limits<int64_t>::max()
                                  : (int64_t{1} << (width * 8 - (is_signed ? 1 : 0))) - 1;
  if (base > 0 && base - 1 > most) {
    return Status::OutOfRange("the joined dictionary holds " + std::to_string(base) +
                              " values, past what its " + TypeIdName(type.storage_type) +
                              " indices reach" + At(path));
  }
  int64_t nulls = 0;
  FERRY_ASSIGN_OR_RAISE(const void* validity, JoinValidity(slices, length, &nulls));
  HostBuffer* indices = NewBuffer();
  FERRY_RETURN_NOT_OK(indices->Resize(length * width));
  int64_t row = 0;
  for (size_t k = 0; k < slices.size(); ++k) {
    const Slice& s = slices[k];
    const int64_t size = s.view->dictionary()->length();
    for (int64_t i = s.start; i < s.start + s.length; ++i, ++row) {
      if (!s.view->IsValid(i)) continue;  // zeroed
      const int64_t index = s.view->GetInt(i);
      if (index < 0 || index >= size) {
        return Bad(s,
                   "element " + std::to_string(i) + " has index " + std::to_string(index) +
                       " into a dictionary of " + std::to_string(size),
                   path);
      }
      const int64_t moved = index + base_of[k];
      if (width == 1) StoreAt<int8_t>(indices->data(), row, static_cast<int8_t>(moved));
      if (width == 2) StoreAt<int16_t>(indices->data(), row, static_cast<int16_t>(moved));
      if (width == 4) StoreAt<int32_t>(indices->data(), row, static_cast<int32_t>(moved));
      if (width == 8) StoreAt<int64_t>(indices->data(), row, moved);
    }
  }
  const void* buffers[2] = {validity, Stored(indices)};
  ArrowArray* dictionary = keep_->MakeNode(out, length, nulls, 0, buffers, 2, 0).dictionary;
  std::string where = path.empty() ? "dictionary" : path + " > dictionary";
  FERRY_RETURN_NOT_OK(Join(*shape.dictionary(), std::move(words), where, dictionary));
  out->dictionary = dictionary;
  return Status::OK();
}

template Status Joiner::JoinList<int32_t>(const ArrayView&, const std::vector<Slice>&, int64_t,
                                          const std::string&, ArrowArray*);
template Status Joiner::JoinList<int64_t>(const ArrayView&, const std::vector<Slice>&, int64_t,
                                          const std::string&, ArrowArray*);
template Status Joiner::JoinListView<int32_t>(const ArrayView&, const std::vector<Slice>&, int64_t,
                                              const std::string&, ArrowArray*);
template Status Joiner::JoinListView<int64_t>(const ArrayView&, const std::vector<Slice>&, int64_t,
                                              const std::string&, ArrowArray*);

}  // namespace ferry::internal
