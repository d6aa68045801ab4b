// Schemas in Flight's IPC form.
#include "ferry/flight/info.hpp"

#include <cstring>

#include "ferry/ipc/decoder.hpp"
#include "ferry/ipc/writer.hpp"

namespace ferry::flight {

Result<std::string> EncodeSchema(const ArrowSchema* schema) {
  ipc::MemorySink sink;
  // Opening writes the schema message (continuation marker, length, flatbuffer, padding).
  FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter writer, ipc::StreamWriter::Open(&sink, schema));
  return std::string(reinterpret_cast<const char*>(sink.data()),
                     static_cast<size_t>(sink.position()));
}

Result<UniqueSchema> DecodeSchema(const std::string& bytes) {
  if (bytes.empty()) return Status::Invalid("the flight has no schema (0 bytes)");
  ipc::Decoder decoder;
  FERRY_ASSIGN_OR_RAISE(SharedBytes copy, SharedBytes::Copy(bytes.data(), bytes.size()));
  FERRY_RETURN_NOT_OK(decoder.Consume(copy).WithContext("the flight's schema"));
  if (decoder.schema() == nullptr) {
    return Status::Invalid("the flight's schema is incomplete (" + std::to_string(bytes.size()) +
                           " bytes)");
  }
  return decoder.ExportSchema();
}

Result<UniqueSchema> FlightInfo::DecodeSchema() const { return flight::DecodeSchema(schema); }

}  // namespace ferry::flight
