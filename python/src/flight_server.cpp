// ferry.flight.Server: a Flight server in this process (gRPC with the shared-memory and UCX
// planes), serving record batches, streams and IPC files as flights, partitioned or not, and
// listing its federation peers' flights with its own.
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ferry/flight/server.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/format/schema_view.hpp"
#include "objects.hpp"

namespace ferry::python {
namespace {

/// The batches of one flight or partition, with their schema (a struct).
struct Batches {
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> arrays;
};

/// `fn()`'s status, computed with the GIL released (raising needs it back, so callers Check after).
template <typename Fn>
Status Released(Fn&& fn) {
  nb::gil_scoped_release release;
  return fn();
}

bool IsSequence(nb::handle data) { return PyList_Check(data.ptr()) || PyTuple_Check(data.ptr()); }

/// `data` as batches: a list of array producers, one array producer, or a stream producer (read
/// to its end here). Nothing is copied: each batch keeps its producer's memory alive.
Batches BatchesFrom(nb::handle data, const std::string& what) {
  Batches out;
  auto add = [&](const PyArray& array, size_t i) {
    const std::string have = Unwrap(SchemaToString(array.schema));
    if (!out.schema) {
      if (have.rfind("struct<", 0) != 0) {
        Raise(PyExc_ValueError, what +
                                    ": a flight's batches must be record batches (struct "
                                    "arrays), not " +
                                    have);
      }
      out.schema = Unwrap(CopySchema(array.schema));
    } else if (!Unwrap(SchemaEquals(array.schema, out.schema.get()))) {
      Raise(PyExc_ValueError, what + ": batch " + std::to_string(i) + " is " + have +
                                  ", the first batch's schema " +
                                  Unwrap(SchemaToString(out.schema.get())));
    }
    out.arrays.push_back(ExportDeviceArray(array));
  };
  if (IsSequence(data)) {
    size_t i = 0;
    for (nb::handle item : data) add(ArrayFrom(item, nb::none()), i++);
    if (!out.schema) Raise(PyExc_ValueError, what + ": an empty list of batches has no schema");
    return out;
  }
  if (nb::hasattr(data, "__arrow_c_device_array__") || nb::hasattr(data, "__arrow_c_array__")) {
    add(ArrayFrom(data, nb::none()), 0);
    return out;
  }
  if (nb::hasattr(data, "__arrow_c_device_stream__") || nb::hasattr(data, "__arrow_c_stream__")) {
    PyArrayStream stream = StreamFromObject(data, nb::none());
    out.schema = Unwrap(CopySchema(stream.schema->schema.get()));
    if (std::string(out.schema->format) != "+s") {
      Raise(PyExc_ValueError, what + ": a flight's stream must be of record batches, not " +
                                  Unwrap(SchemaToString(out.schema.get())));
    }
    while (std::optional<PyArray> next = stream.ReadNext()) {
      out.arrays.push_back(ExportDeviceArray(*next));
    }
    return out;
  }
  Raise(PyExc_TypeError, what + ": " + nb::type_name(data.type()).c_str() +
                             " is no list of batches, Arrow array or stream producer");
}

/// ferry.flight.Server: a running server until stop().
struct PyFlightServer {
  std::unique_ptr<flight::Server> server;
  std::string final_uri;

  ~PyFlightServer() { Stop(); }

  flight::Server& Live(const char* what) {
    if (!server) Raise(PyExc_ValueError, std::string("Server.") + what + ": the server is stopped");
    return *server;
  }

  void Stop() {
    if (!server) return;
    std::unique_ptr<flight::Server> s = std::move(server);
    final_uri = s->uri();
    // The batches it drops may belong to Python producers whose release takes the GIL.
    if (nb::is_alive() && PyGILState_Check()) {
      nb::gil_scoped_release release;
      s->Stop();
      s.reset();
    } else {
      s->Stop();
      s.reset();
    }
  }
};

std::chrono::milliseconds TimeoutMillis(double seconds, const char* what) {
  if (!std::isfinite(seconds) || seconds <= 0) {
    Raise(PyExc_ValueError, std::string(what) + " must be a positive number of seconds");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000)));
}

