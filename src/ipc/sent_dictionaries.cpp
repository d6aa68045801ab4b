// What a writer knows of the dictionaries it sent (sent_dictionaries.hpp).
#include "ipc/sent_dictionaries.hpp"

#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "ferry/format/array_view.hpp"
#include "ferry/format/bits.hpp"
#include "ipc/flat_values.hpp"

namespace ferry::ipc::internal {

// Dictionary-encoded nodes of an array tree, in the canonical pre-order that assigns ids.
void CollectDictionaries(const ArrowSchema* s, const ArrowArray* a,
                         std::vector<std::pair<const ArrowSchema*, const ArrowArray*>>* out) {
  const ArrowSchema* ts = s;
  const ArrowArray* ta = a;
  if (s->dictionary != nullptr) {
    out->emplace_back(s->dictionary, a->dictionary);
    if (a->dictionary == nullptr) return;
    ts = s->dictionary;
    ta = a->dictionary;
  }
  for (int64_t i = 0; i < ts->n_children && i < ta->n_children; ++i) {
    CollectDictionaries(ts->children[i], ta->children[i], out);
  }
}

uint64_t HashBody(const AssembledBody& body) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](uint64_t x) { h = (h ^ x) * 1099511628211ULL; };
  mix(static_cast<uint64_t>(body.length));
  for (const fb::FieldNode& n : body.nodes) {
    mix(static_cast<uint64_t>(n.length()));
    mix(static_cast<uint64_t>(n.null_count()));
  }
  for (const fb::Buffer& b : body.buffers) mix(static_cast<uint64_t>(b.length()));
  for (const ByteSpan& p : body.pieces) {
    mix(std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char*>(p.data), static_cast<size_t>(p.size))));
  }
  return h;
}

namespace {

// Hashes rows of any type as values, bit for bit: each row's validity, then a valid row's bytes
// (a float's every bit, NaN payloads too), length or type id, and its children's rows; what
// lies under a null is not read. An offset that points outside its child fails (a batch the
// writer checked at the default level only): the caller then forgets the dictionary.
class RowsHasher {
 public:
  Status Rows(const ArrayView& v, int64_t start, int64_t length) {
    Mix(static_cast<uint64_t>(length));
    for (int64_t i = start; i < start + length; ++i) FERRY_RETURN_NOT_OK(Row(v, i));
    return Status::OK();
  }
  uint64_t hash() const { return h_; }

 private:
  void Mix(uint64_t x) { h_ = (h_ ^ x) * 1099511628211ULL; }
  void MixBytes(std::string_view bytes) {
    Mix(bytes.size());
    Mix(std::hash<std::string_view>{}(bytes));
  }
  static Status Outside(const ArrayView& v, int64_t i, int64_t at, int64_t rows) {
    return Status::Invalid("row " + std::to_string(i) + " of a " +
                           std::string(TypeIdName(v.type().storage_type)) + " points at row " +
                           std::to_string(at) + " of a child of " + std::to_string(rows));
  }
  Status Child(const ArrayView& child, int64_t at, int64_t length, const ArrayView& v, int64_t i) {
    if (at < 0 || length < 0 || at > child.length() || length > child.length() - at) {
      return Outside(v, i, at + length, child.length());
    }
    return Rows(child, at, length);
  }

  // A view that is not inline must point inside one of its array's data buffers.
  static Status CheckView(const ArrayView& v, int64_t i) {
    const uint8_t* view = v.buffer(1).data + (v.offset() + i) * 16;
    int32_t word[4];
    std::memcpy(word, view, sizeof(word));
    if (word[0] <= 12) return Status::OK();
    const ArrowArray* a = v.array();
    const int64_t n_data = a->n_buffers - 3;
    const auto* sizes = static_cast<const int64_t*>(a->buffers[a->n_buffers - 1]);
    if (word[2] < 0 || word[2] >= n_data || word[3] < 0 ||
        int64_t{word[3]} + word[0] > sizes[word[2]]) {
      return Status::Invalid("row " + std::to_string(i) + " of a view type points past its data");
    }
    return Status::OK();
  }

  Status Row(const ArrayView& v, int64_t i) {
    const TypeId type = v.type().storage_type;
    if (type == TypeId::kSparseUnion || type == TypeId::kDenseUnion) {
      const int8_t id = v.UnionTypeId(i);
      const int8_t c = v.union_child_index(id);
      if (c < 0) return Outside(v, i, id, v.n_children());
      Mix(static_cast<uint64_t>(static_cast<uint8_t>(id)));
      return Child(v.child(c), v.UnionChildOffset(i), 1, v, i);
    }
    if (type == TypeId::kRunEndEncoded) {
      const int64_t run = v.RunIndex(i);
      return Child(v.child(1), run, 1, v, i);
    }
    if (type == TypeId::kNull || !v.IsValid(i)) {
      Mix(0);
      return Status::OK();
    }
    Mix(1);
    if (v.dictionary() != nullptr) {
      return Child(*v.dictionary(), v.GetInt(i), 1, v, i);
    }
    switch (type) {
      case TypeId::kBool:
        Mix(v.GetInt(i) != 0 ? 2 : 1);
        return Status::OK();
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kListView:
      case TypeId::kLargeListView:
      case TypeId::kMap:
      case TypeId::kFixedSizeList: {
        const int64_t from = v.ListStart(i);
        return Child(v.child(0), from, v.ListEnd(i) - from, v, i);
      }
      case TypeId::kStruct:
        for (int64_t c = 0; c < v.n_children(); ++c) {
          FERRY_RETURN_NOT_OK(Child(v.child(c), v.offset() + i, 1, v, i));
        }
        return Status::OK();
      case TypeId::kBinaryView:
      case TypeId::kStringView:
        FERRY_RETURN_NOT_OK(CheckView(v, i));
        MixBytes(v.GetBytes(i));
        return Status::OK();
      case TypeId::kBinary:
      case TypeId::kString:
      case TypeId::kLargeBinary:
      case TypeId::kLargeString:
      case TypeId::kFixedSizeBinary:
        MixBytes(v.GetBytes(i));
        return Status::OK();
      default: {
        // Fixed width: the value's own bytes.
        const int64_t width = v.type().layout.element_size_bits[1] / 8;
        const uint8_t* at = v.buffer(1).data + (v.offset() + i) * width;
        MixBytes({reinterpret_cast<const char*>(at), static_cast<size_t>(width)});
        return Status::OK();
      }
    }
  }

