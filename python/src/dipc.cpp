// ferry.dipc: the dissociated-IPC server (named datasets served over shared memory or UCX) and
// client (a URI and a ticket give an ArrayStream), and the URIs that join them.
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "dipc_options.hpp"
#include "dipc_region.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/dipc/uri.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/transport/ucx.hpp"
#include "objects.hpp"

namespace ferry::python {
namespace {

dipc::BodyType BodyTypeOf(const std::string& name) { return Unwrap(dipc::ParseBodyType(name)); }

ipc::Compression CompressionOf(const std::optional<std::string>& name) {
  return name ? Unwrap(ipc::ParseCompression(*name)) : ipc::Compression::kNone;
}

/// A dataset's schema must be a struct (its children are the columns).
void CheckStruct(const ArrowSchema* schema, const char* what) {
  if (schema == nullptr || schema->format == nullptr || std::string(schema->format) != "+s") {
    Raise(PyExc_ValueError, std::string(what) +
                                ": a dataset's batches must be struct arrays (record "
                                "batches), not " +
                                Unwrap(SchemaToString(schema)));
  }
}

std::shared_ptr<dipc::Dataset> DatasetFromBatches(nb::handle items, nb::handle schema_obj) {
  std::vector<PyArray> arrays;
  for (nb::handle item : items) arrays.push_back(ArrayFrom(item, nb::none()));
  if (arrays.empty() && schema_obj.is_none()) {
    Raise(PyExc_ValueError, "Server.add: an empty list of batches needs a schema");
  }
  UniqueSchema schema = schema_obj.is_none() ? Unwrap(CopySchema(arrays[0].schema))
                                             : Unwrap(CopySchema(SchemaFrom(schema_obj).schema));
  CheckStruct(schema.get(), "Server.add");
  const std::string want = Unwrap(SchemaToString(schema.get()));
  std::vector<UniqueDeviceArray> batches;
  for (size_t i = 0; i < arrays.size(); ++i) {
    const std::string have = Unwrap(SchemaToString(arrays[i].schema));
    if (have != want) {
      Raise(PyExc_ValueError, "Server.add: batch " + std::to_string(i) + " is " + have +
                                  ", the dataset's schema " + want);
    }
    batches.push_back(ExportDeviceArray(arrays[i]));
  }
  return Unwrap(dipc::Dataset::FromBatches(std::move(schema), std::move(batches)));
}

/// Each client calls `fn()` (under the GIL, on the session's thread) for a fresh stream producer.
std::shared_ptr<dipc::Dataset> DatasetFromFactory(nb::handle fn) {
  std::shared_ptr<const void> owner = PyOwner(fn);
  return dipc::Dataset::FromStreamFactory([owner]() -> Result<UniqueDeviceArrayStream> {
    if (!nb::is_alive()) return Status::Cancelled("the Python interpreter has exited");
    nb::gil_scoped_acquire gil;
    try {
      nb::handle callable(static_cast<PyObject*>(const_cast<void*>(owner.get())));
      nb::object produced = callable();
      PyArrayStream stream = StreamFromObject(produced, nb::none());
      CheckStruct(stream.schema->schema.get(), "the dataset factory");
      return std::move(stream.stream);
    } catch (nb::python_error& e) {
      return Status::Invalid(RaisedBy("the dataset factory", e));
    } catch (const std::exception& e) {
      return Status::Invalid(std::string("the dataset factory failed: ") + e.what());
    }
  });
}

/// Whether DatasetFrom serves `data` as a factory (a callable that is no Arrow producer).
bool IsFactory(nb::handle data) {
  return !PyList_Check(data.ptr()) && !PyTuple_Check(data.ptr()) &&
         !nb::hasattr(data, "__arrow_c_device_array__") &&
         !nb::hasattr(data, "__arrow_c_array__") &&
         !nb::hasattr(data, "__arrow_c_device_stream__") &&
         !nb::hasattr(data, "__arrow_c_stream__") && PyCallable_Check(data.ptr());
}

std::shared_ptr<dipc::Dataset> DatasetFrom(nb::handle data, nb::handle schema) {
  if (PyUnicode_Check(data.ptr()) || PyBytes_Check(data.ptr()) || nb::hasattr(data, "__fspath__")) {
    Raise(PyExc_TypeError, "Server.add: data is a path; serve files with Server.add_path");
  }
  if (PyList_Check(data.ptr()) || PyTuple_Check(data.ptr()))
    return DatasetFromBatches(data, schema);
  if (!schema.is_none()) {
    Raise(PyExc_ValueError, "Server.add: schema is for a list of batches only");
  }
  // An array producer first: a batch can be served to every client, a stream only once.
  if (nb::hasattr(data, "__arrow_c_device_array__") || nb::hasattr(data, "__arrow_c_array__")) {
    return DatasetFromBatches(nb::make_tuple(data), nb::none());
  }
  if (nb::hasattr(data, "__arrow_c_device_stream__") || nb::hasattr(data, "__arrow_c_stream__")) {
    PyArrayStream stream = StreamFromObject(data, nb::none());
    CheckStruct(stream.schema->schema.get(), "Server.add");
    return dipc::Dataset::FromStream(std::move(stream.stream));
  }
  if (IsFactory(data)) return DatasetFromFactory(data);
  Raise(PyExc_TypeError, std::string("Server.add: ") + nb::type_name(data.type()).c_str() +
                             " is no list of batches, Arrow array or stream producer, or callable");
}

/// ferry.dipc.Server: a running server until stop(); then its last URI, stats and error remain.
struct PyServer {
  std::unique_ptr<dipc::Server> server;
  /// The callables the server's datasets hold (one strong reference each, through PyOwner),
  /// by ticket, for the garbage collector: a callable that refers back to its server makes a
  /// cycle through C++ that only tp_traverse can show.
  std::map<std::string, PyObject*> callables;
  dipc::Uri final_uri;
  dipc::ServerStats final_stats;
  std::string final_error;

