// The C surface of the ipc layer.
#include <cstring>
#include <memory>

#include "capi/error.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/reader.hpp"
#include "ferry/ipc/writer.hpp"

using ferry::SharedBytes;
using ferry::Status;

namespace {

ferry::Result<ferry::ipc::ReadOptions> ReadOptionsOf(const FerryIpcReadOptions* in) {
  ferry::ipc::ReadOptions o;
  if (in == nullptr) return o;
  if (in->validation < 0 || in->validation > 3) {
    return Status::Invalid("unknown validation level " + std::to_string(in->validation));
  }
  o.validation = static_cast<ferry::ValidationLevel>(in->validation);
  if (in->max_decompressed_bytes < 0) {
    return Status::Invalid("max_decompressed_bytes is negative");
  }
  if (in->max_decompressed_bytes > 0) o.max_decompressed_bytes = in->max_decompressed_bytes;
  return o;
}

ferry::Result<ferry::ipc::WriteOptions> WriteOptionsOf(const FerryIpcWriteOptions* in, bool* file) {
  ferry::ipc::WriteOptions o;
  *file = false;
  if (in == nullptr) return o;
  if (in->format != FERRY_IPC_FORMAT_STREAM && in->format != FERRY_IPC_FORMAT_FILE) {
    return Status::Invalid("unknown IPC format " + std::to_string(in->format));
  }
  *file = in->format == FERRY_IPC_FORMAT_FILE;
  if (in->compression < 0 || in->compression > 2) {
    return Status::Invalid("unknown IPC compression " + std::to_string(in->compression));
  }
  o.compression = static_cast<ferry::ipc::Compression>(in->compression);
  o.compression_level = in->compression_level;
  o.alignment = in->alignment == 0 ? 8 : in->alignment;
  o.big_endian = in->big_endian != 0;
  o.emit_dictionary_deltas = in->emit_dictionary_deltas != 0;
  return o;
}

Status WriteAll(ArrowArrayStream* stream, ferry::ipc::Sink* sink, bool file,
                const ferry::ipc::WriteOptions& options) {
  ferry::UniqueArrayStream owned(stream);
  ferry::UniqueSchema schema;
  FERRY_RETURN_NOT_OK(
      ferry::StreamGetSchema(owned.get(), schema.get()).WithContext("get_schema failed"));
  if (file) {
    FERRY_ASSIGN_OR_RAISE(auto w, ferry::ipc::FileWriter::Open(sink, schema.get(), options));
    FERRY_RETURN_NOT_OK(w.WriteStream(owned.get()));
    return w.Close();
  }
  FERRY_ASSIGN_OR_RAISE(auto w, ferry::ipc::StreamWriter::Open(sink, schema.get(), options));
  FERRY_RETURN_NOT_OK(w.WriteStream(owned.get()));
  return w.Close();
}

struct OwnedBytes {
  std::shared_ptr<const void> keep;
};

void ReleaseBytes(FerryBuffer* bytes) {
  delete static_cast<OwnedBytes*>(bytes->private_data);
  bytes->release = nullptr;
  bytes->private_data = nullptr;
}

}  // namespace

struct FerryIpcFileReader {
  ferry::ipc::FileReader reader;
};

extern "C" {

FerryErrorCode FerryIpcReadPath(const char* path, const FerryIpcReadOptions* options,
                                ArrowArrayStream* out, FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (path == nullptr || out == nullptr) return Status::Invalid("path or out is NULL");
    FERRY_ASSIGN_OR_RAISE(auto o, ReadOptionsOf(options));
    FERRY_ASSIGN_OR_RAISE(ferry::UniqueArrayStream s, ferry::ipc::ReadPath(path, o));
    s.move_to(out);
    return Status::OK();
  });
}

FerryErrorCode FerryIpcReadBuffer(const uint8_t* data, int64_t size, void (*release)(void*),
                                  void* private_data, const FerryIpcReadOptions* options,
                                  ArrowArrayStream* out, FerryError* error) {
  // The owner calls `release` when the last reference (stream or array) goes away, or right
  // away when anything below fails.
  std::shared_ptr<const void> owner(private_data, [release](const void* p) {
    if (release != nullptr) release(const_cast<void*>(p));
  });
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (out == nullptr || (data == nullptr && size > 0) || size < 0) {
      return Status::Invalid("data, size or out is invalid");
    }
    FERRY_ASSIGN_OR_RAISE(auto o, ReadOptionsOf(options));
    SharedBytes bytes{data, size, std::move(owner)};
    ferry::Result<ferry::UniqueArrayStream> s = Status::OK();
    if (size >= 6 && std::memcmp(data, "ARROW1", 6) == 0) {
      FERRY_ASSIGN_OR_RAISE(auto reader, ferry::ipc::FileReader::Open(std::move(bytes), o));
      s = ferry::ipc::FileReader::ToStream(std::move(reader));
    } else {
      s = ferry::ipc::ReadStream(std::move(bytes), o);
    }
    if (!s.ok()) return s.status();
    s->move_to(out);
    return Status::OK();
  });
}

