// ArrowArrayStream producers and the C++ consumer.
#include "ferry/format/stream.hpp"

#include <string>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/format/schema.hpp"

namespace ferry {

namespace {

// A generator with its schema, as a C stream's producer.
class SourceProducer final : public ArrayProducer {
 public:
  SourceProducer(UniqueSchema schema, ArraySource source)
      : schema_(std::move(schema)), source_(std::move(source)) {}

  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema copy, CopySchema(schema_.get()));
    copy.move_to(out);
    return Status::OK();
  }

  Status GetNext(ArrowArray* out) override {
    FERRY_ASSIGN_OR_RAISE(std::optional<UniqueArray> next, source_());
    if (next.has_value()) next->move_to(out);  // otherwise `out` stays released: the end
    return Status::OK();
  }

 private:
  UniqueSchema schema_;
  ArraySource source_;
};

}  // namespace

Result<UniqueArrayStream> MakeArrayStream(UniqueSchema schema, ArraySource source) {
  if (!schema.valid()) return Status::Invalid("stream schema is released");
  if (!source) return Status::Invalid("stream source is empty");
  return ExportArrayStream(std::make_unique<SourceProducer>(std::move(schema), std::move(source)));
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
  FERRY_RETURN_NOT_OK(StreamGetSchema(reader.stream_.get(), reader.schema_.get())
                          .WithContext("stream get_schema failed"));
  return reader;
}

Result<std::optional<Array>> ArrayStreamReader::Next() {
  if (!stream_.valid()) return Status::Invalid("stream reader is closed");
  UniqueArray array;
  FERRY_RETURN_NOT_OK(
      StreamGetNext(stream_.get(), array.get()).WithContext("stream get_next failed"));
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
