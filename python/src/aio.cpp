// ferry._ferry._aio: the C++ half of ferry.aio. Each call submits a job to the worker pool
// (aio_queue.hpp) and returns at once; the job runs the blocking C++ call with the GIL released
// and posts its result to the client's completion queue, whose eventfd the event loop watches.
// Python (ferry/aio/) keeps the futures, by job id, and resolves them from drain().
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "aio_queue.hpp"
#include "aio_stream.hpp"
#include "capsule.hpp"
#include "dipc_options.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/dipc/uri.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/format/schema_view.hpp"
#include "objects.hpp"

namespace ferry::python {
namespace {

using aio::Completions;

/// ferry._ferry._aio.Completions: a client's completion queue, as Python holds it.
struct PyCompletions {
  std::shared_ptr<Completions> queue;
};

/// Run `work()` (a Result<T> or a Status) on the pool; post `make(value)` (a Python object,
/// made on the loop's thread) or the error as job `id` of `queue`.
template <typename Work, typename Make>
void StartWork(const PyCompletions& q, uint64_t id, Work work, Make make) {
  aio::Submit([queue = q.queue, id, work = std::move(work), make = std::move(make)]() mutable {
    using R = decltype(work());
    auto result = std::make_shared<R>(work());
    queue->Post(id, [result, make]() -> nb::object {
      if constexpr (std::is_same_v<R, Status>) {
        Check(*result);
        return make();
      } else {
        return make(Unwrap(std::move(*result)));
      }
    });
  });
}

/// What a job that opens a stream hands back: the stream and where it reads from.
struct Opened {
  UniqueDeviceArrayStream stream;
  std::string location;
};

Result<std::shared_ptr<Opened>> OpenedOf(Result<UniqueDeviceArrayStream> stream,
                                         std::string location) {
  FERRY_ASSIGN_OR_RAISE(UniqueDeviceArrayStream s, std::move(stream));
  auto out = std::make_shared<Opened>();
  out->stream = std::move(s);
  out->location = std::move(location);
  return out;
}

nb::object StreamObject(std::shared_ptr<Opened> opened) {
  return nb::cast(
      Unwrap(aio::Stream::Open(std::move(opened->stream), std::move(opened->location))));
}

/// ferry._ferry._aio.FlightClient: a flight::Client whose calls run on the pool, posting to the
/// queue it was connected with.
struct PyAioFlightClient {
  std::shared_ptr<flight::Client> client;
  PyCompletions q;
};

using What = std::variant<std::string, nb::bytes, flight::Endpoint>;

void DoGet(PyAioFlightClient& c, uint64_t id, const What& what, const std::string& via,
           Device* device, ValidationLevel validation, int parallel,
           const std::optional<std::vector<Column>>& columns, bool buffer_lists,
           const std::optional<int64_t>& window, int64_t spin,
           const std::optional<int64_t>& grpc_below) {
  flight::GetOptions options =
      FlightGetOptions(via, device, validation, parallel, buffer_lists, window, spin, grpc_below);
  const auto* path = std::get_if<std::string>(&what);
  std::optional<std::vector<std::string>> names;
  if (columns) names = ColumnNames(*columns, path == nullptr);
  if (names && path == nullptr) options.read.columns = IndicesOf(*names);
  std::shared_ptr<flight::Client> client = c.client;
  if (path != nullptr) {
    StartWork(
        c.q, id,
        [client, p = *path, options, names]() mutable -> Result<std::shared_ptr<Opened>> {
          FERRY_ASSIGN_OR_RAISE(flight::FlightInfo info, client->GetFlightInfo(p));
          if (names) {
            FERRY_ASSIGN_OR_RAISE(UniqueSchema schema, info.DecodeSchema());
            FERRY_ASSIGN_OR_RAISE(options.read.columns, ferry::ColumnIndices(schema.get(), *names));
          }
          std::string location;
          Result<UniqueDeviceArrayStream> s = client->GetInfo(info, options, &location);
          return OpenedOf(std::move(s), std::move(location));
        },
        &StreamObject);
  } else if (const auto* endpoint = std::get_if<flight::Endpoint>(&what)) {
    flight::FlightInfo info;
    info.endpoints.push_back(*endpoint);
    StartWork(
        c.q, id,
        [client, info, options]() -> Result<std::shared_ptr<Opened>> {
          std::string location;
          Result<UniqueDeviceArrayStream> s = client->GetInfo(info, options, &location);
          return OpenedOf(std::move(s), std::move(location));
        },
        &StreamObject);
  } else {
    if (options.via != flight::Via::kAuto && options.via != flight::Via::kGrpc) {
      Raise(PyExc_ValueError,
            "a ticket is redeemed with DoGet: via must be 'auto' or 'grpc' (give a path to "
            "follow the locations)");
    }
    const nb::bytes& b = std::get<nb::bytes>(what);
    StartWork(
        c.q, id,
        [client, ticket = std::string(b.c_str(), b.size()),
         options]() -> Result<std::shared_ptr<Opened>> {
          return OpenedOf(client->DoGet(ticket, options), client->uri());
        },
        &StreamObject);
  }
}

void FlightConnect(uint64_t id, const PyCompletions& q, const std::string& uri,
                   const std::optional<std::string>& token,
                   const std::optional<std::string>& tls_roots,
                   const std::optional<std::string>& tls_cert,
                   const std::optional<std::string>& tls_key,
                   const std::optional<std::string>& tls_server_name, double timeout,
                   const std::optional<std::string>& traceparent,
                   const std::optional<std::string>& tracestate) {
  flight::ClientOptions options = FlightClientOptions(
      token, tls_roots, tls_cert, tls_key, tls_server_name, timeout, traceparent, tracestate);
  StartWork(
      q, id,
      [uri, options]() -> Result<std::shared_ptr<flight::Client>> {
        FERRY_ASSIGN_OR_RAISE(std::unique_ptr<flight::Client> c,
                              flight::Client::Connect(uri, options));
        return std::shared_ptr<flight::Client>(std::move(c));
      },
      [q](std::shared_ptr<flight::Client> client) {
        return nb::cast(PyAioFlightClient{std::move(client), q});
      });
}

void DipcConnect(uint64_t id, const PyCompletions& q,
                 const std::variant<dipc::Uri, std::string>& uri, const std::string& ticket,
                 Device* device, ValidationLevel validation, double timeout,
                 uint32_t reorder_window,
                 const std::optional<std::variant<dipc::Uri, std::string>>& data_uri,
                 int64_t max_metadata_bytes, int64_t max_body_bytes,
                 const std::optional<std::vector<int32_t>>& columns, bool buffer_lists,
                 const std::optional<std::string>& traceparent,
                 const std::optional<std::string>& tracestate, const std::optional<int64_t>& window,
                 int64_t spin, const std::optional<double>& connect_timeout,
                 const PyConnectionPool* pool) {
  dipc::Uri parsed = UriOf(uri);
  std::optional<dipc::Uri> data;
  if (data_uri) data = UriOf(*data_uri);
  dipc::ClientOptions options = DipcClientOptions(
      {device, validation, timeout, reorder_window, max_metadata_bytes, max_body_bytes, columns,
       buffer_lists, traceparent, tracestate, window, spin, connect_timeout, pool});
  StartWork(
      q, id,
      [parsed, data, ticket, options]() -> Result<std::shared_ptr<Opened>> {
        Result<UniqueDeviceArrayStream> s =
            data ? dipc::ConnectStream(parsed, *data, ticket, options)
                 : dipc::ConnectStream(parsed, ticket, options);
        return OpenedOf(std::move(s), parsed.ToString());
      },
      &StreamObject);
}

}  // namespace

void InitAio(nb::module_& parent) {
  nb::module_ m = parent.def_submodule(
      "_aio",
      "The C++ half of ferry.aio: jobs on a fixed worker pool, completions through one eventfd "
      "per client.");

  nb::class_<PyCompletions>(m, "Completions",
                            "A client's completion queue: its eventfd (fd) is readable while "
                            "finished jobs wait; drain() takes them.")
      .def("__init__",
           [](PyCompletions* self) { new (self) PyCompletions{Unwrap(Completions::Make())}; })
      .def_prop_ro("fd", [](const PyCompletions& q) { return q.queue->fd(); })
      .def(
          "drain",
          [](PyCompletions& q) {
            nb::list out;
            for (auto& [id, make] : q.queue->Take()) {
              try {
                out.append(nb::make_tuple(id, true, make()));
              } catch (nb::python_error& e) {
                out.append(nb::make_tuple(id, false, nb::borrow(e.value())));
              } catch (const std::exception& e) {  // each job gets its answer, whatever failed
                out.append(nb::make_tuple(id, false, nb::handle(PyExc_RuntimeError)(e.what())));
              }
            }
            return out;
          },
          "The finished jobs, as (id, ok, result or exception) tuples, oldest first.");

  nb::class_<aio::Stream>(
      m, "Stream", "A stream read on the worker pool, up to four batches ahead of its reader.")
      .def_prop_ro("schema",
                   [](const aio::Stream& s) {
                     auto holder = std::make_shared<SchemaHolder>();
                     holder->schema = s.Schema();
                     const ArrowSchema* raw = holder->schema.get();
                     return PySchema{std::move(holder), raw};
                   })
      .def_prop_ro("location", &aio::Stream::location)
      .def(
          "read_next",
          [](aio::Stream& s, uint64_t id, const PyCompletions& q) { s.ReadNext(id, q.queue); },
          nb::arg("id"), nb::arg("queue"),
          "Post the next batch (an Array; None at the end) as job `id` of `queue`.")
      .def(
          "take_ready",
          [](aio::Stream& s) {
            std::optional<nb::object> got = s.TakeReady();
            return got ? nb::make_tuple(true, *got) : nb::make_tuple(false, nb::none());
          },
          "(True, the batch read ahead: an Array, None at the end) when one is ready, else "
          "(False, None).")
      .def("close", &aio::Stream::Close,
           "Release the stream (on the pool; after the read in flight, if any).");

  nb::class_<PyAioFlightClient>(m, "FlightClient", "A Flight client whose calls run on the pool.")
      .def(
          "list_flights",
          [](PyAioFlightClient& c, uint64_t id) {
            StartWork(
                c.q, id, [client = c.client] { return client->ListFlights(); },
                [](std::vector<flight::FlightInfo> v) { return nb::cast(std::move(v)); });
          },
          nb::arg("id"))
      .def(
          "get_flight_info",
          [](PyAioFlightClient& c, uint64_t id, const std::string& path) {
            StartWork(
                c.q, id, [client = c.client, path] { return client->GetFlightInfo(path); },
                [](flight::FlightInfo info) { return nb::cast(std::move(info)); });
          },
          nb::arg("id"), nb::arg("path"))
      .def(
          "get_schema",
          [](PyAioFlightClient& c, uint64_t id, const std::string& path) {
            StartWork(
                c.q, id,
                [client = c.client, path]() -> Result<std::shared_ptr<UniqueSchema>> {
                  FERRY_ASSIGN_OR_RAISE(UniqueSchema s, client->GetSchema(path));
                  return std::make_shared<UniqueSchema>(std::move(s));
                },
                [](std::shared_ptr<UniqueSchema> s) {
                  auto holder = std::make_shared<SchemaHolder>();
                  holder->schema = std::move(*s);
                  const ArrowSchema* raw = holder->schema.get();
                  return nb::cast(PySchema{std::move(holder), raw});
                });
          },
          nb::arg("id"), nb::arg("path"))
      .def("do_get", &DoGet, nb::arg("id"), nb::arg("path_or_ticket"), nb::arg("via"),
           nb::arg("device").none(), nb::arg("validation"), nb::arg("parallel"),
           nb::arg("columns").none(), nb::arg("buffer_lists"), nb::arg("window").none(),
           nb::arg("spin"), nb::arg("grpc_below").none())
      .def(
          "do_put",
          [](PyAioFlightClient& c, uint64_t id, const std::string& path, nb::handle data) {
            if (!nb::hasattr(data, "__arrow_c_stream__")) {
              Raise(PyExc_TypeError, std::string("do_put: ") + nb::type_name(data.type()).c_str() +
                                         " has no __arrow_c_stream__ (a pyarrow Table or "
                                         "RecordBatchReader, a polars DataFrame, ...)");
            }
            auto stream =
                std::make_shared<UniqueArrayStream>(TakeStream(data.attr("__arrow_c_stream__")()));
            StartWork(
                c.q, id,
                [client = c.client, path, stream] { return client->Put(path, stream->get()); },
                [] { return nb::none(); });
          },
          nb::arg("id"), nb::arg("path"), nb::arg("data"))
      .def(
          "do_action",
          [](PyAioFlightClient& c, uint64_t id, const std::string& type, const nb::bytes& body) {
            StartWork(
                c.q, id,
                [client = c.client, type, b = std::string(body.c_str(), body.size())] {
                  return client->Action(type, b);
                },
                [](std::vector<std::string> results) {
                  nb::list out;
                  for (const std::string& r : results) out.append(nb::bytes(r.data(), r.size()));
                  return nb::object(out);
                });
          },
          nb::arg("id"), nb::arg("type"), nb::arg("body"))
      .def(
          "list_actions",
          [](PyAioFlightClient& c, uint64_t id) {
            StartWork(
                c.q, id, [client = c.client] { return client->ListActions(); },
                [](std::vector<flight::ActionType> types) {
                  nb::list out;
                  for (const flight::ActionType& t : types) {
                    out.append(nb::make_tuple(t.type, t.description));
                  }
                  return nb::object(out);
                });
          },
          nb::arg("id"))
      .def_prop_ro("uri", [](const PyAioFlightClient& c) { return c.client->uri(); })
      .def_prop_ro("plane_bytes", [](const PyAioFlightClient& c) {
        const flight::PlaneBytes b = c.client->plane_bytes();
        nb::dict out;
        out["shm"] = nb::int_(b.shm);
        out["ucx"] = nb::int_(b.ucx);
        out["grpc"] = nb::int_(b.grpc);
        return out;
      });

  m.def("flight_connect", &FlightConnect, nb::arg("id"), nb::arg("queue"), nb::arg("uri"),
        nb::arg("token").none(), nb::arg("tls_roots").none(), nb::arg("tls_cert").none(),
        nb::arg("tls_key").none(), nb::arg("tls_server_name").none(), nb::arg("timeout"),
        nb::arg("traceparent").none(), nb::arg("tracestate").none(),
        "Connect on the pool; posts a FlightClient bound to `queue`.");
  m.def("dipc_connect", &DipcConnect, nb::arg("id"), nb::arg("queue"), nb::arg("uri"),
        nb::arg("ticket"), nb::arg("device").none(), nb::arg("validation"), nb::arg("timeout"),
        nb::arg("reorder_window"), nb::arg("data_uri").none(), nb::arg("max_metadata_bytes"),
        nb::arg("max_body_bytes"), nb::arg("columns").none(), nb::arg("buffer_lists"),
        nb::arg("traceparent").none(), nb::arg("tracestate").none(), nb::arg("window").none(),
        nb::arg("spin"), nb::arg("connect_timeout").none(), nb::arg("pool").none(),
        "Connect on the pool; posts a Stream.");
  m.def(
      "set_workers", [](int n) { Check(aio::SetWorkers(n)); }, nb::arg("workers"),
      "Size the worker pool (1-64) before its first job.");
  m.def("workers", &aio::Workers, "The worker pool's size.");
  m.def("started_workers", &aio::StartedWorkers, "Worker threads started so far.");
}

}  // namespace ferry::python
