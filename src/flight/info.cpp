// Schemas in Flight's IPC form (encoded, decoded, compared), and times as FlightInfo's expirations
// show them.
#include "ferry/flight/info.hpp"

#include <cstring>
#include <ctime>

#include "ferry/format/schema.hpp"
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
  FERRY_ASSIGN_OR_RAISE(SharedBytes copy,
                        SharedBytes::Copy({bytes.data(), static_cast<int64_t>(bytes.size())}));
  FERRY_RETURN_NOT_OK(decoder.Consume(copy).WithContext("the flight's schema"));
  if (decoder.schema() == nullptr) {
    return Status::Invalid("the flight's schema is incomplete (" + std::to_string(bytes.size()) +
                           " bytes)");
  }
  return decoder.ExportSchema();
}

Result<bool> EncodedSchemaEquals(const std::string& a, const std::string& b, bool check_metadata) {
  if (a == b) return true;
  FERRY_ASSIGN_OR_RAISE(UniqueSchema sa, DecodeSchema(a));
  FERRY_ASSIGN_OR_RAISE(UniqueSchema sb, DecodeSchema(b));
  return SchemaEquals(sa.get(), sb.get(), check_metadata);
}

std::string FormatRfc3339(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

Result<UniqueSchema> FlightInfo::DecodeSchema() const { return flight::DecodeSchema(schema); }

}  // namespace ferry::flight
