// libFuzzer target: arbitrary bytes through the IPC stream reader (or the file reader, when the
// input starts with the file magic). Property: reading never crashes, and anything that reads
// cleanly survives ferry's writer and reads back to the same values.
#include <cstring>
#include <string>
#include <vector>

#include "ferry/format/json.hpp"
#include "ferry/format/stream.hpp"
#include "ferry/ipc/reader.hpp"
#include "ferry/ipc/writer.hpp"

namespace {

ferry::Result<std::vector<std::string>> ReadAll(const ferry::ipc::SharedBytes& bytes,
                                                ferry::UniqueSchema* schema_out) {
  ferry::ipc::ReadOptions options;
  options.max_decompressed_bytes = 64 << 20;
  ferry::Result<ferry::UniqueArrayStream> stream = ferry::Status::OK();
  if (bytes.size >= 6 && std::memcmp(bytes.data, "ARROW1", 6) == 0) {
    FERRY_ASSIGN_OR_RAISE(auto reader, ferry::ipc::FileReader::Open(bytes, options));
    stream = ferry::ipc::FileReader::ToStream(std::move(reader));
  } else {
    stream = ferry::ipc::ReadStream(bytes, options);
  }
  if (!stream.ok()) return stream.status();
  FERRY_ASSIGN_OR_RAISE(auto reader, ferry::ArrayStreamReader::Open(stream->get()));
  if (schema_out != nullptr) {
    FERRY_ASSIGN_OR_RAISE(*schema_out, ferry::CopySchema(reader.schema()));
  }
  std::vector<std::string> out;
  std::vector<ferry::Array> batches;
  while (true) {
    FERRY_ASSIGN_OR_RAISE(std::optional<ferry::Array> batch, reader.Next());
    if (!batch) break;
    FERRY_ASSIGN_OR_RAISE(std::string json, ferry::ArrayToJson(batch->view()));
    out.push_back(std::move(json));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = ferry::ipc::SharedBytes::Borrow(data, static_cast<int64_t>(size));
  ferry::UniqueSchema schema;
  ferry::Result<std::vector<std::string>> first = ReadAll(bytes, &schema);
  if (!first.ok()) return 0;

  // Re-write what was read and read it again: the values must not change.
  ferry::Result<ferry::UniqueArrayStream> again = ferry::ipc::ReadStream(bytes);
  if (bytes.size >= 6 && std::memcmp(bytes.data, "ARROW1", 6) == 0) {
    auto reader = ferry::ipc::FileReader::Open(bytes);
    if (!reader.ok()) __builtin_trap();
    again = ferry::ipc::FileReader::ToStream(std::move(*reader));
  }
  if (!again.ok()) __builtin_trap();
  ferry::ipc::MemorySink sink;
  auto writer = ferry::ipc::StreamWriter::Open(&sink, schema.get());
  if (!writer.ok()) return 0;  // e.g. a schema the writer refuses; reading was still clean
  if (!writer->WriteStream(again->get()).ok()) return 0;
  if (!writer->Close().ok()) __builtin_trap();
  ferry::Result<std::vector<std::string>> second = ReadAll(sink.Finish(), nullptr);
  if (!second.ok() || *second != *first) __builtin_trap();
  return 0;
}
