// IPC helpers for tests.
#include "support/ipc_util.hpp"

#include <cstring>

#include "ferry/format/json.hpp"
#include "ferry/format/stream.hpp"
#include "ferry/ipc/reader.hpp"
#include "ferry/ipc/sink.hpp"

namespace ferry::testing {

Result<SharedBytes> WriteIpc(const ArrowSchema* schema,
                             const std::vector<const ArrowArray*>& batches, bool file,
                             ipc::WriteOptions options) {
  ipc::MemorySink sink;
  if (file) {
    FERRY_ASSIGN_OR_RAISE(auto w, ipc::FileWriter::Open(&sink, schema, options));
    for (const ArrowArray* b : batches) FERRY_RETURN_NOT_OK(w.WriteBatch(b));
    FERRY_RETURN_NOT_OK(w.Close());
  } else {
    FERRY_ASSIGN_OR_RAISE(auto w, ipc::StreamWriter::Open(&sink, schema, options));
    for (const ArrowArray* b : batches) FERRY_RETURN_NOT_OK(w.WriteBatch(b));
    FERRY_RETURN_NOT_OK(w.Close());
  }
  return sink.Finish();
}

Result<std::vector<std::string>> ReadIpcAsJson(const SharedBytes& bytes, ipc::ReadOptions options) {
  Result<UniqueArrayStream> stream = Status::OK();
  if (bytes.size >= 6 && std::memcmp(bytes.data, "ARROW1", 6) == 0) {
    FERRY_ASSIGN_OR_RAISE(auto reader, ipc::FileReader::Open(bytes, options));
    stream = ipc::FileReader::ToStream(std::move(reader));
  } else {
    stream = ipc::ReadStream(bytes, options);
  }
  if (!stream.ok()) return stream.status();
  return StreamToJson(stream->get());
}

void CollectBuffers(const ArrowArray* array, std::vector<const void*>* out) {
  for (int64_t i = 0; i < array->n_buffers; ++i) out->push_back(array->buffers[i]);
  for (int64_t i = 0; i < array->n_children; ++i) CollectBuffers(array->children[i], out);
  if (array->dictionary != nullptr) CollectBuffers(array->dictionary, out);
}

Field BatchField(std::vector<Field> columns) {
  Field root = Field::Make("+s", "", std::move(columns));
  root.flags = 0;
  return root;
}

UniqueDeviceArray BorrowCounted(const ArrowArray* a, int* releases) {
  UniqueDeviceArray out;
  out->array = *a;
  out->array.private_data = releases;
  out->array.release = [](ArrowArray* self) {
    ++*static_cast<int*>(self->private_data);
    self->release = nullptr;
  };
  out->device_type = ARROW_DEVICE_CPU;
  out->device_id = -1;
  return out;
}

}  // namespace ferry::testing