std::unique_ptr<PyFlightServer> StartFlightServer(
    const std::string& listen, std::optional<std::string> token,
    std::optional<std::string> tls_cert, std::optional<std::string> tls_key,
    std::vector<std::string> planes, bool keep, std::vector<std::string> peers, double peer_timeout,
    bool allow_partial, std::optional<std::string> peer_tls_roots, int64_t max_message_bytes) {
  flight::ServerOptions options;
  options.listen = listen;
  options.token = token.value_or("");
  options.tls_cert = tls_cert.value_or("");
  options.tls_key = tls_key.value_or("");
  options.planes = std::move(planes);
  options.keep = keep;
  options.peers = std::move(peers);
  options.peer_timeout = TimeoutMillis(peer_timeout, "peer_timeout");
  options.allow_partial = allow_partial;
  options.peer_tls_roots = peer_tls_roots.value_or("");
  options.max_message_body = max_message_bytes;
  Result<std::unique_ptr<flight::Server>> started = [&] {
    nb::gil_scoped_release release;
    return flight::Server::Start(std::move(options));
  }();
  auto out = std::make_unique<PyFlightServer>();
  out->server = Unwrap(std::move(started));
  return out;
}

nb::dict StatsDict(const flight::ServerStats& s) {
  nb::dict d;
  d["calls"] = s.calls;
  d["do_gets"] = s.do_gets;
  d["do_puts"] = s.do_puts;
  d["bytes_sent"] = s.bytes_sent;
  d["bytes_received"] = s.bytes_received;
  d["unauthenticated"] = s.unauthenticated;
  d["tickets_refused"] = s.tickets_refused;
  d["uploads_failed"] = s.uploads_failed;
  return d;
}

using Paths = std::variant<std::filesystem::path, std::vector<std::filesystem::path>>;

}  // namespace

