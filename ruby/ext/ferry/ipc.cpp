// Ferry::IPC: Arrow IPC stream and file formats from Ruby. Batches are struct Ferry::Arrays; a
// path is memory-mapped and read zero-copy, a String is copied once; writers send the arrays'
// own buffers.
#include <cstring>
#include <vector>

#include "array_ref.hpp"
#include "ferry/core/keep_alive.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/reader.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/ipc/writer.hpp"
#include "ferry_ext.hpp"

namespace ferry_ruby {
namespace {

namespace ipc = ferry::ipc;

// Every batch of `stream` as a Ruby Array of Ferry::Arrays.
ferry::Status StreamToRuby(ferry::UniqueArrayStream stream, VALUE out) {
  ArrowArrayStream* s = stream.get();
  ferry::UniqueSchema schema;
  FERRY_RETURN_NOT_OK(ferry::StreamGetSchema(s, schema.get()));
  while (true) {
    ferry::UniqueArray batch;
    FERRY_RETURN_NOT_OK(ferry::StreamGetNext(s, batch.get()));
    if (batch.get()->release == nullptr) return ferry::Status::OK();
    FERRY_ASSIGN_OR_RAISE(ferry::UniqueSchema copy, ferry::CopySchema(schema.get()));
    FERRY_ASSIGN_OR_RAISE(ferry::Array array,
                          ferry::Array::Import(std::move(copy), std::move(batch)));
    rb_ary_push(out, WrapArray(std::make_shared<const ferry::Array>(std::move(array))));
  }
}

// Ferry::IPC.read_path(path): the batches of an IPC file or stream (format from the magic).
VALUE ReadPath(VALUE, VALUE path) {
  const char* p = StringValueCStr(path);
  return Guarded([&](VALUE* exc) {
    VALUE out = rb_ary_new();
    auto stream = ipc::ReadPath(p);
    ferry::Status st =
        stream.ok() ? StreamToRuby(std::move(stream).ValueOrDie(), out) : stream.status();
    if (!st.ok()) *exc = MakeError(eError, std::string("Ferry::IPC.read ") + p, st);
    return out;
  });
}

// Ferry::IPC.read_bytes(string): the same from bytes in memory (copied once, so the String may
// change or go afterwards).
VALUE ReadBytes(VALUE, VALUE bytes) {
  StringValue(bytes);
  return Guarded([&](VALUE* exc) {
    VALUE out = rb_ary_new();
    auto shared = ferry::SharedBytes::Copy({RSTRING_PTR(bytes), RSTRING_LEN(bytes)});
    ferry::Status st = shared.status();
    if (shared.ok()) {
      const uint8_t* d = shared->data;
      const bool file = shared->size >= 6 && std::memcmp(d, "ARROW1", 6) == 0;
      ferry::Result<ferry::UniqueArrayStream> stream =
          file ? [&]() -> ferry::Result<ferry::UniqueArrayStream> {
        FERRY_ASSIGN_OR_RAISE(ipc::FileReader reader, ipc::FileReader::Open(*shared));
        return ipc::FileReader::ToStream(std::move(reader));
      }()
          : ipc::ReadStream(*shared);
      st = stream.ok() ? StreamToRuby(std::move(stream).ValueOrDie(), out) : stream.status();
    }
    if (!st.ok()) *exc = MakeError(eError, "Ferry::IPC.read", st);
    return out;
  });
}

// Write `batches` (struct arrays of one schema) to `sink` in the stream or file format.
ferry::Status WriteBatches(const std::vector<std::shared_ptr<const ferry::Array>>& batches,
                           bool file, ipc::Sink* sink) {
  if (batches.empty()) return ferry::Status::Invalid("no batches to write");
  const ArrowSchema* schema = batches[0]->schema();
  if (file) {
    FERRY_ASSIGN_OR_RAISE(ipc::FileWriter w, ipc::FileWriter::Open(sink, schema));
    for (const auto& b : batches) FERRY_RETURN_NOT_OK(w.WriteBatch(b->array()));
    return w.Close();
  }
  FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter w, ipc::StreamWriter::Open(sink, schema));
  for (const auto& b : batches) FERRY_RETURN_NOT_OK(w.WriteBatch(b->array()));
  return w.Close();
}

// Raise unless `batches` is an Array of struct Ferry::Arrays; `format` must be "stream" or
// "file" (String or Symbol). Returns whether the file format was asked.
bool CheckWriteArgs(VALUE batches, VALUE format) {
  Check_Type(batches, T_ARRAY);
  for (long i = 0; i < RARRAY_LEN(batches); ++i) {
    if (UnwrapArray(rb_ary_entry(batches, i))->schema()->format != std::string_view("+s")) {
      rb_raise(rb_eArgError, "Ferry::IPC.write: batch %ld is not a struct array (a record batch)",
               i);
    }
  }
  if (SYMBOL_P(format)) format = rb_sym2str(format);
  const char* f = StringValueCStr(format);
  if (std::strcmp(f, "stream") != 0 && std::strcmp(f, "file") != 0) {
    rb_raise(rb_eArgError, "Ferry::IPC.write: format must be :stream or :file (got %s)", f);
  }
  return std::strcmp(f, "file") == 0;
}

std::vector<std::shared_ptr<const ferry::Array>> Batches(VALUE batches) {
  std::vector<std::shared_ptr<const ferry::Array>> out;
  for (long i = 0; i < RARRAY_LEN(batches); ++i)
    out.push_back(UnwrapArray(rb_ary_entry(batches, i)));
  return out;
}

// Ferry::IPC.write_path(batches, path, format)
VALUE WritePath(VALUE, VALUE batches, VALUE path, VALUE format) {
  const bool file = CheckWriteArgs(batches, format);
  const char* p = StringValueCStr(path);
  return Guarded([&](VALUE* exc) {
    auto sink = ipc::FileSink::Open(p);
    ferry::Status st = sink.status();
    if (sink.ok()) {
      st = WriteBatches(Batches(batches), file, sink->get());
      ferry::Status closed = (*sink)->Close();
      if (st.ok()) st = closed;
    }
    if (!st.ok()) *exc = MakeError(eError, std::string("Ferry::IPC.write ") + p, st);
    return Qnil;
  });
}

// Ferry::IPC.write_bytes(batches, format): the IPC bytes as a binary String.
VALUE WriteBytes(VALUE, VALUE batches, VALUE format) {
  const bool file = CheckWriteArgs(batches, format);
  return Guarded([&](VALUE* exc) {
    ipc::MemorySink sink;
    ferry::Status st = WriteBatches(Batches(batches), file, &sink);
    if (!st.ok()) {
      *exc = MakeError(eError, "Ferry::IPC.write", st);
      return Qnil;
    }
    return rb_str_new(reinterpret_cast<const char*>(sink.data()), sink.position());
  });
}

// Ferry::IPC.record_batch(names, columns): a struct array whose fields share the columns'
// buffers. Columns must have the same length.
VALUE RecordBatch(VALUE, VALUE names, VALUE columns) {
  Check_Type(names, T_ARRAY);
  Check_Type(columns, T_ARRAY);
  if (RARRAY_LEN(names) != RARRAY_LEN(columns) || RARRAY_LEN(columns) == 0) {
    rb_raise(rb_eArgError, "Ferry::IPC.record_batch: %ld names for %ld columns (need >= 1)",
             RARRAY_LEN(names), RARRAY_LEN(columns));
  }
  for (long i = 0; i < RARRAY_LEN(columns); ++i) {
    StringValueCStr(RARRAY_PTR(names)[i]);
    if (UnwrapArray(rb_ary_entry(columns, i))->length() !=
        UnwrapArray(rb_ary_entry(columns, 0))->length()) {
      rb_raise(rb_eArgError, "Ferry::IPC.record_batch: column %ld has another length", i);
    }
  }
  return Guarded([&](VALUE* exc) {
    std::vector<std::shared_ptr<const ferry::Array>> cols = Batches(columns);
    ferry::Field field = ferry::Field::Make("+s", "");
    for (size_t i = 0; i < cols.size(); ++i) {
      auto child = ferry::Field::Import(cols[i]->schema());
      if (!child.ok()) {
        *exc = MakeError(eError, "Ferry::IPC.record_batch", child.status());
        return Qnil;
      }
      child->name = RSTRING_PTR(rb_ary_entry(names, static_cast<long>(i)));
      field.children.push_back(std::move(child).ValueOrDie());
    }
    auto schema = field.WithFlags(0).Export();
    if (!schema.ok()) {
      *exc = MakeError(eError, "Ferry::IPC.record_batch", schema.status());
      return Qnil;
    }
    // The struct node: no validity buffer; each child is a reference to a column.
    ferry::UniqueArray array;
    const void* no_validity = nullptr;
    const ferry::KeepAlive::Slots slots = ferry::KeepAlive().MakeNode(
        array.get(), cols[0]->length(), 0, 0, &no_validity, 1, static_cast<int64_t>(cols.size()));
    for (size_t i = 0; i < cols.size(); ++i)
      slots.children[i] = RefArray(cols[i], cols[i]->array());
    auto imported = ferry::Array::Import(std::move(schema).ValueOrDie(), std::move(array));
    if (!imported.ok()) {
      *exc = MakeError(eError, "Ferry::IPC.record_batch", imported.status());
      return Qnil;
    }
    return WrapArray(std::make_shared<const ferry::Array>(std::move(imported).ValueOrDie()));
  });
}

}  // namespace

void InitIpc() {
  /* Arrow IPC stream and file formats: read from a path or a String, write to either. */
  VALUE mIpc = rb_define_module_under(mFerry, "IPC");
  rb_define_module_function(mIpc, "read_path", RUBY_METHOD_FUNC(ReadPath), 1);
  rb_define_module_function(mIpc, "read_bytes", RUBY_METHOD_FUNC(ReadBytes), 1);
  rb_define_module_function(mIpc, "write_path", RUBY_METHOD_FUNC(WritePath), 3);
  rb_define_module_function(mIpc, "write_bytes", RUBY_METHOD_FUNC(WriteBytes), 2);
  rb_define_module_function(mIpc, "record_batch", RUBY_METHOD_FUNC(RecordBatch), 2);
}

}  // namespace ferry_ruby
