// Shared by the IPC fuzz targets: read everything an input holds and render it, so two reads
// can be compared.
#pragma once

#include <cstring>
#include <string>
#include <vector>

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
  FERRY_ASSIGN_OR_RAISE(auto reader, ArrayStreamReader::Open(stream.get()));
  if (schema_out != nullptr) {
    FERRY_ASSIGN_OR_RAISE(*schema_out, CopySchema(reader.schema()));
  }
  std::vector<std::string> out;
  while (true) {
    FERRY_ASSIGN_OR_RAISE(std::optional<Array> batch, reader.Next());
    if (!batch) break;
    FERRY_ASSIGN_OR_RAISE(std::string json, ArrayToJson(batch->view()));
    out.push_back(std::move(json));
  }
  return out;
}

}  // namespace ferry::fuzz