void InitFlightServer(nb::module_& m) {
  nb::class_<PyFlightServer>(
      m, "Server",
      "A Flight server in this process: gRPC and the shared-memory and UCX planes, which its "
      "FlightInfos list as locations. Serving never holds the GIL; its batches keep their "
      "producers' memory (no copy) until dropped or stopped.")
      .def_static("start", &StartFlightServer, nb::arg("listen") = "127.0.0.1:0", nb::kw_only(),
                  nb::arg("token") = nb::none(), nb::arg("tls_cert") = nb::none(),
                  nb::arg("tls_key") = nb::none(),
                  nb::arg("planes") = std::vector<std::string>{"shm", "ucx"},
                  nb::arg("keep") = false, nb::arg("peers") = std::vector<std::string>{},
                  nb::arg("peer_timeout") = 2.0, nb::arg("allow_partial") = false,
                  nb::arg("peer_tls_roots") = nb::none(),
                  nb::arg("max_message_bytes") = int64_t{1} << 30,
                  "Start serving on `listen` (HOST:PORT; port 0: a free one). `token`: the bearer "
                  "token every call must carry; `tls_cert`/`tls_key`: PEM text for grpc+tls; "
                  "`planes`: the fast planes beside gRPC; `keep`: each flight written once into "
                  "each plane's own memory. Federation: `peers` (grpc:// or grpc+tls:// URIs) "
                  "whose flights this server lists with its own, each given `peer_timeout` "
                  "seconds to answer; with `allow_partial` a silent peer is left out and named "
                  "in the FlightInfo's app_metadata instead of failing the call; "
                  "`peer_tls_roots`: PEM certificates for grpc+tls peers; `max_message_bytes`: "
                  "the largest body DoGet sends in one message (1 to 1 GiB), a larger batch "
                  "going as zero-copy slices.")
      .def(
          "add",
          [](PyFlightServer& self, const std::string& name, nb::handle data, bool partitioned) {
            flight::Server& server = self.Live("add");
            const std::string what = "Server.add(\"" + name + "\")";
            if (!partitioned) {
              Batches b = BatchesFrom(data, what);
              Check(Released(
                  [&] { return server.Add(name, std::move(b.schema), std::move(b.arrays)); }));
              return;
            }
            if (!IsSequence(data)) {
              Raise(PyExc_TypeError, what + ": partitioned=True takes a list of partitions");
            }
            UniqueSchema schema;
            std::vector<std::vector<UniqueDeviceArray>> partitions;
            size_t i = 0;
            for (nb::handle part : data) {
              Batches b = BatchesFrom(part, what + " partition " + std::to_string(i));
              if (!schema) {
                schema = std::move(b.schema);
              } else if (!Unwrap(SchemaEquals(b.schema.get(), schema.get()))) {
                Raise(PyExc_ValueError, what + ": partition " + std::to_string(i) + " is " +
                                            Unwrap(SchemaToString(b.schema.get())) +
                                            ", partition 0's schema " +
                                            Unwrap(SchemaToString(schema.get())));
              }
              partitions.push_back(std::move(b.arrays));
              ++i;
            }
            if (!schema) Raise(PyExc_ValueError, what + ": no partitions");
            Check(Released([&] {
              return server.AddPartitioned(name, std::move(schema), std::move(partitions));
            }));
          },
          nb::arg("name"), nb::arg("data"), nb::kw_only(), nb::arg("partitioned") = false,
          "Serve `data` as flight `name` (FileExistsError if it is served): a list "
          "of record batches (any array producers), one batch, or a stream producer (a pyarrow "
          "Table or RecordBatchReader, ...; read to its end now). With partitioned=True, "
          "`data` is a list of partitions, each one of those, and the flight has one endpoint "
          "per partition in this order. No batch is copied.")
      .def(
          "add_path",
          [](PyFlightServer& self, const std::string& name, const Paths& paths,
             int64_t partition_bytes) {
            flight::Server& server = self.Live("add_path");
            std::vector<std::string> files;
            if (const auto* one = std::get_if<std::filesystem::path>(&paths)) {
              files.push_back(one->string());
            } else {
              for (const auto& p : std::get<std::vector<std::filesystem::path>>(paths)) {
                files.push_back(p.string());
              }
            }
            if (partition_bytes < 0) Raise(PyExc_ValueError, "partition_bytes is negative");
            const bool one = std::holds_alternative<std::filesystem::path>(paths);
            Check(Released([&] {  // maps and decodes the files
              return one && partition_bytes == 0 ? server.AddPath(name, files[0])
                                                 : server.AddPaths(name, files, partition_bytes);
            }));
          },
          nb::arg("name"), nb::arg("paths"), nb::kw_only(), nb::arg("partition_bytes") = 0,
          "Serve IPC streams or files as flight `name`: one path is one endpoint, a list one "
          "endpoint per file in this order, each file cut further into endpoints of whole "
          "batches of at most `partition_bytes` body bytes when it is positive. The files are "
          "mapped and lent, not copied.")
      .def(
          "append_partition",
          [](PyFlightServer& self, const std::string& name, nb::handle data) {
            flight::Server& server = self.Live("append_partition");
            Batches b = BatchesFrom(data, "Server.append_partition(\"" + name + "\")");
            Result<size_t> index = [&] {
              nb::gil_scoped_release release;
              return server.AppendPartition(name, std::move(b.schema), std::move(b.arrays));
            }();
            return Unwrap(std::move(index));
          },
          nb::arg("name"), nb::arg("data"),
          "Serve `data` (as for add) as the next endpoint of flight `name`, made if it does not "
          "exist, so that many writers build one flight; the new endpoint's index. ValueError "
          "if its schema differs from the flight's.")
      .def(
          "drop",
          [](PyFlightServer& self, const std::string& name) {
            flight::Server& server = self.Live("drop");
            Check(Released([&] { return server.Drop(name); }));
          },
          nb::arg("name"),
          "Stop serving flight `name` on every plane and revoke its tickets (FileNotFoundError "
          "if unknown); a client already reading it reads to the end.")
      .def_prop_ro(
          "names", [](PyFlightServer& self) { return self.Live("names").names(); },
          "The flights served, sorted.")
      .def_prop_ro(
          "uri",
          [](PyFlightServer& self) { return self.server ? self.server->uri() : self.final_uri; },
          "grpc://HOST:PORT (or grpc+tls://) with the port bound; the last one once stopped.")
      .def_prop_ro(
          "port", [](PyFlightServer& self) { return self.Live("port").port(); },
          "The gRPC port bound.")
      .def(
          "stats", [](PyFlightServer& self) { return StatsDict(self.Live("stats").stats()); },
          "The server's running totals: calls, do_gets, do_puts, bytes_sent, bytes_received, "
          "unauthenticated, tickets_refused, uploads_failed (each plane's own: "
          "do_action('stats') from a client).")
      .def("stop", &PyFlightServer::Stop,
           "End every call, close the planes and drop the flights (idempotent).")
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](PyFlightServer& self, nb::args) { self.Stop(); })
      .def("__repr__", [](PyFlightServer& self) {
        return std::string("ferry.flight.Server(") +
               (self.server ? self.server->uri() : "stopped") + ")";
      });
}

}  // namespace ferry::python
