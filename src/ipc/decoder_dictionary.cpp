// The push decoder's dictionary batches: each checked against the schema's declared ids,
// decoded, validated, and kept for the batches that use it; a delta joined to its dictionary
// (ferry/format/concatenate.hpp).
#include <memory>
#include <string>
#include <string_view>

#include "ferry/format/concatenate.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/decoder.hpp"
#include "ipc/decoder_state.hpp"

namespace ferry::ipc {

Status Decoder::Impl::HandleDictionary(const fb::DictionaryBatch* d, const SharedBytes& body,
                                       int64_t i, Metadata custom_metadata) {
  const int64_t id = d->id();
  auto it = schema->dictionary_schema.find(id);
  if (it == schema->dictionary_schema.end()) {
    return Status::Invalid(Label(i) + ": dictionary id " + std::to_string(id) +
                           " is not declared by the schema");
  }
  const ArrowSchema* value_schema = it->second;
  const internal::MessageLabel label(i, id);
  DecodedMessage event;
  event.kind = MessageKind::kDictionary;
  event.index = i;
  event.dictionary_id = id;
  event.is_delta = d->is_delta();
  event.body_length = body.size;
  event.compression = internal::CompressionName(d->data() ? d->data()->compression() : nullptr);
  if (!selected.empty() && used_dictionaries.count(id) == 0) {
    // Only columns the reader left out use it: not decoded (its buffers were not fetched).
    event.custom_metadata = std::move(custom_metadata);
    events.push_back(std::move(event));
    return Status::OK();
  }
  auto lookup = [this](int64_t key) { return Lookup(key); };
  FERRY_RETURN_NOT_OK(
      CheckDeviceBody(d->data() != nullptr && d->data()->compression() != nullptr, body, label));
  internal::LoadedColumns loaded;
  FERRY_RETURN_NOT_OK(internal::LoadColumns({&value_schema, 1}, *schema, d->data(), body, lookup,
                                            options.max_decompressed_bytes, label, {}, false,
                                            &loaded));
  copied += loaded.decompressed_bytes;
  FERRY_RETURN_NOT_OK(internal::ValidateLoaded(value_schema, loaded.columns[0].get(),
                                               loaded.buffer_sizes, false, Validation(), label));
  auto existing = dictionaries.find(id);
  if (d->is_delta()) {
    if (existing != dictionaries.end() && (*existing->second)->length > 0) {
      if (options.body_on_device) {
        return Status::NotSupported(label.str() +
                                    ": a dictionary delta is merged on the host, but " +
                                    "the dictionary is device memory the host must not read");
      }
      const ArrowArray* parts[2] = {existing->second->get(), loaded.columns[0].get()};
      constexpr std::string_view kParts[2] = {"the dictionary", "the delta"};
      Result<UniqueArray> merged = Concatenate(value_schema, parts, kParts);
      if (!merged.ok()) {
        return Status(merged.status().code(),
                      label.str() + ": applying the delta: " + merged.status().message());
      }
      existing->second = std::make_shared<UniqueArray>(std::move(*merged));
    } else {
      dictionaries[id] = std::make_shared<UniqueArray>(std::move(loaded.columns[0]));
    }
  } else {
    if (existing != dictionaries.end() && file_mode) {
      return Status::Invalid(label.str() +
                             ": the file format does not allow replacing a dictionary");
    }
    dictionaries[id] = std::make_shared<UniqueArray>(std::move(loaded.columns[0]));
  }
  event.custom_metadata = std::move(custom_metadata);
  events.push_back(std::move(event));
  return Status::OK();
}

}  // namespace ferry::ipc
