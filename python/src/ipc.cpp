// ferry.ipc: Arrow IPC streams and files read zero-copy from bytes-like objects and memory-mapped
// files, and written from any stream or array producer to memory or files.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "capsule.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/device/device_array.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/decoder.hpp"
#include "ferry/ipc/reader.hpp"
#include "ferry/ipc/writer.hpp"
#include "objects.hpp"

namespace ferry::python {
namespace {

/// The bytes of a buffer-protocol object, kept alive (under a GIL guard) by the SharedBytes.
SharedBytes BytesOf(nb::handle obj) {
  Py_buffer buffer;
  if (PyObject_GetBuffer(obj.ptr(), &buffer, PyBUF_SIMPLE) != 0) throw nb::python_error();
  auto* held = new Py_buffer(buffer);
  std::shared_ptr<const void> owner(held, [](const void* p) {
    auto* b = static_cast<Py_buffer*>(const_cast<void*>(p));
    if (nb::is_alive()) {
      nb::gil_scoped_acquire gil;
      PyBuffer_Release(b);
    }
    delete b;
  });
  return SharedBytes{static_cast<const uint8_t*>(held->buf), held->len, std::move(owner)};
}

bool IsPath(nb::handle obj) { return PyUnicode_Check(obj.ptr()) || nb::hasattr(obj, "__fspath__"); }

std::string PathOf(nb::handle obj) {
  nb::object path = nb::steal(PyOS_FSPath(obj.ptr()));
  if (!path.is_valid()) throw nb::python_error();
  if (!PyUnicode_Check(path.ptr()))
    Raise(PyExc_TypeError, "paths must be str or os.PathLike of str");
  return nb::cast<std::string>(path);
}

ipc::ReadOptions ReadOptionsOf(ValidationLevel validation) {
  ipc::ReadOptions options;
  options.validation = validation;
  return options;
}

ipc::WriteOptions WriteOptionsOf(const std::optional<std::string>& compression, int32_t alignment) {
  ipc::WriteOptions options;
  if (compression) options.compression = Unwrap(ipc::ParseCompression(*compression));
  options.alignment = alignment;
  return options;
}

/// A memory view of bytes the writer produced (read-only, unsigned bytes, no copy).
PyMemoryView ViewOfBytes(SharedBytes bytes) {
  PyMemoryView out;
  out.view = Unwrap(memview::MakeContiguousView(bytes.owner, const_cast<uint8_t*>(bytes.data),
                                                bytes.size, "C", {bytes.size}, true));
  out.obj = nb::none();
  return out;
}

/// An IPC stream read from a Python file object (anything with read(): an open file, a socket's
/// makefile, io.BytesIO, an fsspec file) as it is consumed: each get_next reads, under the GIL,
/// what the decoder says it needs next, so a batch is decoded once its bytes have come and the
/// stream is never held whole. Bodies are referenced in the bytes objects read, not copied again.
class PythonFileProducer final : public ArrayProducer {
 public:
  PythonFileProducer(nb::handle file, const ipc::ReadOptions& options)
      : file_(nb::borrow(file)), decoder_(options) {}
  ~PythonFileProducer() override {
    if (!nb::is_alive()) {
      file_.release();  // the interpreter is gone: nothing may be released into it
      return;
    }
    nb::gil_scoped_acquire gil;
    file_.reset();
  }

  Status GetSchema(ArrowSchema* out) override {
    while (decoder_.schema() == nullptr) {
      FERRY_ASSIGN_OR_RAISE(bool more, ReadSome());
      if (!more) return Status::Invalid("the stream ends before its Schema message");
    }
    FERRY_ASSIGN_OR_RAISE(UniqueSchema schema, decoder_.ExportSchema());
    schema.move_to(out);
    return Status::OK();
  }

  Status GetNext(ArrowArray* out) override {
    while (true) {
      while (std::optional<ipc::DecodedMessage> m = decoder_.Next()) {
        if (m->kind == ipc::MessageKind::kRecordBatch) {
          m->batch.move_to(out);
          return Status::OK();
        }
      }
      if (decoder_.finished()) return Status::OK();  // released `out`: the end
      FERRY_ASSIGN_OR_RAISE(bool more, ReadSome());
      if (!more) {
        if (!decoder_.between_messages()) {
          return Status::Invalid("the stream is truncated at byte " + std::to_string(read_) + " (" +
                                 std::to_string(decoder_.next_required_size()) +
                                 " more bytes were needed)");
        }
        return Status::OK();  // a stream may end between messages without its marker
      }
    }
  }

