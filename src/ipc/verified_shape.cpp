// The shape of the last verified record batch message: what a match compares, and which
// messages are safe to remember.
#include "ipc/verified_shape.hpp"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <utility>

namespace ferry::ipc::internal {

namespace {

struct Span {
  const uint8_t* at;
  size_t size;
};

// The bytes of `t`'s layout: its offset to its vtable, the vtable, and the slots of the
// `fields` (vtable offset, size in bytes) it has.
void AddTable(const void* table,
              std::initializer_list<std::pair<flatbuffers::voffset_t, size_t>> fields,
              std::vector<Span>* layout) {
  // Generated tables derive from flatbuffers::Table privately; their address is the table's.
  const auto* t = static_cast<const flatbuffers::Table*>(table);
  const auto* at = static_cast<const uint8_t*>(table);
  layout->push_back({at, sizeof(flatbuffers::soffset_t)});
  const uint8_t* vtable = t->GetVTable();
  layout->push_back({vtable, flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable)});
  for (const auto& [field, size] : fields) {
    if (const uint8_t* slot = t->GetAddressOf(field)) layout->push_back({slot, size});
  }
}

// A vector's data as a value, and its length prefix as layout.
template <typename Vector>
void AddVector(const Vector* v, size_t element_size, std::vector<Span>* layout,
               std::vector<Span>* values) {
  if (v == nullptr) return;
  const auto* data = reinterpret_cast<const uint8_t*>(v->Data());
  layout->push_back({data - sizeof(flatbuffers::uoffset_t), sizeof(flatbuffers::uoffset_t)});
  values->push_back({data, v->size() * element_size});
}

void AddScalar(const void* table, flatbuffers::voffset_t field, size_t size,
               std::vector<Span>* values) {
  const auto* t = static_cast<const flatbuffers::Table*>(table);
  if (const uint8_t* slot = t->GetAddressOf(field)) values->push_back({slot, size});
}

bool Overlap(const Span& a, const Span& b) { return a.at < b.at + b.size && b.at < a.at + a.size; }

}  // namespace

bool VerifiedShape::Matches(const uint8_t* data, size_t size) const {
  if (same_.empty() || size != bytes_.size()) return false;
  for (const Range& r : same_) {
    if (std::memcmp(data + r.begin, bytes_.data() + r.begin, r.end - r.begin) != 0) return false;
  }
  return true;
}

void VerifiedShape::Remember(const uint8_t* data, size_t size, const fb::Message* message) {
  same_.clear();
  const fb::RecordBatch* batch = message->header_as_RecordBatch();
  if (batch == nullptr || message->custom_metadata() != nullptr) return;
  using M = fb::Message;
  using B = fb::RecordBatch;
  std::vector<Span> layout{{data, sizeof(flatbuffers::uoffset_t)}};  // the root offset
  std::vector<Span> values;
  AddTable(message,
           {{M::VT_VERSION, sizeof(int16_t)},
            {M::VT_HEADER_TYPE, sizeof(uint8_t)},
            {M::VT_HEADER, sizeof(flatbuffers::uoffset_t)},
            {M::VT_CUSTOM_METADATA, sizeof(flatbuffers::uoffset_t)}},
           &layout);
  AddScalar(message, M::VT_BODY_LENGTH, sizeof(int64_t), &values);
  AddTable(batch,
           {{B::VT_NODES, sizeof(flatbuffers::uoffset_t)},
            {B::VT_BUFFERS, sizeof(flatbuffers::uoffset_t)},
            {B::VT_COMPRESSION, sizeof(flatbuffers::uoffset_t)},
            {B::VT_VARIADIC_BUFFER_COUNTS, sizeof(flatbuffers::uoffset_t)}},
           &layout);
  AddScalar(batch, B::VT_LENGTH, sizeof(int64_t), &values);
  AddVector(batch->nodes(), sizeof(fb::FieldNode), &layout, &values);
  AddVector(batch->buffers(), sizeof(fb::Buffer), &layout, &values);
  AddVector(batch->variadic_buffer_counts(), sizeof(int64_t), &layout, &values);
  if (const fb::BodyCompression* c = batch->compression()) {
    AddTable(c,
             {{fb::BodyCompression::VT_CODEC, sizeof(int8_t)},
              {fb::BodyCompression::VT_METHOD, sizeof(int8_t)}},
             &layout);
  }
  for (const Span& v : values) {
    for (const Span& l : layout) {
      if (Overlap(v, l)) return;
    }
  }
  std::sort(values.begin(), values.end(), [](const Span& a, const Span& b) { return a.at < b.at; });
  size_t next = 0;  // the first byte not yet placed in a range
  for (const Span& v : values) {
    const auto begin = static_cast<size_t>(v.at - data);
    if (begin > next) same_.push_back({next, begin});
    next = std::max(next, begin + v.size);
  }
  if (next < size) same_.push_back({next, size});
  bytes_.assign(data, data + size);
}

}  // namespace ferry::ipc::internal
