// What a writer knows of the dictionaries it sent (sent_dictionaries.hpp).
#include "ipc/sent_dictionaries.hpp"

#include <functional>
#include <string>
#include <string_view>

#include "ferry/format/array_view.hpp"
#include "ferry/format/json.hpp"

namespace ferry::ipc::internal {

// The value schemas of a schema tree's dictionaries, in the canonical pre-order that assigns ids.
void CollectDictionarySchemas(const ArrowSchema* s, std::vector<const ArrowSchema*>* out) {
  const ArrowSchema* ts = s;
  if (s->dictionary != nullptr) {
    out->push_back(s->dictionary);
    ts = s->dictionary;
  }
  for (int64_t i = 0; i < ts->n_children; ++i) CollectDictionarySchemas(ts->children[i], out);
}

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

// The first `length` values of a dictionary, hashed from ferry's JSON rendering (a value, not a
// layout, comparison): how the writer tells that a new dictionary starts with the one it sent.
Result<uint64_t> ValuesHash(const ArrowSchema* schema, const ArrowArray* dictionary,
                            int64_t length) {
  ArrowArray head = *dictionary;  // a borrowed view of the prefix: never released
  head.length = length;
  head.null_count = -1;
  FERRY_ASSIGN_OR_RAISE(ArrayView view, ArrayView::Make(schema));
  FERRY_RETURN_NOT_OK(view.SetArray(&head));
  FERRY_ASSIGN_OR_RAISE(std::string json, ArrayToJson(view));
  return std::hash<std::string>{}(json);
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