 private:
  // Read what the decoder needs next and feed it; false at the file's end.
  Result<bool> ReadSome() {
    const int64_t need = decoder_.next_required_size();
    if (need <= 0) return false;
    if (!nb::is_alive()) return Status::Cancelled("the Python interpreter has exited");
    SharedBytes bytes;
    {
      nb::gil_scoped_acquire gil;
      try {
        nb::object got = file_.attr("read")(need);
        if (got.is_none()) {
          return Status::IOError("the source's read() returned None at byte " +
                                 std::to_string(read_) +
                                 " (a non-blocking file with nothing "
                                 "ready: ferry reads blocking files)");
        }
        bytes = BytesOf(got);
      } catch (nb::python_error& e) {
        return Status::IOError(
            RaisedBy("the source's read()", e, " at byte " + std::to_string(read_)));
      }
    }
    if (bytes.size == 0) return false;
    if (bytes.size > need) {
      return Status::IOError("the source's read(" + std::to_string(need) + ") returned " +
                             std::to_string(bytes.size) + " bytes");
    }
    read_ += bytes.size;
    FERRY_RETURN_NOT_OK(decoder_.Consume(bytes));
    return true;
  }

  nb::object file_;
  ipc::Decoder decoder_;
  int64_t read_ = 0;
};

bool IsReadable(nb::handle obj) {
  return !PyObject_CheckBuffer(obj.ptr()) && nb::hasattr(obj, "read");
}

PyArrayStream ReadStream(nb::handle source, ValidationLevel validation) {
  if (IsReadable(source)) {
    return OpenStream(WrapHostStream(ExportArrayStream(
        std::make_unique<PythonFileProducer>(source, ReadOptionsOf(validation)))));
  }
  Result<UniqueArrayStream> stream = [&]() -> Result<UniqueArrayStream> {
    if (IsPath(source)) {
      std::string path = PathOf(source);
      nb::gil_scoped_release release;
      return ipc::ReadPath(path, ReadOptionsOf(validation));
    }
    SharedBytes bytes = BytesOf(source);
    nb::gil_scoped_release release;
    return ipc::ReadStream(std::move(bytes), ReadOptionsOf(validation));
  }();
  return OpenStream(WrapHostStream(Unwrap(std::move(stream))));
}

/// ferry.ipc.FileReader.
struct PyFileReader {
  std::shared_ptr<ipc::FileReader> reader;
};

PyFileReader OpenFile(nb::handle source, ValidationLevel validation) {
  SharedBytes bytes;
  if (IsPath(source)) {
    std::string path = PathOf(source);
    Result<SharedBytes> mapped = [&] {
      nb::gil_scoped_release release;
      return SharedBytes::MapFile(path);
    }();
    bytes = Unwrap(std::move(mapped));
  } else if (IsReadable(source)) {
    // The file format's footer is at its end: a file object is read whole, once (a path is
    // mapped instead, without a copy).
    bytes = BytesOf(source.attr("read")());
  } else {
    bytes = BytesOf(source);
  }
  Result<ipc::FileReader> reader = [&] {
    nb::gil_scoped_release release;
    return ipc::FileReader::Open(std::move(bytes), ReadOptionsOf(validation));
  }();
  return PyFileReader{std::make_shared<ipc::FileReader>(Unwrap(std::move(reader)))};
}

/// A writable Python file object (anything with a write method: io.BytesIO, an open file, a
/// socket's makefile) as a writer's sink. Each piece goes to its write() as bytes, under the GIL:
/// one copy, as pyarrow's PythonFile makes; a short write (a raw file's) is continued with the
/// rest. What write() raises fails the writer, naming the exception. Owned by Write.
class PythonFileSink final : public ipc::Sink {
 public:
  explicit PythonFileSink(nb::handle file) : file_(nb::borrow(file)) {}
  Status Write(std::span<const ByteSpan> pieces) override {
    if (!nb::is_alive()) return Status::Cancelled("the Python interpreter has exited");
    nb::gil_scoped_acquire gil;
    for (const ByteSpan& piece : pieces) {
      int64_t done = 0;
      while (done < piece.size) {
        const int64_t left = piece.size - done;
        try {
          nb::bytes chunk(reinterpret_cast<const char*>(piece.data) + done,
                          static_cast<size_t>(left));
          nb::object taken = file_.attr("write")(chunk);
          // None (some file-likes return nothing): all of it.
          const int64_t n = taken.is_none() ? left : nb::cast<int64_t>(taken);
          if (n <= 0 || n > left) {
            return Status::IOError("the sink's write() took " + std::to_string(n) + " of " +
                                   std::to_string(left) + " bytes at byte " +
                                   std::to_string(position_));
          }
          done += n;
          position_ += n;
        } catch (nb::python_error& e) {
          return Status::IOError(
              RaisedBy("the sink's write()", e, " at byte " + std::to_string(position_)));
        } catch (const nb::cast_error&) {
          return Status::IOError("the sink's write() returned neither a byte count nor None");
        }
      }
    }
    return Status::OK();
  }
  int64_t position() const noexcept override { return position_; }

