// What a writer knows of the dictionaries it sent (sent_dictionaries.hpp).
#include "ipc/sent_dictionaries.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
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
    // Rows with no null at this node go column by column where the type allows; whether they
    // do depends only on their values, so equal rows hash alike either way.
    if (length > 1 && !HasNulls(v, start, length)) {
      FERRY_ASSIGN_OR_RAISE(const bool done, Columns(v, start, length));
      if (done) return Status::OK();
    }
    for (int64_t i = start; i < start + length; ++i) FERRY_RETURN_NOT_OK(Row(v, i));
    return Status::OK();
  }
  uint64_t hash() const { return h_; }

 private:
  static bool HasNulls(const ArrayView& v, int64_t start, int64_t length) {
    const uint8_t* bits = v.buffer(0).data;
    return bits != nullptr && CountSetBits(bits, v.offset() + start, length) != length;
  }

  // Rows [start, start + length), none null, of a fixed-width, binary or string node (their
  // lengths, then their bytes as one range), or of a struct, list or map node (its lists' sizes,
  // then each child's rows as one range). False for the other types, which go row by row.
  Result<bool> Columns(const ArrayView& v, int64_t start, int64_t length) {
    if (v.dictionary() != nullptr) return false;
    const TypeId type = v.type().storage_type;
    const int64_t at = v.offset() + start;
    switch (type) {
      case TypeId::kBinary:
      case TypeId::kString:
      case TypeId::kLargeBinary:
      case TypeId::kLargeString: {
        const bool large = type == TypeId::kLargeBinary || type == TypeId::kLargeString;
        const auto offset = [&](int64_t i) -> int64_t {
          return large ? LoadOffset<int64_t>(v, i) : LoadOffset<int32_t>(v, i);
        };
        const int64_t first = offset(at);
        int64_t previous = first;
        for (int64_t i = 1; i <= length; ++i) {
          const int64_t next = offset(at + i);
          Mix(static_cast<uint64_t>(next - previous));
          previous = next;
        }
        if (previous < first) return Status::Invalid("offsets run backwards");
        MixBytes({reinterpret_cast<const char*>(v.buffer(2).data + first),
                  static_cast<size_t>(previous - first)});
        return true;
      }
      case TypeId::kStruct:
        for (int64_t c = 0; c < v.n_children(); ++c) {
          FERRY_RETURN_NOT_OK(Child(v.child(c), at, length, v, start));
        }
        return true;
      case TypeId::kFixedSizeList: {
        const int64_t n = v.type().fixed_size;
        FERRY_RETURN_NOT_OK(Child(v.child(0), at * n, length * n, v, start));
        return true;
      }
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kMap: {
        for (int64_t i = start; i < start + length; ++i) {
          Mix(static_cast<uint64_t>(v.ListEnd(i) - v.ListStart(i)));
        }
        const int64_t first = v.ListStart(start);
        FERRY_RETURN_NOT_OK(
            Child(v.child(0), first, v.ListEnd(start + length - 1) - first, v, start));
        return true;
      }
      case TypeId::kNull:
      case TypeId::kBool:
      case TypeId::kBinaryView:
      case TypeId::kStringView:
      case TypeId::kListView:
      case TypeId::kLargeListView:
      case TypeId::kSparseUnion:
      case TypeId::kDenseUnion:
      case TypeId::kRunEndEncoded:
        return false;
      default: {
        const int64_t width = v.type().storage_type == TypeId::kFixedSizeBinary
                                  ? int64_t{v.type().fixed_size}
                                  : v.type().layout.element_size_bits[1] / 8;
        MixBytes({reinterpret_cast<const char*>(v.buffer(1).data + at * width),
                  static_cast<size_t>(length * width)});
        return true;
      }
    }
  }

  template <typename Offset>
  static int64_t LoadOffset(const ArrayView& v, int64_t i) {
    Offset o;
    std::memcpy(&o, v.buffer(1).data + i * static_cast<int64_t>(sizeof(Offset)), sizeof(o));
    return o;
  }

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
        if (!v.ViewInBounds(i)) {
          return Status::Invalid("row " + std::to_string(i) +
                                 " of a view type points past its data");
        }
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

