// ArrowArrayStream producers and the C++ consumer.
#include "ferry/format/stream.hpp"

#include <cerrno>
#include <string>

#include "ferry/format/schema.hpp"

namespace ferry {

namespace {

struct StreamState {
  UniqueSchema schema;
  ArraySource source;
  std::string last_error;
};

StreamState* State(ArrowArrayStream* stream) {
  return static_cast<StreamState*>(stream->private_data);
}

int GetSchema(ArrowArrayStream* stream, ArrowSchema* out) {
  StreamState* state = State(stream);
  auto copy = CopySchema(state->schema.get());
  if (!copy.ok()) {
    state->last_error = copy.status().message();
    return copy.status().code();
  }
  copy->move_to(out);
  return 0;
}

int GetNext(ArrowArrayStream* stream, ArrowArray* out) {
  StreamState* state = State(stream);
  auto next = state->source();
  if (!next.ok()) {
    state->last_error = next.status().message();
    out->release = nullptr;
    return next.status().code();
  }
  if (!next->has_value()) {
    out->release = nullptr;  // end of stream
    return 0;
  }
  (*next)->move_to(out);
  return 0;
}

const char* GetLastError(ArrowArrayStream* stream) {
  StreamState* state = State(stream);
  return state->last_error.empty() ? nullptr : state->last_error.c_str();
}

void Release(ArrowArrayStream* stream) {
  if (stream == nullptr || stream->release == nullptr) return;
  delete State(stream);
  stream->private_data = nullptr;
  stream->release = nullptr;
}

}  // namespace

Result<UniqueArrayStream> MakeArrayStream(UniqueSchema schema, ArraySource source) {
  if (!schema.valid()) return Status::Invalid("stream schema is released");
  if (!source) return Status::Invalid("stream source is empty");
  auto* state = new StreamState{std::move(schema), std::move(source), {}};
  UniqueArrayStream out;
  out->get_schema = &GetSchema;
  out->get_next = &GetNext;
  out->get_last_error = &GetLastError;
  out->private_data = state;
  out->release = &Release;
  return out;
}

Result<UniqueArrayStream> MakeArrayStream(UniqueSchema schema, std::vector<UniqueArray> arrays) {
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (!arrays[i].valid()) {
      return Status::Invalid("stream array " + std::to_string(i) + " is released");
    }
  }
  auto items = std::make_shared<std::vector<UniqueArray>>(std::move(arrays));
  auto next = std::make_shared<size_t>(0);
  ArraySource source = [items, next]() -> Result<std::optional<UniqueArray>> {
    if (*next >= items->size()) return std::optional<UniqueArray>();
    return std::optional<UniqueArray>(std::move((*items)[(*next)++]));
  };
  return MakeArrayStream(std::move(schema), std::move(source));
}

Result<ArrayStreamReader> ArrayStreamReader::Open(ArrowArrayStream* stream) {
  if (stream == nullptr) return Status::Invalid("stream is NULL");
  if (stream->release == nullptr) return Status::Invalid("stream is released");
  ArrayStreamReader reader;
  reader.stream_ = UniqueArrayStream(stream);
  int code = reader.stream_->get_schema(reader.stream_.get(), reader.schema_.get());
  if (code != 0) {
    const char* msg = reader.stream_->get_last_error(reader.stream_.get());
    return Status(code, std::string("stream get_schema failed: ") + (msg ? msg : "no message"));
  }
  if (!reader.schema_.valid())
    return Status::Invalid("stream get_schema returned a released schema");
  return reader;
}

Result<std::optional<Array>> ArrayStreamReader::Next() {
  if (!stream_.valid()) return Status::Invalid("stream reader is closed");
  UniqueArray array;
  int code = stream_->get_next(stream_.get(), array.get());
  if (code != 0) {
    const char* msg = stream_->get_last_error(stream_.get());
    return Status(code, std::string("stream get_next failed: ") + (msg ? msg : "no message"));
  }
  if (!array.valid()) return std::optional<Array>();
  FERRY_ASSIGN_OR_RAISE(UniqueSchema schema, CopySchema(schema_.get()));
  FERRY_ASSIGN_OR_RAISE(Array out, Array::Import(std::move(schema), std::move(array)));
  return std::optional<Array>(std::move(out));
}

ArrayStreamReader::Iterator ArrayStreamReader::begin() {
  Iterator it(this);
  ++it;
  return it;
}

ArrayStreamReader::Iterator& ArrayStreamReader::Iterator::operator++() {
  if (reader_ == nullptr) return *this;
  if (current_.has_value() && !current_->ok()) {
    // The error was the last item.
    reader_ = nullptr;
    current_.reset();
    return *this;
  }
  Result<std::optional<Array>> next = reader_->Next();
  if (!next.ok()) {
    current_.emplace(next.status());
  } else if (!next->has_value()) {
    reader_ = nullptr;
    current_.reset();
  } else {
    current_.emplace(std::move(**next));
  }
  return *this;
}

Result<std::vector<Array>> ArrayStreamReader::ReadAll() {
  std::vector<Array> out;
  while (true) {
    FERRY_ASSIGN_OR_RAISE(std::optional<Array> next, Next());
    if (!next.has_value()) return out;
    out.push_back(std::move(*next));
  }
}

}  // namespace ferry