FerryErrorCode FerryIpcWritePath(ArrowArrayStream* stream, const char* path,
                                 const FerryIpcWriteOptions* options, FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (stream == nullptr || stream->release == nullptr) {
      return Status::Invalid("the stream is NULL or released");
    }
    ferry::UniqueArrayStream owned(stream);
    if (path == nullptr) return Status::Invalid("path is NULL");
    bool file = false;
    FERRY_ASSIGN_OR_RAISE(auto o, WriteOptionsOf(options, &file));
    FERRY_ASSIGN_OR_RAISE(auto sink, ferry::ipc::FileSink::Open(path));
    FERRY_RETURN_NOT_OK(WriteAll(owned.get(), sink.get(), file, o));
    return sink->Close();
  });
}

FerryErrorCode FerryIpcWriteBuffer(ArrowArrayStream* stream, const FerryIpcWriteOptions* options,
                                   FerryBuffer* out, FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (stream == nullptr || stream->release == nullptr) {
      return Status::Invalid("the stream is NULL or released");
    }
    ferry::UniqueArrayStream owned(stream);
    if (out == nullptr) return Status::Invalid("out is NULL");
    bool file = false;
    FERRY_ASSIGN_OR_RAISE(auto o, WriteOptionsOf(options, &file));
    ferry::ipc::MemorySink sink;
    FERRY_RETURN_NOT_OK(WriteAll(owned.get(), &sink, file, o));
    SharedBytes bytes = sink.Finish();
    // The sink's own anonymous pages, writable and now the caller's alone.
    out->data = const_cast<uint8_t*>(bytes.data);
    out->size = bytes.size;
    out->private_data = new OwnedBytes{std::move(bytes.owner)};
    out->release = &ReleaseBytes;
    return Status::OK();
  });
}

FerryErrorCode FerryIpcFileReaderOpen(const char* path, const FerryIpcReadOptions* options,
                                      FerryIpcFileReader** out, FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (path == nullptr || out == nullptr) return Status::Invalid("path or out is NULL");
    FERRY_ASSIGN_OR_RAISE(auto o, ReadOptionsOf(options));
    FERRY_ASSIGN_OR_RAISE(SharedBytes bytes, SharedBytes::MapFile(path));
    ferry::Result<ferry::ipc::FileReader> reader =
        ferry::ipc::FileReader::Open(std::move(bytes), o);
    if (!reader.ok()) {
      return Status(reader.status().code(),
                    std::string("\"") + path + "\": " + reader.status().message());
    }
    *out = new FerryIpcFileReader{std::move(*reader)};
    return Status::OK();
  });
}

int64_t FerryIpcFileReaderNumRecordBatches(const FerryIpcFileReader* reader) {
  return reader == nullptr ? 0 : reader->reader.num_record_batches();
}

FerryErrorCode FerryIpcFileReaderSchema(const FerryIpcFileReader* reader, ArrowSchema* out,
                                        FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (reader == nullptr || out == nullptr) return Status::Invalid("reader or out is NULL");
    FERRY_ASSIGN_OR_RAISE(ferry::UniqueSchema s, ferry::CopySchema(reader->reader.schema()));
    s.move_to(out);
    return Status::OK();
  });
}

FerryErrorCode FerryIpcFileReaderRead(const FerryIpcFileReader* reader, int64_t i, ArrowArray* out,
                                      FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (reader == nullptr || out == nullptr) return Status::Invalid("reader or out is NULL");
    FERRY_ASSIGN_OR_RAISE(ferry::UniqueArray a, reader->reader.ReadRecordBatch(i));
    a.move_to(out);
    return Status::OK();
  });
}

void FerryIpcFileReaderRelease(FerryIpcFileReader* reader) { delete reader; }

}  // extern "C"