  PyServer() = default;
  PyServer(PyServer&&) = default;
  PyServer& operator=(PyServer&&) = default;
  ~PyServer() { Stop(); }

  dipc::Server& Live(const char* what) {
    if (!server) Raise(PyExc_ValueError, std::string("Server.") + what + ": the server is stopped");
    return *server;
  }

  /// The URI of dataset `name` ("" for the server's own); the last one once stopped.
  std::string Uri(const std::string& name) const {
    return (server ? server->uri(name) : final_uri).ToString();
  }
  /// The split shape's metadata URI of dataset `name`; "" once stopped.
  std::string MetadataUri(const std::string& name) const {
    return server ? server->metadata_uri(name).ToString() : std::string();
  }
  /// The split shape's data URI of dataset `name`; "" once stopped.
  std::string DataUri(const std::string& name) const {
    return server ? server->data_uri(name).ToString() : std::string();
  }

  /// Stop the server and drop it (and the datasets it holds) with the GIL released: sessions
  /// may be waiting for the GIL in a Python producer.
  void Stop() {
    if (!server) return;
    callables.clear();  // the references themselves are dropped with the datasets, below
    std::unique_ptr<dipc::Server> s = std::move(server);
    auto finish = [&] {
      s->Stop();
      final_uri = s->uri();
      final_stats = s->stats();
      final_error = s->last_error();
      s.reset();
    };
    if (nb::is_alive() && PyGILState_Check()) {
      nb::gil_scoped_release release;
      finish();
    } else {
      finish();
    }
  }
};

PyServer StartServer(const std::string& transport, const std::string& listen,
                     const std::string& body_type, int64_t region_bytes, double timeout,
                     int max_clients, const std::optional<std::string>& compression,
                     int32_t alignment, uint64_t want_data_tag, uint64_t free_data_tag) {
  dipc::ServerOptions options;
  options.transport = transport;
  options.listen = listen;
  options.body_type = BodyTypeOf(body_type);
  if (region_bytes <= 0) Raise(PyExc_ValueError, "region_bytes must be positive");
  options.region_bytes = region_bytes;
  options.timeout = Millis(timeout, "timeout");
  if (max_clients <= 0) Raise(PyExc_ValueError, "max_clients must be positive");
  options.max_clients = max_clients;
  options.write.compression = CompressionOf(compression);
  options.write.alignment = alignment;
  options.want_data_tag = want_data_tag;
  options.free_data_tag = free_data_tag;
  Result<std::unique_ptr<dipc::Server>> started = [&] {
    nb::gil_scoped_release release;  // binds a socket, maps the region, starts threads
    return dipc::Server::Start(std::move(options));
  }();
  PyServer out;
  out.server = Unwrap(std::move(started));
  return out;
}

PyArrayStream ConnectDipcStream(
    const std::variant<dipc::Uri, std::string>& uri, const std::string& ticket, Device* device,
    ValidationLevel validation, double timeout, uint32_t reorder_window,
    const std::optional<std::variant<dipc::Uri, std::string>>& data_uri, int64_t max_metadata_bytes,
    int64_t max_body_bytes, const std::optional<std::vector<int32_t>>& columns, bool buffer_lists,
    const std::optional<std::string>& traceparent, const std::optional<std::string>& tracestate,
    const std::optional<int64_t>& window, int64_t spin,
    const std::optional<double>& connect_timeout, const PyConnectionPool* pool) {
  dipc::Uri parsed = UriOf(uri);
  std::optional<dipc::Uri> data;
  if (data_uri) data = UriOf(*data_uri);
  dipc::ClientOptions options = DipcClientOptions(
      {device, validation, timeout, reorder_window, max_metadata_bytes, max_body_bytes, columns,
       buffer_lists, traceparent, tracestate, window, spin, connect_timeout, pool});
  Result<UniqueDeviceArrayStream> stream = [&] {
    nb::gil_scoped_release release;  // connects, sends the ticket, waits for the schema
    if (data) return dipc::ConnectStream(parsed, *data, ticket, options);
    return dipc::ConnectStream(parsed, ticket, options);
  }();
  return OpenStream(Unwrap(std::move(stream)));
}

int ServerTraverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  for (const auto& [name, callable] : nb::inst_ptr<PyServer>(self)->callables) Py_VISIT(callable);
  return 0;
}

int ServerClear(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<PyServer>(self)->Stop();
  return 0;
}

PyType_Slot kServerSlots[] = {{Py_tp_traverse, reinterpret_cast<void*>(ServerTraverse)},
                              {Py_tp_clear, reinterpret_cast<void*>(ServerClear)},
                              {0, nullptr}};

}  // namespace

