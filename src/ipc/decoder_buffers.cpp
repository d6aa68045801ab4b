// Bodies whose buffers lie elsewhere (the dissociated protocol's type 1), and the column
// projection that lets their reader fetch only some: which columns and dictionaries the reader
// asked for (ReadOptions::columns) and which body buffers decoding them reads.
#include <cstring>
#include <string>
#include <vector>

#include "ferry/format/schema.hpp"
#include "ferry/ipc/decoder.hpp"
#include "ipc/decoder_state.hpp"

namespace ferry::ipc {

Status Decoder::Impl::Project(int64_t i) {
  if (options.columns.empty()) return Status::OK();
  const ArrowSchema* root = schema->root.get();
  selected.assign(static_cast<size_t>(root->n_children), false);
  int32_t previous = -1;
  for (int32_t c : options.columns) {
    if (c < 0 || c >= root->n_children) {
      return Status::OutOfRange(Label(i) + " (schema): column " + std::to_string(c) +
                                " was asked for, but the schema has " +
                                std::to_string(root->n_children) + " columns");
    }
    if (c <= previous) {
      return Status::Invalid(Label(i) +
                             " (schema): the columns asked for must be in increasing "
                             "order without repeats (" +
                             std::to_string(c) + " after " + std::to_string(previous) + ")");
    }
    previous = c;
    selected[static_cast<size_t>(c)] = true;
    internal::ForEachDictionaryNode(root->children[c], [&](const ArrowSchema* node) {
      if (auto it = schema->id_of.find(node); it != schema->id_of.end()) {
        used_dictionaries.insert(it->second);
      }
    });
  }
  FERRY_ASSIGN_OR_RAISE(Field all, Field::Import(root));
  std::vector<Field> kept;
  kept.reserve(options.columns.size());
  for (int32_t c : options.columns) kept.push_back(std::move(all.children[static_cast<size_t>(c)]));
  all.children = std::move(kept);
  FERRY_ASSIGN_OR_RAISE(projected, all.Export());
  return Status::OK();
}

Result<std::vector<bool>> Decoder::Impl::Needed(const fb::Message* m, int64_t i) const {
  const fb::RecordBatch* batch = m->header_as_RecordBatch();
  const fb::DictionaryBatch* dictionary = m->header_as_DictionaryBatch();
  if (dictionary != nullptr) batch = dictionary->data();
  if (batch == nullptr || batch->buffers() == nullptr) return std::vector<bool>{};
  const size_t count = batch->buffers()->size();
  if (selected.empty()) return std::vector<bool>(count, true);
  if (dictionary != nullptr) {
    return std::vector<bool>(count, used_dictionaries.count(dictionary->id()) > 0);
  }
  const ArrowSchema* root = schema->root.get();
  const std::span<const ArrowSchema* const> columns(root->children,
                                                    static_cast<size_t>(root->n_children));
  return internal::BuffersOfColumns(columns, *schema, batch, selected, internal::MessageLabel(i));
}

Result<std::vector<bool>> Decoder::BuffersNeeded(ByteSpan metadata) const {
  const Impl& d = *impl_;
  if (!d.schema) return Status::Invalid("BuffersNeeded: no schema has been decoded yet");
  if (metadata.data == nullptr || metadata.size <= 0) {
    return Status::Invalid("BuffersNeeded: empty metadata");
  }
  HostBuffer storage;
  FERRY_ASSIGN_OR_RAISE(const fb::Message* m,
                        d.VerifyMessage(metadata.data, metadata.size, &storage, d.index));
  return d.Needed(m, d.index);
}

namespace {

// Why location `i` of a type-1 body cannot be the buffer the metadata lists as `declared`
// bytes long, in a region of `region_size` bytes. Out of line: the loop that checks every
// location builds no string.
[[gnu::noinline]] Status BadLocation(const std::string& label, size_t i, const BufferLocation& at,
                                     int64_t declared, int64_t region_size) {
  std::string why;
  int64_t end = 0;
  if (at.offset < 0 || at.length < 0 || __builtin_add_overflow(at.offset, at.length, &end) ||
      end > region_size) {
    // Built by appending: `"(" + std::string&&` trips GCC 12's bogus -Wrestrict (GCC PR
    // 105651) in optimized builds.
    why.append("(").append(std::to_string(at.offset)).append(", ");
    why.append(std::to_string(at.length)).append(") lies outside the region of ");
    why.append(std::to_string(region_size)).append(" bytes");
  } else if (at.length != declared) {
    why = "has " + std::to_string(at.length) + " bytes but the metadata says " +
          std::to_string(declared);
  } else {
    why = "starts at " + std::to_string(at.offset) + ", which is not a multiple of 8";
  }
  return Status::Invalid(label + ": body buffer " + std::to_string(i) + " " + why);
}

}  // namespace

Status Decoder::ConsumeMessageBuffers(ByteSpan metadata, const SharedBytes& region,
                                      std::span<const BufferLocation> buffers) {
  Impl& d = *impl_;
  // Begin leaves the verified copy in d.metadata, which is ours to rewrite.
  Result<const fb::Message*> m = d.Begin(metadata.data, metadata.size);
  if (!m.ok()) return m.status();
  const flatbuffers::Vector<const fb::Buffer*>* listed = nullptr;
  if (const fb::RecordBatch* rb = (*m)->header_as_RecordBatch()) {
    listed = rb->buffers();
  } else if (const fb::DictionaryBatch* db = (*m)->header_as_DictionaryBatch()) {
    if (db->data() != nullptr) listed = db->data()->buffers();
  }
  const size_t count = listed ? listed->size() : 0;
  std::vector<bool> needed;
  if (!d.selected.empty() && d.schema) {
    Result<std::vector<bool>> n = d.Needed(*m, d.index);
    if (!n.ok()) return d.Fail(n.status());
    needed = std::move(*n);
  }
  if (count != buffers.size()) {
    return d.Fail(Status::Invalid(d.Label(d.index) + ": the metadata lists " +
                                  std::to_string(count) + " body buffers but " +
                                  std::to_string(buffers.size()) + " locations were given"));
  }
  for (size_t i = 0; i < count; ++i) {
    if (!needed.empty() && !needed[i]) continue;  // a column left out: never read
    const BufferLocation& at = buffers[i];
    // fb::Buffer is a fixed struct {int64 offset; int64 length}, little-endian on the wire.
    auto* listed_buffer =
        const_cast<fb::Buffer*>(listed->Get(static_cast<flatbuffers::uoffset_t>(i)));
    int64_t end = 0;
    if (at.offset < 0 || at.length < 0 || __builtin_add_overflow(at.offset, at.length, &end) ||
        end > region.size || at.length != listed_buffer->length() || at.offset % 8 != 0)
        [[unlikely]] {
      return d.Fail(BadLocation(d.Label(d.index), i, at, listed_buffer->length(), region.size));
    }
    const int64_t le = flatbuffers::EndianScalar(at.offset);
    std::memcpy(reinterpret_cast<uint8_t*>(listed_buffer), &le, sizeof(le));
  }
  Status st = d.HandleMessage(*m, region);
  if (!st.ok()) return d.Fail(st);
  return Status::OK();
}

}  // namespace ferry::ipc