namespace {

// Values are hashed in blocks of this many rows, each block's hash mixed into the whole's in
// order, then the row count: so a prefix's hash and the whole's share every block before the
// prefix's end, and both come from one pass.
constexpr int64_t kHashBlock = 4096;

uint64_t MixInto(uint64_t h, uint64_t x) { return (h ^ x) * 1099511628211ULL; }

// One block's hash: FlatValuesHash for flat types, RowsHasher for the others.
class BlockHasher {
 public:
  static Result<BlockHasher> Make(const ArrowSchema* schema, const ArrowArray* dictionary) {
    BlockHasher b;
    b.dictionary_ = dictionary;
    b.flat_ = FlatValuesOf(schema);
    if (!b.flat_) {
      FERRY_ASSIGN_OR_RAISE(b.view_, ArrayView::Make(schema));
      FERRY_RETURN_NOT_OK(b.view_.SetArray(dictionary));
    }
    return b;
  }
  Result<uint64_t> Block(int64_t start, int64_t length) {
    if (flat_) {
      ArrowArray part = *dictionary_;  // a borrowed view of the block: never released
      part.offset += start;
      part.length = length;
      part.null_count = -1;
      return FlatValuesHash(*flat_, &part, length);
    }
    RowsHasher hasher;
    FERRY_RETURN_NOT_OK(hasher.Rows(view_, start, length));
    return hasher.hash();
  }

 private:
  const ArrowArray* dictionary_ = nullptr;
  std::optional<FlatValues> flat_;
  ArrayView view_;
};

}  // namespace

Result<ValuesHashes> HashValues(const ArrowSchema* schema, const ArrowArray* dictionary,
                                int64_t head) {
  const int64_t rows = dictionary->length;
  if (head < 0 || head > rows) {
    return Status::Invalid("a dictionary prefix of " + std::to_string(head) + " rows, past its " +
                           std::to_string(rows));
  }
  FERRY_ASSIGN_OR_RAISE(BlockHasher blocks, BlockHasher::Make(schema, dictionary));
  uint64_t h = 1469598103934665603ULL;
  ValuesHashes out;
  bool head_done = false;
  for (int64_t at = 0; at < rows || !head_done; at += kHashBlock) {
    if (!head_done && head < at + kHashBlock) {
      // The prefix ends in this block: its hash is the blocks before, its own part, its rows.
      uint64_t hh = h;
      if (head > at) {
        FERRY_ASSIGN_OR_RAISE(const uint64_t part, blocks.Block(at, head - at));
        hh = MixInto(hh, part);
      }
      out.head = MixInto(hh, static_cast<uint64_t>(head));
      head_done = true;
    }
    if (at >= rows) break;
    FERRY_ASSIGN_OR_RAISE(const uint64_t block, blocks.Block(at, std::min(kHashBlock, rows - at)));
    h = MixInto(h, block);
  }
  out.full = MixInto(h, static_cast<uint64_t>(rows));
  return out;
}

Result<uint64_t> ValuesHash(const ArrowSchema* schema, const ArrowArray* dictionary,
                            int64_t length) {
  if (length < 0 || length > dictionary->length) {
    return Status::Invalid("a dictionary prefix of " + std::to_string(length) + " rows, past its " +
                           std::to_string(dictionary->length));
  }
  ArrowArray prefix = *dictionary;  // a borrowed view of the prefix: never released
  prefix.length = length;
  prefix.null_count = -1;
  FERRY_ASSIGN_OR_RAISE(const ValuesHashes both, HashValues(schema, &prefix, length));
  return both.full;
}

Status HashLent(const ArrowSchema* schema, const ArrowArray* dictionary, const SentDictionary* sent,
                SentDictionary* now, std::optional<uint64_t>* head) {
  const bool compare = sent != nullptr && sent->values_hash && dictionary->length >= sent->length;
  FERRY_ASSIGN_OR_RAISE(
      const ValuesHashes both,
      HashValues(schema, dictionary, compare ? sent->length : dictionary->length));
  now->values_hash = both.full;
  if (compare) *head = both.head;
  return Status::OK();
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