void InitDipc(nb::module_& parent) {
  nb::module_ m = parent.def_submodule(
      "dipc",
      "Dissociated IPC: a server of named datasets and its clients, over shared memory or UCX.");

  m.def("ucx_available", &transport::UcxAvailable, "Whether this build has the UCX transport.");
  m.def(
      "loaded_ucx",
      [] {
        const transport::UcxLibrary ucx = transport::LoadedUcx();
        nb::dict d;
        d["available"] = ucx.available;
        d["built_against"] =
            ucx.available ? nb::object(nb::str(ucx.built_against.c_str())) : nb::none();
        d["loaded"] = ucx.available ? nb::object(nb::str(ucx.loaded.c_str())) : nb::none();
        d["path"] = ucx.available ? nb::object(nb::str(ucx.path.c_str())) : nb::none();
        return d;
      },
      "The UCX this process loaded, as `ferry devices --json` reports it: available, "
      "built_against (the UCP API version of ferry's build), loaded (the libucp version) and path "
      "(that libucp's file). Both ends of a UCX connection need wire-compatible UCX builds.");

  nb::class_<dipc::Uri>(m, "Uri",
                        "A dissociated-IPC URI: scheme://authority/path?want_data=N&free_data=N"
                        "&remote_handle=BASE64; the scheme names the transport.")
      .def(nb::init<>())
      .def_static(
          "parse", [](const std::string& text) { return Unwrap(dipc::Uri::Parse(text)); },
          nb::arg("text"), "Parse; ValueError naming the part at fault.")
      .def_rw("scheme", &dipc::Uri::scheme)
      .def_rw("authority", &dipc::Uri::authority, "host[:port], or empty.")
      .def_rw("path", &dipc::Uri::path, "From the first '/' after the authority, or empty.")
      .def_rw("want_data", &dipc::Uri::want_data, "The tag the ticket is sent with.")
      .def_rw("free_data", &dipc::Uri::free_data, "The tag of the client's frees, or None.")
      .def_prop_rw(
          "remote_handle",
          [](const dipc::Uri& u) -> std::optional<nb::bytes> {
            if (!u.remote_handle) return std::nullopt;
            return nb::bytes(u.remote_handle->data(), u.remote_handle->size());
          },
          [](dipc::Uri& u, std::optional<nb::bytes> handle) {
            if (handle) {
              u.remote_handle = std::string(handle->c_str(), handle->size());
            } else {
              u.remote_handle.reset();
            }
          },
          "The decoded remote handle (a packed UCX rkey, ...), or None.")
      .def_rw("other", &dipc::Uri::other, "Unknown query parameters, in order.")
      .def("__str__", &dipc::Uri::ToString)
      .def("__repr__",
           [](const dipc::Uri& u) {
             return std::string("ferry.dipc.Uri.parse(") +
                    nb::repr(nb::str(u.ToString().c_str())).c_str() + ")";
           })
      .def("__eq__", [](const dipc::Uri& a, nb::handle b) {
        return nb::isinstance<dipc::Uri>(b) && a == nb::cast<const dipc::Uri&>(b);
      });

  InitDipcStats(m);
  InitDipcPool(m);

  InitDipcRegion(m);

  nb::class_<PyServer>(
      m, "Server", nb::type_slots(kServerSlots),
      "A server of named datasets: a thread accepts clients and each client gets a "
      "session thread. Serving never holds the GIL except to call a Python producer.")
      .def_static(
          "start", &StartServer, nb::arg("transport") = "shm", nb::arg("listen") = "",
          nb::kw_only(), nb::arg("body_type") = "list",
          nb::arg("region_bytes") = int64_t{256} << 20, nb::arg("timeout") = 30.0,
          nb::arg("max_clients") = 256, nb::arg("compression") = nb::none(),
          nb::arg("alignment") = 8, nb::arg("want_data_tag") = dipc::kDefaultWantDataTag,
          nb::arg("free_data_tag") = dipc::kDefaultFreeDataTag,
          "Start serving. transport: 'shm' or 'ucx'; listen: a socket path, '@name' (an "
          "abstract socket) or host:port, empty for a fresh one; body_type: 'list' (clients "
          "read bodies in place from the shared region) or 'packed' (each body one message); "
          "region_bytes: the most body bytes in flight, all clients together; timeout: seconds "
          "the server waits on a client (its request, room for its bodies, its frees, each "
          "send); max_clients: the most clients served at once; compression: None, 'lz4' or "
          "'zstd'.")
      .def(
          "add",
          [](PyServer& self, const std::string& name, nb::handle data, nb::handle schema) {
            dipc::Server& server = self.Live("add");
            std::shared_ptr<dipc::Dataset> dataset = DatasetFrom(data, schema);
            if (IsFactory(data)) {
              self.callables[name] = data.ptr();
            } else {
              self.callables.erase(name);
            }
            nb::gil_scoped_release
                release;  // may drop a replaced dataset, which may wait on the GIL
            server.Add(name, std::move(dataset));
          },
          nb::arg("name"), nb::arg("data"), nb::arg("schema") = nb::none(),
          "Serve `data` under the ticket `name` (replacing an earlier dataset of that name): a "
          "list of "
          "record batches (any array producers; `schema` for an empty list) or one batch, served "
          "to "
          "every client without a copy; a stream producer (a pyarrow Table or RecordBatchReader, "
          "ferry.ArrayStream, ...), read once by the first client; or a callable returning a "
          "stream "
          "producer, called for each client.")
      .def(
          "region_allocator",
          [](PyServer& self) {
            return RegionAllocatorObject(self.Live("region_allocator").region_allocator());
          },
          nb::sig("def region_allocator(self) -> RegionAllocator | None"),
          "Memory of the shared region (a RegionAllocator), for a producer that builds its "
          "batches where clients read them: numpy or pyarrow buffers on its RegionBuffers make "
          "batches that are lent to type-1 clients in place, not copied. None where bodies are "
          "packed.")
      .def(
          "keep",
          [](PyServer& self, const std::string& name, nb::handle data, nb::handle schema) {
            dipc::Server& server = self.Live("keep");
            std::shared_ptr<dipc::Dataset> dataset = DatasetFrom(data, schema);
            self.callables.erase(name);
            Status st = [&] {
              nb::gil_scoped_release release;  // reads the dataset (a factory takes the GIL)
              return server.Keep(name, std::move(dataset));
            }();
            Check(st);
          },
          nb::arg("name"), nb::arg("data"), nb::arg("schema") = nb::none(),
          "Serve `data` (as for add) under the ticket `name` from a region of its own: its "
          "bodies are written there once, now, and every client gets them without a copy: lent "
          "(body_type 'list') or sent whole from there ('packed'); memory: the dataset's body "
          "bytes, until replaced or stopped.")
      .def(
          "add_path",
          [](PyServer& self, const std::string& name, const std::filesystem::path& path) {
            dipc::Server& server = self.Live("add_path");
            const std::string file = path.string();
            Result<std::shared_ptr<dipc::Dataset>> dataset = [&] {
              nb::gil_scoped_release release;  // maps the file and decodes its schema
              return dipc::Dataset::FromPath(file);
            }();
            std::shared_ptr<dipc::Dataset> opened = Unwrap(std::move(dataset));
            self.callables.erase(name);
            nb::gil_scoped_release release;
            server.Add(name, std::move(opened));
          },
          nb::arg("name"), nb::arg("path"),
          "Serve an IPC stream or file (told apart by its magic) under the ticket `name`: mapped "
          "once, "
          "decoded zero-copy for each client; a file that is not IPC fails here.")
      .def_prop_ro(
          "uri", [](PyServer& self) { return self.Uri(""); },
          "The URI (str) clients read the server's datasets with, both streams on one "
          "connection (the last one once stopped). A kept dataset has its own: uri_of(name).")
      .def("uri_of", &PyServer::Uri, nb::arg("name"),
           "The URI (str) clients read dataset `name` with: the server's uri, or for a kept "
           "dataset its own, carrying its memory's remote_handle.")
      .def_prop_ro(
          "metadata_uri", [](PyServer& self) { return self.MetadataUri(""); },
          "The split shape's metadata URI (str): connect(metadata_uri, ticket, "
          "data_uri=data_uri). Empty once stopped.")
      .def("metadata_uri_of", &PyServer::MetadataUri, nb::arg("name"),
           "The split shape's metadata URI (str) for dataset `name`. Empty once stopped.")
      .def_prop_ro(
          "data_uri", [](PyServer& self) { return self.DataUri(""); },
          "The split shape's data URI (str): bodies and free_data. Empty once stopped.")
      .def("data_uri_of", &PyServer::DataUri, nb::arg("name"),
           "The split shape's data URI (str) for dataset `name`. Empty once stopped.")
      .def_prop_ro(
          "stats",
          [](PyServer& self) {
            if (!self.server) return self.final_stats;
            nb::gil_scoped_release release;
            return self.server->stats();
          },
          "The running totals (the last ones once stopped).")
      .def_prop_ro(
          "last_error",
          [](PyServer& self) {
            if (!self.server) return self.final_error;
            nb::gil_scoped_release release;
            return self.server->last_error();
          },
          "The last session error, or ''.")
      .def_prop_ro("running", [](const PyServer& self) { return self.server != nullptr; })
      .def("stop", &PyServer::Stop,
           "Close the listener and every session, and drop the datasets (idempotent).")
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](PyServer& self, nb::args) { self.Stop(); })
      .def("__repr__", [](PyServer& self) {
        return "<ferry.dipc.Server " +
               (self.server ? self.server->uri() : self.final_uri).ToString() +
               (self.server ? "" : " (stopped)") + ">";
      });

  m.def("connect", &ConnectDipcStream, nb::arg("uri"), nb::arg("ticket"),
        nb::arg("device").none() = nb::none(), nb::arg("validation") = ValidationLevel::kFull,
        nb::arg("timeout") = 30.0, nb::arg("reorder_window") = 64,
        nb::arg("data_uri").none() = nb::none(), nb::arg("max_metadata_bytes") = int64_t{64} << 20,
        nb::arg("max_body_bytes") = int64_t{4} << 30, nb::arg("columns").none() = nb::none(),
        nb::arg("buffer_lists") = false, nb::arg("traceparent").none() = nb::none(),
        nb::arg("tracestate").none() = nb::none(), nb::arg("window").none() = nb::none(),
        nb::arg("spin") = dipc::ClientOptions{}.spin.count(),
        nb::arg("connect_timeout").none() = nb::none(), nb::arg("pool").none() = nb::none(),
        "Connect to a server and read the dataset named `ticket` as an ArrayStream of record "
        "batches. "
        "The schema arrives before this returns, so a refused ticket or a dead server raises here "
        "with the server's message. device: where batches land (None: the CPU, read in place over "
        "shared memory; another device gets one copy of each batch); validation: checks on what "
        "arrives; timeout: seconds the server may stay silent; data_uri: the server's "
        "data_uri(name), with `uri` its metadata_uri(name), to take metadata and bodies from "
        "separate servers; max_metadata_bytes, max_body_bytes: the largest message of each "
        "kind taken from the server; columns: the field indices to read (None: all), whose "
        "buffers alone are fetched from a type-1 body; buffer_lists: ask a ferry server to lend "
        "buffer lists where it would send packed bodies because UCX would emulate this client's "
        "reads (over TCP, or on one host before UCX 1.16; columns implies it); traceparent, "
        "tracestate: a W3C Trace Context sent to a ferry server in its hello, so that the "
        "session's log records carry its trace id (None: the server uses the trace its ticket was "
        "issued with); window: pace a ferry server (shm://, or ucx:// with ferry=1), which then "
        "sends at most this many batches beyond those read (None: over shm:// it sends ahead as "
        "far as its shared region allows, over ucx:// with ferry=1 up to 256 batches); spin: "
        "microseconds a read watches for the next message on the CPU before it sleeps (0: it "
        "sleeps at once); connect_timeout: seconds connecting may take (None: timeout), and on a "
        "connection from `pool` the wait for the schema; pool: a ConnectionPool to take a kept "
        "connection from and give this one back to at the stream's end.");
}

}  // namespace ferry::python
