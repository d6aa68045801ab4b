// What a writer knows of the dictionaries it sent (sent_dictionaries.hpp).
#include "ipc/sent_dictionaries.hpp"

#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "ferry/format/array_view.hpp"
#include "ferry/format/json.hpp"
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

// The first `length` values of a dictionary, hashed value by value for flat types and from
// ferry's JSON rendering for the others (a value, not a layout, comparison): how the writer tells
// that a new dictionary starts with the one it sent.
Result<uint64_t> ValuesHash(const ArrowSchema* schema, const ArrowArray* dictionary,
                            int64_t length) {
  if (const std::optional<FlatValues> flat = FlatValuesOf(schema)) {
    return FlatValuesHash(*flat, dictionary, length);
  }
  ArrowArray head = *dictionary;  // a borrowed view of the prefix: never released
  head.length = length;
  head.null_count = -1;
  FERRY_ASSIGN_OR_RAISE(ArrayView view, ArrayView::Make(schema));
  FERRY_RETURN_NOT_OK(view.SetArray(&head));
  FERRY_ASSIGN_OR_RAISE(std::string json, ArrayToJson(view));
  return std::hash<std::string>{}(json);
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
