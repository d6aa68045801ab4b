// The writers' dictionaries (writer_impl.hpp): each batch's dictionaries compared with those
// sent (by memory, values or hashes), and sent again, as a delta or a replacement, where they
// changed.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ipc/flat_values.hpp"
#include "ipc/writer_impl.hpp"

namespace ferry::ipc {

Status StreamWriter::Impl::WriteChangedDictionaries(const ArrowArray* root, bool held) {
  std::vector<std::pair<const ArrowSchema*, const ArrowArray*>> found;
  for (int64_t i = 0; i < schema->n_children; ++i) {
    internal::CollectDictionaries(schema->children[i], root->children[i], &found);
  }
  // Reverse pre-order: a dictionary nested in another's values goes out before it.
  for (size_t k = found.size(); k-- > 0;) {
    const int64_t id = ids[k];
    const ArrowArray* dictionary = found[k].second;
    if (dictionary == nullptr) {
      return Status::Invalid("dictionary " + std::to_string(id) + " is missing from the batch");
    }
    const ArrowSchema* value_schema = found[k].first;
    std::vector<uintptr_t> layout;
    if (held) internal::AppendLayout(dictionary, &layout);
    auto it = sent.find(id);
    // The dictionary last sent, where its batch is still there (held until this one is
    // written, or kept by its caller): a growth is then told from its bytes.
    const ArrowArray* sent_values = nullptr;
    if (it != sent.end()) {
      internal::SentDictionary& was = it->second;
      // The memory of the dictionary last sent, which the batch held until now kept from
      // being reused: the values sent. (Layouts are recorded only for held batches.)
      if (held && !was.layout.empty() && was.layout == layout) {
        was.held = dictionary;  // the same memory, described by the batch now held
        continue;
      }
      sent_values = was.held;
      // A batch only lent does not keep the dictionary sent reachable: what a later growth is
      // told by must be made now.
      if (!held) FERRY_RETURN_NOT_OK(ValuesOf(&was));
    }
    // The same values in other memory: from now on described by this batch's dictionary
    // (where it is held) or by their hashes alone. Until then `was` keeps describing the
    // dictionary sent, which a failed write leaves it describing.
    const auto same_values = [&](internal::SentDictionary& was) {
      was.layout = std::move(layout);
      was.held = held ? dictionary : nullptr;
    };
    // Only a dictionary of the sent one's length can hold its values. Where the sent one is
    // still there and of a flat type, they are compared value by value, neither assembled nor
    // hashed; otherwise by the hash of their bodies.
    const bool same_length = it != sent.end() && dictionary->length == it->second.length;
    const std::optional<internal::FlatValues> flat =
        sent_values != nullptr ? internal::FlatValuesOf(value_schema) : std::nullopt;
    if (same_length && flat &&
        internal::SameFlatValues(*flat, sent_values, dictionary, dictionary->length)) {
      if (!held) FERRY_RETURN_NOT_OK(Hash(&it->second));  // its memory goes
      same_values(it->second);
      continue;
    }
    std::optional<internal::AssembledBody> plain;  // assembled once, where it is needed
    const auto assembled = [&]() -> Result<internal::AssembledBody*> {
      if (!plain) {
        FERRY_ASSIGN_OR_RAISE(plain,
                              internal::AssembleArray(value_schema, dictionary, options.alignment,
                                                      internal::Codec::kNone, 0, Swapping()));
      }
      return &*plain;
    };
    // A held dictionary is hashed only if a later one must be compared with it by hash; with
    // deltas, a lent one is known by its values' hash (below) instead.
    std::optional<uint64_t> h;
    if ((!held && !options.emit_dictionary_deltas) || (same_length && !flat)) {
      FERRY_ASSIGN_OR_RAISE(const internal::AssembledBody* p, assembled());
      h = internal::HashBody(*p);
    }
    if (same_length && !flat) {
      FERRY_RETURN_NOT_OK(Hash(&it->second));
      if (it->second.body_hash == h) {
        same_values(it->second);
        continue;
      }
    }
    internal::SentDictionary now;
    now.body_hash = h;
    now.length = dictionary->length;
    now.held = held ? dictionary : nullptr;
    now.schema = value_schema;
    if (held) internal::AppendLayout(dictionary, &now.layout);
    std::optional<uint64_t> head_hash;  // of its first values, to compare with those sent
    if (options.emit_dictionary_deltas && !held) {
      FERRY_RETURN_NOT_OK(internal::HashLent(
          value_schema, dictionary, it != sent.end() && !sent_values ? &it->second : nullptr, &now,
          &head_hash));
    }
    // With deltas on, a dictionary whose first values are the ones sent needs only its tail.
    bool delta = false;
    if (it != sent.end() && options.emit_dictionary_deltas &&
        dictionary->length >= it->second.length) {
      // Where the dictionary sent is still there, value by value (flat types, exactly) or by
      // bytes (equal bytes are equal values); by their values' hashes otherwise, or where the
      // bytes differ (as they may under nulls).
      bool prefix = false;
      if (sent_values != nullptr) {
        FERRY_ASSIGN_OR_RAISE(
            prefix, internal::SamePrefix(value_schema, sent_values, dictionary, it->second.length,
                                         options.alignment, Swapping()));
      }
      if (!prefix && !flat && !it->second.values_hash && sent_values != nullptr) {
        FERRY_ASSIGN_OR_RAISE(it->second.values_hash,
                              internal::ValuesHash(value_schema, sent_values, it->second.length));
      }
      if (!prefix && !flat && it->second.values_hash) {
        if (!head_hash) {
          FERRY_ASSIGN_OR_RAISE(head_hash,
                                internal::ValuesHash(value_schema, dictionary, it->second.length));
        }
        prefix = *head_hash == *it->second.values_hash;
      }
      if (prefix) {
        if (dictionary->length == it->second.length) {  // the same values, laid out anew
          it->second.body_hash = h;
          same_values(it->second);
          continue;
        }
        delta = true;
      }
    }
    if (it != sent.end() && file && !delta) {
      return Status::Invalid("dictionary " + std::to_string(id) +
                             " changed between batches; the file format cannot replace "
                             "dictionaries (write a stream, or emit deltas if it only grows)");
    }
    ArrowArray tail = *dictionary;  // a borrowed view of the new values: never released
    if (delta) {
      tail.offset += it->second.length;
      tail.length -= it->second.length;
      tail.null_count = -1;
    }
    const ArrowArray* written = delta ? &tail : dictionary;
    internal::AssembledBody body;
    if (options.compression == Compression::kNone && !delta) {
      FERRY_ASSIGN_OR_RAISE(internal::AssembledBody * p, assembled());
      body = std::move(*p);
    } else {
      FERRY_ASSIGN_OR_RAISE(body, internal::AssembleArray(value_schema, written, options.alignment,
                                                          CodecOf(options.compression),
                                                          options.compression_level, Swapping()));
    }
    flatbuffers::FlatBufferBuilder b;
    auto data = internal::BatchTable(b, body, options.compression);
    auto d = fb::CreateDictionaryBatch(b, id, data, delta);
    b.Finish(fb::CreateMessage(b, fb::MetadataVersion::V5, fb::MessageHeader::DictionaryBatch,
                               d.Union(), body.body_length));
    FERRY_RETURN_NOT_OK(WriteMessage(Built(b), &body, &dictionary_blocks));
    stats.bytes_copied += body.copied;
    ++stats.dictionary_batches;
    if (delta) ++stats.dictionary_deltas;
    sent[id] = now;
  }
  return Status::OK();
}

}  // namespace ferry::ipc