 private:
  nb::object file_;
  int64_t position_ = 0;
};

template <typename Writer>
nb::object Write(nb::handle data, nb::handle sink, const std::optional<std::string>& compression,
                 int32_t alignment) {
  PyArrayStream input = StreamFromObject(data, nb::none());
  ipc::WriteOptions options = WriteOptionsOf(compression, alignment);
  std::unique_ptr<ipc::Sink> owned;
  ipc::MemorySink* memory = nullptr;
  ipc::FileSink* file = nullptr;
  PythonFileSink* python_file = nullptr;
  if (sink.is_none()) {
    auto m = std::make_unique<ipc::MemorySink>();
    memory = m.get();
    owned = std::move(m);
  } else if (IsPath(sink)) {
    auto f = Unwrap(ipc::FileSink::Open(PathOf(sink)));
    file = f.get();
    owned = std::move(f);
  } else if (nb::hasattr(sink, "write")) {
    auto f = std::make_unique<PythonFileSink>(sink);
    python_file = f.get();
    owned = std::move(f);
  } else {
    Raise(PyExc_TypeError,
          "sink must be None (write to memory), a path, or a writable file object (with write())");
  }
  ArrowDeviceArrayStream* stream = input.Live("write");
  Status st = [&]() -> Status {
    nb::gil_scoped_release release;
    FERRY_ASSIGN_OR_RAISE(Writer writer,
                          Writer::Open(owned.get(), input.schema->schema.get(), options));
    for (;;) {
      UniqueDeviceArray batch;
      FERRY_RETURN_NOT_OK(StreamGetNext(stream, batch.get()).WithContext("input stream"));
      if (!batch.valid()) break;
      // Held by the writer until the next is written: a dictionary the batches share is read once.
      FERRY_RETURN_NOT_OK(writer.WriteHeldBatch(std::move(batch)));
    }
    FERRY_RETURN_NOT_OK(writer.Close());
    if (file != nullptr) FERRY_RETURN_NOT_OK(file->Close());
    return Status::OK();
  }();
  Check(st);
  if (memory != nullptr) return nb::cast(ViewOfBytes(memory->Finish()));
  if (python_file != nullptr) return nb::int_(python_file->position());
  return nb::int_(file->position());
}

}  // namespace

void InitIpc(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("ipc", "Arrow IPC streams and files.");
  m.def(
      "read_stream", &ReadStream, nb::arg("source"), nb::arg("validation") = ValidationLevel::kFull,
      "Read IPC data as an ArrayStream of record batches (struct arrays). `source` is a bytes-like "
      "object (read in place, kept alive by the arrays), a path (memory-mapped; the stream or "
      "the file format, told apart by the magic), or a readable file object (an open file, a "
      "socket's makefile: the stream format, read as the batches are taken, each read() under "
      "the GIL).");
  nb::class_<PyFileReader>(m, "FileReader", "Random access to the record batches of an IPC file.")
      .def(
          "__init__",
          [](PyFileReader* self, nb::handle source, ValidationLevel validation) {
            new (self) PyFileReader(OpenFile(source, validation));
          },
          nb::arg("source"), nb::arg("validation") = ValidationLevel::kFull,
          "Open a bytes-like object in place, a path through a read-only memory map, or a "
          "readable file object, read whole once (the footer is at the file's end).")
      .def_prop_ro("schema",
                   [](const PyFileReader& r) {
                     auto holder = std::make_shared<SchemaHolder>();
                     holder->schema = Unwrap(CopySchema(r.reader->schema()));
                     const ArrowSchema* raw = holder->schema.get();
                     return PySchema{std::move(holder), raw};
                   })
      .def_prop_ro("num_record_batches",
                   [](const PyFileReader& r) { return r.reader->num_record_batches(); })
      .def("__len__", [](const PyFileReader& r) { return r.reader->num_record_batches(); })
      .def(
          "read_record_batch",
          [](const PyFileReader& r, int64_t i) {
            Result<UniqueArray> batch = [&] {
              nb::gil_scoped_release release;
              return r.reader->ReadRecordBatch(i);
            }();
            UniqueArray array = Unwrap(std::move(batch));
            UniqueDeviceArray device;
            Check(DeviceArrayInit(*CpuDevice(), device.get(), array.get(), nullptr));
            // The batch keeps the file's bytes alive itself; the reader is kept for its schema.
            return MakeArray(Unwrap(CopySchema(r.reader->schema())), std::move(device), r.reader);
          },
          nb::arg("i"), "Decode record batch i as a struct array (IndexError when out of range).");
  m.def("write_stream", &Write<ipc::StreamWriter>, nb::arg("data"), nb::arg("sink") = nb::none(),
        nb::kw_only(), nb::arg("compression") = nb::none(), nb::arg("alignment") = 8,
        "Write the record batches of any stream or struct-array producer in the IPC stream format: "
        "to memory (returns a read-only MemoryView of the bytes), to a path, or to a writable "
        "file object such as io.BytesIO or an open file, whose write() gets the bytes (returns "
        "the size; the file is neither flushed nor closed).");
  m.def("write_file", &Write<ipc::FileWriter>, nb::arg("data"), nb::arg("sink") = nb::none(),
        nb::kw_only(), nb::arg("compression") = nb::none(), nb::arg("alignment") = 8,
        "As write_stream, in the IPC file format.");
}

}  // namespace ferry::python
