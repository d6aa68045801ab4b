// Shared by the IPC fuzz targets: read everything an input holds and render it, so two reads
// can be compared.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/format/stream.hpp"
#include "ferry/ipc/reader.hpp"

namespace ferry::fuzz {

inline ipc::ReadOptions Options() {
  ipc::ReadOptions options;
  options.max_decompressed_bytes = 64 << 20;
  return options;
}

/// Render every batch of a stream as JSON; the schema is copied into `schema_out` if given.
inline Result<std::vector<std::string>> Render(UniqueArrayStream stream, UniqueSchema* schema_out) {
  if (schema_out != nullptr) {
    UniqueSchema schema;
    FERRY_RETURN_NOT_OK(StreamGetSchema(stream.get(), schema.get()));
    *schema_out = std::move(schema);
  }
  return StreamToJson(stream.get());
}

}  // namespace ferry::fuzz
