// The IPC subcommands.
#include "ipc_commands.hpp"

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/device/device.hpp"
#include "ferry/device/device_array.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema_view.hpp"
#include "ferry/format/stream.hpp"
#include "ferry/ipc/decoder.hpp"
#include "ferry/ipc/reader.hpp"
#include "ferry/ipc/writer.hpp"
#include "ferry/testing/integration_json.hpp"
#include "parses.hpp"

namespace ferry::cli {

namespace {

int IpcFail(const std::string& what, const Status& st) {
  std::fprintf(stderr, "ferry: %s: %s\n", what.c_str(), st.message().c_str());
  return 1;
}

bool IsFile(const SharedBytes& bytes) {
  return bytes.size >= 6 && std::memcmp(bytes.data, "ARROW1", 6) == 0;
}

const char* KindName(ipc::MessageKind k) {
  switch (k) {
    case ipc::MessageKind::kSchema:
      return "schema";
    case ipc::MessageKind::kDictionary:
      return "dictionary";
    case ipc::MessageKind::kRecordBatch:
      return "record batch";
    default:
      return "end of stream";
  }
}

void PrintSchema(const ArrowSchema* schema) {
  for (int64_t i = 0; i < schema->n_children; ++i) {
    Result<std::string> s = SchemaToString(schema->children[i]);
    const char* name = schema->children[i]->name;
    std::printf("  %s: %s\n", name != nullptr ? name : "",
                s.ok() ? s->c_str() : s.status().message().c_str());
  }
}

}  // namespace

int RunInspect(const IpcOptions& o) {
  Result<SharedBytes> bytes = SharedBytes::MapFile(o.input);
  if (!bytes.ok()) return IpcFail(o.input, bytes.status());
  if (IsFile(*bytes)) {
    Result<ipc::FileReader> reader = ipc::FileReader::Open(*bytes);
    if (!reader.ok()) return IpcFail(o.input, reader.status());
    std::printf("%s: Arrow IPC file, %lld bytes, metadata V%d\n", o.input.c_str(),
                static_cast<long long>(bytes->size), static_cast<int>(reader->version()) + 1);
    std::printf("schema (%lld columns):\n", static_cast<long long>(reader->schema()->n_children));
    PrintSchema(reader->schema());
    std::printf("dictionaries: %lld, record batches: %lld\n",
                static_cast<long long>(reader->num_dictionaries()),
                static_cast<long long>(reader->num_record_batches()));
    for (int64_t i = 0; i < reader->num_record_batches(); ++i) {
      Result<ipc::FileReader::BlockInfo> info = reader->RecordBatchInfo(i);
      if (!info.ok()) return IpcFail(o.input, info.status());
      std::printf("  batch %lld: %lld rows, %lld body bytes at offset %lld, %s\n",
                  static_cast<long long>(i), static_cast<long long>(info->rows),
                  static_cast<long long>(info->body_length), static_cast<long long>(info->offset),
                  info->compression.empty() ? "uncompressed" : info->compression.c_str());
    }
    for (const auto& [k, v] : reader->metadata()) {
      std::printf("footer metadata: %s = %s\n", k.c_str(), v.c_str());
    }
    return 0;
  }
  std::printf("%s: Arrow IPC stream, %lld bytes\n", o.input.c_str(),
              static_cast<long long>(bytes->size));
  ipc::Decoder decoder;
  int64_t pos = 0;
  while (pos < bytes->size && decoder.next_required_size() > 0) {
    const int64_t n = std::min(decoder.next_required_size(), bytes->size - pos);
    const int64_t start = pos;
    Status st = decoder.Consume(bytes->Slice(pos, n));
    pos += n;
    if (!st.ok()) return IpcFail(o.input, st);
    const long long end = start + n;
    while (std::optional<ipc::DecodedMessage> m = decoder.Next()) {
      std::printf("message %lld (ends at byte %lld): %s", static_cast<long long>(m->index), end,
                  KindName(m->kind));
      if (m->kind == ipc::MessageKind::kRecordBatch) {
        std::printf(", %lld rows, %lld body bytes, %s", static_cast<long long>(m->batch->length),
                    static_cast<long long>(m->body_length),
                    m->compression.empty() ? "uncompressed" : m->compression.c_str());
      } else if (m->kind == ipc::MessageKind::kDictionary) {
        std::printf(" id %lld%s", static_cast<long long>(m->dictionary_id),
                    m->is_delta ? " (delta)" : "");
      }
      std::printf("\n");
      if (m->kind == ipc::MessageKind::kSchema) {
        std::printf("schema (%lld columns, metadata V%d):\n",
                    static_cast<long long>(decoder.schema()->n_children),
                    static_cast<int>(decoder.version()) + 1);
        PrintSchema(decoder.schema());
      }
    }
  }
  if (!decoder.between_messages()) {
    return IpcFail(o.input, Status::Invalid("the stream is truncated"));
  }
  if (!decoder.finished()) std::printf("(no end-of-stream marker)\n");
  return 0;
}

int RunValidate(const IpcOptions& o) {
  Result<ValidationLevel> level = ParseValidation(o.validation);
  if (!level.ok()) return IpcFail("--validation", level.status());
  ipc::ReadOptions options;
  options.validation = *level;
  Result<UniqueArrayStream> stream = ipc::ReadPath(o.input, options);
  if (!stream.ok()) return IpcFail(o.input, stream.status());
  Result<ArrayStreamReader> reader = ArrayStreamReader::Open(stream->get());
  if (!reader.ok()) return IpcFail(o.input, reader.status());
  int64_t batches = 0;
  int64_t rows = 0;
  while (true) {
    Result<std::optional<Array>> b = reader->Next();
    if (!b.ok()) return IpcFail(o.input, b.status());
    if (!*b) break;
    ++batches;
    rows += (*b)->length();
  }
  std::printf("%s: valid (%s): %lld batches, %lld rows\n", o.input.c_str(), o.validation.c_str(),
              static_cast<long long>(batches), static_cast<long long>(rows));
  return 0;
}

int RunCat(const IpcOptions& o) {
  Result<UniqueArrayStream> stream = ipc::ReadPath(o.input);
  if (!stream.ok()) return IpcFail(o.input, stream.status());
  Result<ArrayStreamReader> reader = ArrayStreamReader::Open(stream->get());
  if (!reader.ok()) return IpcFail(o.input, reader.status());
  if (o.json) {
    std::vector<Array> batches;
    while (true) {
      Result<std::optional<Array>> b = reader->Next();
      if (!b.ok()) return IpcFail(o.input, b.status());
      if (!*b) break;
      batches.push_back(std::move(**b));
    }
    std::vector<const ArrowArray*> arrays;
    arrays.reserve(batches.size());
    for (const Array& b : batches) arrays.push_back(b.array());
    Result<nlohmann::json> doc = testing::IntegrationJson(reader->schema(), arrays);
    if (!doc.ok()) return IpcFail(o.input, doc.status());
    std::printf("%s\n", doc->dump(1).c_str());
    return 0;
  }
  std::printf("schema:\n");
  PrintSchema(reader->schema());
  int64_t index = 0;
  while (true) {
    Result<std::optional<Array>> b = reader->Next();
    if (!b.ok()) return IpcFail(o.input, b.status());
    if (!*b) break;
    Result<std::string> json = ArrayToJson((*b)->view());
    if (!json.ok()) return IpcFail(o.input, json.status());
    const nlohmann::json rows = nlohmann::json::parse(*json);
    std::printf("batch %lld (%zu rows):\n", static_cast<long long>(index++), rows.size());
    size_t shown = 0;
    for (const auto& row : rows) {
      if (o.limit >= 0 && shown == static_cast<size_t>(o.limit)) {
        std::printf("  ... %zu more\n", rows.size() - shown);
        break;
      }
      std::printf("  %s\n", row.dump().c_str());
      ++shown;
    }
  }
  return 0;
}

int RunConvert(const IpcOptions& o) {
  ipc::WriteOptions w;
  Result<ipc::Compression> compression = ipc::ParseCompression(o.compression);
  if (!compression.ok()) return IpcFail("--compression", compression.status());
  w.compression = *compression;
  w.alignment = o.alignment;
  w.emit_dictionary_deltas = o.emit_dictionary_deltas;
  Result<UniqueArrayStream> stream = ipc::ReadPath(o.input);
  if (!stream.ok()) return IpcFail(o.input, stream.status());
  UniqueSchema schema;
  if (const Status st = StreamGetSchema(stream->get(), schema.get()); !st.ok()) {
    return IpcFail(o.input, st.WithContext("cannot read the schema"));
  }
  Result<std::unique_ptr<ipc::FileSink>> sink = ipc::FileSink::Open(o.output);
  if (!sink.ok()) return IpcFail(o.output, sink.status());
  auto run = [&](auto& writer) -> Status {
    while (true) {
      UniqueArray batch;
      FERRY_RETURN_NOT_OK(StreamGetNext(stream->get(), batch.get()));
      if (!batch.valid()) break;
      // Held by the writer until the next is written: a dictionary the batches share is read once.
      UniqueDeviceArray held;
      FERRY_RETURN_NOT_OK(DeviceArrayInit(*CpuDevice(), held.get(), batch.get(), nullptr));
      FERRY_RETURN_NOT_OK(writer.WriteHeldBatch(std::move(held)));
      if (o.progress) {
        std::fprintf(stderr, "\rferry convert: %lld batches, %.1f MB written",
                     static_cast<long long>(writer.stats().record_batches),
                     static_cast<double>(writer.stats().bytes_written) / 1e6);
      }
    }
    FERRY_RETURN_NOT_OK(writer.Close());
    if (o.progress) std::fprintf(stderr, "\n");
    std::printf("%s -> %s: %lld batches, %lld bytes (%s, %s, alignment %d)", o.input.c_str(),
                o.output.c_str(), static_cast<long long>(writer.stats().record_batches),
                static_cast<long long>(writer.stats().bytes_written), o.format.c_str(),
                o.compression.c_str(), o.alignment);
    if (o.emit_dictionary_deltas) {
      std::printf(", %lld dictionary batches of which %lld deltas",
                  static_cast<long long>(writer.stats().dictionary_batches),
                  static_cast<long long>(writer.stats().dictionary_deltas));
    }
    std::printf("\n");
    return Status::OK();
  };
  Status st;
  if (o.format == "file") {
    Result<ipc::FileWriter> writer = ipc::FileWriter::Open(sink->get(), schema.get(), w);
    st = writer.ok() ? run(*writer) : writer.status();
  } else if (o.format == "stream") {
    Result<ipc::StreamWriter> writer = ipc::StreamWriter::Open(sink->get(), schema.get(), w);
    st = writer.ok() ? run(*writer) : writer.status();
  } else {
    st = Status::Invalid("unknown format \"" + o.format + "\" (stream, file)");
  }
  if (st.ok()) st = (*sink)->Close();
  if (!st.ok()) return IpcFail(o.output, st);
  return 0;
}

}  // namespace ferry::cli
