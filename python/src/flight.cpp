// ferry.flight: an Arrow Flight client. connect() gives a Client that lists and describes
// flights, reads them (following a ferry server's locations: shared memory, UCX, then DoGet) as
// ArrayStreams, uploads anything with __arrow_c_stream__, and runs actions.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "capsule.hpp"
#include "dipc_options.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/flight/info.hpp"
#include "objects.hpp"

namespace ferry::python {
namespace {

/// `columns` as the decoder takes them: indices into `schema`'s columns, increasing, each once.
/// Names need `schema` (NULL: the caller has none, so names are refused).
std::vector<int32_t> ColumnIndices(const std::vector<Column>& columns, const ArrowSchema* schema) {
  const std::vector<std::string> names = ColumnNames(columns, schema == nullptr);
  if (schema == nullptr) return IndicesOf(names);
  Result<std::vector<int32_t>> found = ferry::ColumnIndices(schema, names);
  if (!found.ok() && found.status().code() == StatusCode::kInvalidArgument) {
    Raise(PyExc_KeyError, found.status().message());
  }
  return Unwrap(std::move(found));
}

/// ferry.flight.Client: one connection (a gRPC channel) to a Flight server.
struct PyFlightClient {
  std::unique_ptr<flight::Client> client;
  std::string last_location;
};

PyFlightClient ConnectFlightClient(const std::string& uri, const std::optional<std::string>& token,
                                   const std::optional<std::string>& tls_roots,
                                   const std::optional<std::string>& tls_cert,
                                   const std::optional<std::string>& tls_key,
                                   const std::optional<std::string>& tls_server_name,
                                   double timeout, const std::optional<std::string>& traceparent,
                                   const std::optional<std::string>& tracestate,
                                   bool keep_connections) {
  flight::ClientOptions options = FlightClientOptions(
      token, tls_roots, tls_cert, tls_key, tls_server_name, timeout, traceparent, tracestate);
  options.keep_connections = keep_connections;
  PyFlightClient out;
  out.client = Unwrap(flight::Client::Connect(uri, std::move(options)));
  return out;
}

PySchema SchemaObject(UniqueSchema schema) {
  auto holder = std::make_shared<SchemaHolder>();
  holder->schema = std::move(schema);
  const ArrowSchema* raw = holder->schema.get();
  return PySchema{std::move(holder), raw};
}

std::string InfoRepr(const flight::FlightInfo& f) {
  std::string path;
  for (const std::string& p : f.path) path += (path.empty() ? "" : ", ") + p;
  return "FlightInfo(path=[" + path + "], total_records=" + std::to_string(f.total_records) +
         ", total_bytes=" + std::to_string(f.total_bytes) +
         ", endpoints=" + std::to_string(f.endpoints.size()) + ")";
}

}  // namespace

void InitFlight(nb::module_& parent) {
  nb::module_ m = parent.def_submodule(
      "flight",
      "Arrow Flight: a client of any Flight server, which follows a ferry server's fast "
      "locations (shared memory, UCX) before DoGet, and a server in this process.");

  nb::class_<flight::Endpoint>(m, "Endpoint",
                               "One stream of a flight: its ticket, the URIs that redeem it "
                               "(fastest first on a ferry server), its expiry and its expected "
                               "size.")
      .def(
          "__init__",
          [](flight::Endpoint* self, const nb::bytes& ticket,
             const std::vector<std::string>& locations, int64_t expected_bytes) {
            if (expected_bytes < -1) {
              Raise(PyExc_ValueError, "expected_bytes must be 0 or more (-1: unknown)");
            }
            new (self) flight::Endpoint{
                std::string(ticket.c_str(), ticket.size()), locations, {}, expected_bytes};
          },
          nb::arg("ticket"), nb::arg("locations"), nb::arg("expected_bytes") = -1,
          "An endpoint from its ticket, locations and expected size (as another process got "
          "them from GetFlightInfo), for do_get; it has no expiry. Pickled, an endpoint keeps "
          "these three.")
      .def("__getstate__",
           [](const flight::Endpoint& e) {
             return std::make_tuple(nb::bytes(e.ticket.data(), e.ticket.size()), e.locations,
                                    e.expected_bytes);
           })
      .def("__setstate__",
           [](flight::Endpoint* self, const nb::tuple& state) {
             // 0.1.0 pickled two: the ticket and the locations.
             if (state.size() != 2 && state.size() != 3) {
               Raise(PyExc_ValueError,
                     "an Endpoint's state is (ticket, locations[, "
                     "expected_bytes]), not a tuple of " +
                         std::to_string(state.size()));
             }
             const auto ticket = nb::cast<nb::bytes>(state[0]);
             new (self)
                 flight::Endpoint{std::string(ticket.c_str(), ticket.size()),
                                  nb::cast<std::vector<std::string>>(state[1]),
                                  {},
                                  state.size() == 3 ? nb::cast<int64_t>(state[2]) : int64_t{-1}};
           })
      .def_prop_ro(
          "ticket",
          [](const flight::Endpoint& e) { return nb::bytes(e.ticket.data(), e.ticket.size()); })
      .def_ro("locations", &flight::Endpoint::locations)
      .def_ro("expected_bytes", &flight::Endpoint::expected_bytes,
              "The bytes it is expected to carry: its share of its flight's total_bytes, set "
              "when GetFlightInfo was decoded and kept when pickled (-1: unknown). do_get reads a "
              "small endpoint on another host over DoGet first (grpc_below).")
      .def_prop_ro(
          "expiration",
          [](const flight::Endpoint& e) -> nb::object {
            if (!e.expiration) return nb::none();
            const double seconds =
                std::chrono::duration<double>(e.expiration->time_since_epoch()).count();
            nb::module_ dt = nb::module_::import_("datetime");
            return dt.attr("datetime")
                .attr("fromtimestamp")(seconds, dt.attr("timezone").attr("utc"));
          },
          "When the ticket expires (a datetime in UTC), or None when the server did not say.")
      .def("__repr__", [](const flight::Endpoint& e) {
        std::string locations;
        for (const std::string& l : e.locations) locations += (locations.empty() ? "" : ", ") + l;
        return "Endpoint(locations=[" + locations + "])";
      });

  nb::class_<flight::FlightInfo>(m, "FlightInfo",
                                 "What GetFlightInfo says about a flight: its path, schema, "
                                 "endpoints and size (-1: unknown).")
      .def_ro("path", &flight::FlightInfo::path)
      .def_prop_ro(
          "command",
          [](const flight::FlightInfo& f) { return nb::bytes(f.command.data(), f.command.size()); })
      .def_ro("endpoints", &flight::FlightInfo::endpoints)
      .def_ro("total_records", &flight::FlightInfo::total_records)
      .def_ro("total_bytes", &flight::FlightInfo::total_bytes)
      .def_ro("ordered", &flight::FlightInfo::ordered)
      .def_prop_ro(
          "schema",
          [](const flight::FlightInfo& f) { return SchemaObject(Unwrap(f.DecodeSchema())); },
          "The schema, decoded (a ferry.Schema).")
      .def("__repr__", &InfoRepr);

  nb::class_<PyFlightClient>(m, "Client", "A connection to one Flight server.")
      .def(
          "list_flights",
          [](PyFlightClient& c) {
            Result<std::vector<flight::FlightInfo>> flights = [&] {
              nb::gil_scoped_release release;
              return c.client->ListFlights();
            }();
            return Unwrap(std::move(flights));
          },
          "Every flight the server lists.")
      .def(
          "get_flight_info",
          [](PyFlightClient& c, const std::string& path) {
            Result<flight::FlightInfo> info = [&] {
              nb::gil_scoped_release release;
              return c.client->GetFlightInfo(path);
            }();
            return Unwrap(std::move(info));
          },
          nb::arg("path"), "GetFlightInfo for the path descriptor [path].")
      .def(
          "get_schema",
          [](PyFlightClient& c, const std::string& path) {
            Result<UniqueSchema> schema = [&] {
              nb::gil_scoped_release release;
              return c.client->GetSchema(path);
            }();
            return SchemaObject(Unwrap(std::move(schema)));
          },
          nb::arg("path"), "GetSchema for [path], as a ferry.Schema.")
      .def(
          "do_get",
          [](PyFlightClient& c, const std::variant<std::string, nb::bytes, flight::Endpoint>& what,
             const std::string& via, Device* device, ValidationLevel validation, int parallel,
             const std::optional<std::vector<Column>>& columns, bool buffer_lists,
             const std::optional<int64_t>& window, int64_t spin, int64_t grpc_below) {
            flight::GetOptions options = FlightGetOptions(via, device, validation, parallel,
                                                          buffer_lists, window, spin, grpc_below);
            std::string location;
            Result<UniqueDeviceArrayStream> stream = Status::OK();
            if (const auto* path = std::get_if<std::string>(&what)) {
              Result<flight::FlightInfo> info = [&] {
                nb::gil_scoped_release release;
                return c.client->GetFlightInfo(*path);
              }();
              flight::FlightInfo got = Unwrap(std::move(info));
              if (columns) {
                UniqueSchema schema = Unwrap(got.DecodeSchema());
                options.read.columns = ColumnIndices(*columns, schema.get());
              }
              nb::gil_scoped_release release;  // connects, waits for the schema
              stream = c.client->GetInfo(got, options, &location);
            } else if (const auto* endpoint = std::get_if<flight::Endpoint>(&what)) {
              if (columns) options.read.columns = ColumnIndices(*columns, nullptr);
              // One endpoint, through its own locations as a path's endpoints are read.
              flight::FlightInfo info;
              info.endpoints.push_back(*endpoint);
              nb::gil_scoped_release release;
              stream = c.client->GetInfo(info, options, &location);
            } else {
              const nb::bytes& b = std::get<nb::bytes>(what);
              std::string ticket(b.c_str(), b.size());
              if (columns) options.read.columns = ColumnIndices(*columns, nullptr);
              if (options.via != flight::Via::kAuto && options.via != flight::Via::kGrpc) {
                Raise(PyExc_ValueError,
                      "a ticket is redeemed with DoGet: via must be 'auto' or "
                      "'grpc' (give a path to follow the locations)");
              }
              nb::gil_scoped_release release;
              stream = c.client->DoGet(ticket, options);
              location = c.client->uri();
            }
            PyArrayStream out = OpenStream(Unwrap(std::move(stream)));
            c.last_location = location;
            return out;
          },
          nb::arg("path_or_ticket"), nb::arg("via") = "auto", nb::arg("device").none() = nb::none(),
          nb::arg("validation") = ValidationLevel::kFull, nb::arg("parallel") = 0,
          nb::arg("columns") = nb::none(), nb::arg("buffer_lists") = false,
          nb::arg("window").none() = nb::none(),
          nb::arg("spin") = flight::GetOptions{}.spin.count(),
          nb::arg("grpc_below") = flight::GetOptions{}.grpc_below,
          "Read a flight as a ferry.ArrayStream (it has __arrow_c_stream__ and "
          "__arrow_c_device_stream__, so pyarrow, polars and DuckDB read it). A str is a path: "
          "GetFlightInfo, then its endpoints, `parallel` at once (0: up to 4; an ordered flight's "
          "batches in its order), each through its own locations in order (shared memory when "
          "its server is on this host, UCX, DoGet), or only `via`. An Endpoint is read the same "
          "way, alone. bytes are a ticket, redeemed with DoGet. `columns` (indices, or names "
          "with a path) reads only those columns, in the schema's order: over type-1 bodies "
          "only their buffers are fetched; other planes carry whole batches and decode only "
          "these. `buffer_lists` asks a server over a ucx:// location to lend buffer lists where "
          "it would send packed bodies because UCX would emulate this client's reads (over TCP, "
          "or on one host before UCX 1.16; `columns` implies it). `window` paces the read: at most "
          "that many batches are read past those taken, across the endpoints read at once, and "
          "shm:// and ucx:// servers send only what was asked of them; over DoGet gRPC's own "
          "flow control bounds the rest (None: unpaced, but for ucx:// servers, 256 batches "
          "ahead). `spin` is how many microseconds a read "
          "over shm:// or ucx:// watches for the next message on the CPU before it sleeps (0: it "
          "sleeps at once). With `via` 'auto', an endpoint on another host whose expected size "
          "(Endpoint.expected_bytes, its share of the flight) is below `grpc_below` bytes is "
          "read over DoGet before UCX, whose connection takes longer to set up (0: UCX first for "
          "every size).")
      .def(
          "do_put",
          [](PyFlightClient& c, const std::string& path, nb::handle data) {
            if (!nb::hasattr(data, "__arrow_c_stream__")) {
              Raise(PyExc_TypeError, std::string("do_put: ") + nb::type_name(data.type()).c_str() +
                                         " has no __arrow_c_stream__ (a pyarrow Table or "
                                         "RecordBatchReader, a polars DataFrame, ...)");
            }
            UniqueArrayStream stream = TakeStream(data.attr("__arrow_c_stream__")());
            const Status st = [&] {
              nb::gil_scoped_release release;  // the stream's producer takes the GIL if needed
              return c.client->Put(path, stream.get());
            }();
            Check(st);
          },
          nb::arg("path"), nb::arg("data"),
          "Upload anything with __arrow_c_stream__ as flight [path] (DoPut); returns once the "
          "server has stored it.")
      .def(
          "do_action",
          [](PyFlightClient& c, const std::string& type, const nb::bytes& body) {
            Result<std::vector<std::string>> results = [&] {
              std::string b(body.c_str(), body.size());
              nb::gil_scoped_release release;
              return c.client->Action(type, b);
            }();
            nb::list out;
            for (const std::string& r : Unwrap(std::move(results))) {
              out.append(nb::bytes(r.data(), r.size()));
            }
            return out;
          },
          nb::arg("type"), nb::arg("body") = nb::bytes(""),
          "DoAction: the result bodies (a list of bytes). ferry's server has 'drop' (body: a "
          "flight's name), 'refresh-ticket' (body: a ticket), 'append-partition' (body: JSON "
          "{\"flight\": NAME, \"from\": UPLOADED}) and 'stats' (its totals per plane, JSON).")
      .def(
          "set_session_options",
          [](PyFlightClient& c, const std::map<std::string, std::string>& options) {
            Result<std::map<std::string, std::string>> refused = [&] {
              nb::gil_scoped_release release;
              return c.client->SetSessionOptions(options);
            }();
            return Unwrap(std::move(refused));
          },
          nb::arg("options"),
          "Flight's SetSessionOptions: opens a session on this server when the client holds none "
          "(its cookie is sent on every later call, DoGet's too) and sets `options`, each a str "
          "(compression, body_type, parallelism, target_device; '' removes one). Returns the "
          "options refused, {name: 'INVALID_NAME' or 'INVALID_VALUE'}. do_get then takes the "
          "session's body_type, parallelism and target_device where its own arguments are left "
          "at their defaults.")
      .def(
          "get_session_options",
          [](PyFlightClient& c) {
            Result<flight::SessionOptions> options = [&] {
              nb::gil_scoped_release release;
              return c.client->GetSessionOptions();
            }();
            return Unwrap(std::move(options));
          },
          "Flight's GetSessionOptions: the session's options as the server holds them, each as a "
          "str ({} without a session).")
      .def(
          "close_session",
          [](PyFlightClient& c) {
            const Status st = [&] {
              nb::gil_scoped_release release;
              return c.client->CloseSession();
            }();
            Check(st);
          },
          "Flight's CloseSession: the server ends the session and this client forgets it.")
      .def(
          "list_actions",
          [](PyFlightClient& c) {
            Result<std::vector<flight::ActionType>> types = [&] {
              nb::gil_scoped_release release;
              return c.client->ListActions();
            }();
            std::vector<std::pair<std::string, std::string>> out;
            for (const flight::ActionType& t : Unwrap(std::move(types))) {
              out.emplace_back(t.type, t.description);
            }
            return out;
          },
          "The server's actions as (type, description) pairs.")
      .def_prop_ro(
          "uri", [](const PyFlightClient& c) { return c.client->uri(); },
          "The URI this client connected to.")
      .def_ro("last_location", &PyFlightClient::last_location,
              "The URI the last do_get read from (a shm://, ucx:// or grpc:// URI).")
      .def_prop_ro(
          "plane_bytes",
          [](const PyFlightClient& c) {
            const flight::PlaneBytes b = c.client->plane_bytes();
            nb::dict out;
            out["shm"] = nb::int_(b.shm);
            out["ucx"] = nb::int_(b.ucx);
            out["grpc"] = nb::int_(b.grpc);
            return out;
          },
          "Bytes this client's reads received through each plane so far, {'shm', 'ucx', "
          "'grpc'}, counted as batches in host memory come out of the streams.")
      .def("__repr__", [](const PyFlightClient& c) { return "Client(" + c.client->uri() + ")"; });

  m.def("connect", &ConnectFlightClient, nb::arg("uri"), nb::kw_only(),
        nb::arg("token").none() = nb::none(), nb::arg("tls_roots").none() = nb::none(),
        nb::arg("tls_cert").none() = nb::none(), nb::arg("tls_key").none() = nb::none(),
        nb::arg("tls_server_name").none() = nb::none(), nb::arg("timeout") = 30.0,
        nb::arg("traceparent").none() = nb::none(), nb::arg("tracestate").none() = nb::none(),
        nb::arg("keep_connections") = true,
        "Connect to grpc://HOST:PORT, grpc+tls://HOST:PORT or grpc+unix:///PATH. `token` is sent "
        "as 'authorization: Bearer <token>' on every call; the TLS arguments are PEM text. The "
        "channel connects lazily: an absent server fails the first call. `traceparent` (and "
        "`tracestate`): a W3C Trace Context sent with every call and in the hello of every shm:// "
        "and ucx:// location a read follows, so that the servers' logs carry its trace id "
        "(ValueError if it is not valid). `keep_connections`: a UCX connection whose read ended "
        "having been lent nothing is kept (up to 10 s idle) for the next read from its server.");
  InitFlightServer(m);
}

}  // namespace ferry::python