  uint64_t h_ = 1469598103934665603ULL;
};

}  // namespace

// The first `length` values of a dictionary, hashed as values: flat types by FlatValuesHash, the
// others row by row (RowsHasher). How the writer tells that a new dictionary starts with the one
// it sent.
Result<uint64_t> ValuesHash(const ArrowSchema* schema, const ArrowArray* dictionary,
                            int64_t length) {
  if (const std::optional<FlatValues> flat = FlatValuesOf(schema)) {
    return FlatValuesHash(*flat, dictionary, length);
  }
  FERRY_ASSIGN_OR_RAISE(ArrayView view, ArrayView::Make(schema));
  FERRY_RETURN_NOT_OK(view.SetArray(dictionary));
  if (length < 0 || length > view.length()) {
    return Status::Invalid("a dictionary prefix of " + std::to_string(length) + " rows, past its " +
                           std::to_string(view.length()));
  }
  RowsHasher hasher;
  FERRY_RETURN_NOT_OK(hasher.Rows(view, 0, length));
  return hasher.hash();
}

bool SameBody(const AssembledBody& a, const AssembledBody& b) {
  if (a.length != b.length || a.nodes.size() != b.nodes.size() ||
      a.entries.size() != b.entries.size() || a.variadic_counts != b.variadic_counts) {
    return false;
  }
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    if (a.nodes[i].length() != b.nodes[i].length() ||
        a.nodes[i].null_count() != b.nodes[i].null_count()) {
      return false;
    }
  }
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const ByteSpan& x = a.entries[i];
    const ByteSpan& y = b.entries[i];
    if (x.size != y.size) return false;
    if (x.size > 0 && std::memcmp(x.data, y.data, static_cast<size_t>(x.size)) != 0) return false;
  }
  return true;
}

Result<uint64_t> HashArray(const ArrowSchema* schema, const ArrowArray* array, int64_t alignment,
                           bool swap_bytes) {
  FERRY_ASSIGN_OR_RAISE(AssembledBody body,
                        AssembleArray(schema, array, alignment, Codec::kNone, 0, swap_bytes));
  return HashBody(body);
}

Result<bool> SamePrefix(const ArrowSchema* schema, const ArrowArray* sent,
                        const ArrowArray* dictionary, int64_t length, int64_t alignment,
                        bool swap_bytes) {
  if (const std::optional<FlatValues> flat = FlatValuesOf(schema)) {
    return SameFlatValues(*flat, sent, dictionary, length);
  }
  ArrowArray head = *dictionary;  // a borrowed view of the prefix: never released
  head.length = length;
  head.null_count = -1;
  FERRY_ASSIGN_OR_RAISE(AssembledBody a,
                        AssembleArray(schema, sent, alignment, Codec::kNone, 0, swap_bytes));
  FERRY_ASSIGN_OR_RAISE(AssembledBody b,
                        AssembleArray(schema, &head, alignment, Codec::kNone, 0, swap_bytes));
  return SameBody(a, b);
}

Status HashHeld(SentDictionary* d, int64_t alignment, bool swap_bytes) {
  if (d->body_hash || d->held == nullptr) return Status::OK();
  FERRY_ASSIGN_OR_RAISE(d->body_hash, HashArray(d->schema, d->held, alignment, swap_bytes));
  return Status::OK();
}

Status HashHeldValues(SentDictionary* d, bool deltas) {
  if (!deltas || d->values_hash || d->held == nullptr) return Status::OK();
  FERRY_ASSIGN_OR_RAISE(d->values_hash, ValuesHash(d->schema, d->held, d->length));
  return Status::OK();
}

void ForgetHeld(std::map<int64_t, SentDictionary>* sent, int64_t alignment, bool swap_bytes,
                bool deltas) {
  for (auto it = sent->begin(); it != sent->end();) {
    if (!HashHeld(&it->second, alignment, swap_bytes).ok() ||
        !HashHeldValues(&it->second, deltas).ok()) {
      it = sent->erase(it);
      continue;
    }
    it->second.layout.clear();
    it->second.held = nullptr;
    ++it;
  }
}

// Where an array's values lie: every node's length, offset, null count and buffer addresses,
// its children and dictionary included. In memory that is held (so not freed and reused), and
// that Arrow's arrays promise not to change, the same layout is the same values.
void AppendLayout(const ArrowArray* a, std::vector<uintptr_t>* out) {
  for (const int64_t v : {a->length, a->offset, a->null_count, a->n_buffers, a->n_children}) {
    out->push_back(static_cast<uintptr_t>(v));
  }
  for (int64_t i = 0; i < a->n_buffers; ++i) {
    out->push_back(reinterpret_cast<uintptr_t>(a->buffers[i]));
  }
  for (int64_t i = 0; i < a->n_children; ++i) AppendLayout(a->children[i], out);
  if (a->dictionary != nullptr) {
    AppendLayout(a->dictionary, out);
  } else {
    out->push_back(0);
  }
}

}  // namespace ferry::ipc::internal
