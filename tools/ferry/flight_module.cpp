// The ferry tool's Flight module (ferry_cli_flight.so): `ferry serve --flight` (flight_serve.cpp),
// `ferry list`, `ferry get grpc://...`, `ferry put` and `ferry status` (flight_operate.cpp). The
// tool loads it only for those commands, so that no other command pays for loading gRPC; it uses
// the tool's own helpers (dipc_commands.hpp), which the tool exports to it.

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "dipc_commands.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/flight/server.hpp"
#include "ferry/format/array_bytes.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/schema_view.hpp"
#include "ferry/ipc/reader.hpp"
#include "flight_commands.hpp"
#include "flight_operate.hpp"
#include "flight_serve.hpp"
#include "metrics_exporter.hpp"
#include "parses.hpp"
#include "serve_log.hpp"
#include "serve_reload.hpp"

namespace ferry::cli {

namespace {

Result<flight::Via> ParseVia(const std::string& text) {
  if (text == "auto") return flight::Via::kAuto;
  if (text == "shm") return flight::Via::kShm;
  if (text == "ucx") return flight::Via::kUcx;
  if (text == "grpc") return flight::Via::kGrpc;
  return Status::Invalid("unknown --via \"" + text + "\" (auto, shm, ucx, grpc)");
}

// A client with the token (--token-file, else FERRY_TOKEN) and TLS roots.
Result<std::unique_ptr<flight::Client>> Connect(const std::string& uri,
                                                const std::string& token_file,
                                                const std::string& tls_roots, double timeout_s,
                                                bool verbose, const std::string& traceparent = {}) {
  flight::ClientOptions options;
  FERRY_ASSIGN_OR_RAISE(options.token, ReadToken(token_file));
  if (!tls_roots.empty()) {
    FERRY_ASSIGN_OR_RAISE(options.tls_roots, ReadWholeFile(tls_roots, "TLS roots"));
  }
  options.timeout = Millis(timeout_s);
  options.traceparent = traceparent;
  if (verbose) {
    options.log = [](const std::string& line) {
      std::fprintf(stderr, "ferry: %s\n", line.c_str());
    };
  }
  return flight::Client::Connect(uri, options);
}

// Bytes of a host batch's buffers (as `ferry get` counts them), by `sizes`, made once from the
// stream's schema.
int64_t HostBatchBytes(std::optional<Result<ArrayBytes>>& sizes, const ArrowSchema* schema,
                       const ArrowArray* batch) {
  if (!sizes) sizes.emplace(ArrayBytes::Make(schema));
  if (!sizes->ok()) return 0;
  Result<int64_t> bytes = (*sizes)->Of(batch);
  return bytes.ok() ? *bytes : 0;
}

// Forwards a stream, counting what passes and drawing progress on a terminal.
class CountingProducer final : public ArrayProducer {
 public:
  CountingProducer(UniqueArrayStream inner, bool bar) : inner_(std::move(inner)), bar_(bar) {}
  Status GetSchema(ArrowSchema* out) override {
    FERRY_RETURN_NOT_OK(StreamGetSchema(inner_.get(), out));
    if (!schema_.valid()) FERRY_RETURN_NOT_OK(StreamGetSchema(inner_.get(), schema_.get()));
    return Status::OK();
  }
  Status GetNext(ArrowArray* out) override {
    FERRY_RETURN_NOT_OK(StreamGetNext(inner_.get(), out));
    if (out->release == nullptr) return Status::OK();
    ++counts->batches;
    counts->rows += out->length;
    counts->bytes += HostBatchBytes(sizes_, schema_.get(), out);
    if (bar_) {
      const double t =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      std::fprintf(stderr, "\r\033[Kferry put: %lld batches, %lld rows, %.1f MB, %.1f MB/s",
                   static_cast<long long>(counts->batches), static_cast<long long>(counts->rows),
                   static_cast<double>(counts->bytes) / 1e6,
                   static_cast<double>(counts->bytes) / 1e6 / std::max(t, 1e-9));
    }
    return Status::OK();
  }
  struct Counts {
    int64_t batches = 0;
    int64_t rows = 0;
    int64_t bytes = 0;
  };
  std::shared_ptr<Counts> counts = std::make_shared<Counts>();

 private:
  UniqueArrayStream inner_;
  UniqueSchema schema_;
  std::optional<Result<ArrayBytes>> sizes_;  // counts each batch's bytes (HostBatchBytes)
  bool bar_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// --tls-roots is read only for a grpc+tls:// URI: with another it is refused, not ignored.
int RefuseTlsRoots(const std::string& uri, const Given& given) {
  if (uri.rfind("grpc+tls://", 0) == 0) return 0;
  return RefuseGiven(given,
                     {{"--tls-roots", "trusts a grpc+tls:// server, and " + uri + " is not one"}});
}

// Refuse, by name, what a Flight read would ignore: the options of a Dissociated IPC read, and
// those that follow a flight's locations when a ticket is redeemed with DoGet instead.
int RefuseIgnoredGetOptions(const GetOptions& o) {
  if (const int rc = RefuseGiven(
          o.given,
          {{"--data-uri",
            "is a Dissociated IPC server's data URI: a flight's locations say where its bodies "
            "are"},
           {"--connect-timeout",
            "is for shm:// and ucx:// URIs: a Flight client connects on its first call, which "
            "--timeout bounds"},
           {"--max-body-bytes",
            "bounds a shm:// or ucx:// read: a Flight read takes the bodies its locations send "
            "(read a location's URI from `ferry list --json` to bound them)"}});
      rc != 0) {
    return rc;
  }
  if (const int rc = RefuseTlsRoots(o.uri, o.given); rc != 0) return rc;
  if (!o.path.empty()) {
    if (const int rc = RefuseGiven(
            o.given, {{"--ticket",
                       "redeems one ticket with DoGet, and --path reads the whole flight: give "
                       "one of them"}});
        rc != 0) {
      return rc;
    }
    if (o.via != "auto") {
      if (const int rc = RefuseGiven(o.given, {{"--grpc-below",
                                                "orders gRPC and UCX under --via "
                                                "auto, and --via " +
                                                    o.via + " has chosen"}});
          rc != 0) {
        return rc;
      }
    }
    if (o.via == "shm" || o.via == "grpc") {
      return RefuseGiven(o.given, {{"--buffer-lists",
                                    "asks a UCX location for buffer lists, "
                                    "and --via " +
                                        o.via + " reads none"}});
    }
    return 0;
  }
  const std::string ticket =
      "a --ticket is redeemed with DoGet on this server (--path follows "
      "the flight's locations)";
  return RefuseGiven(o.given,
                     {{"--via", "chooses among a flight's locations, and " + ticket},
                      {"--parallel", "reads a flight's endpoints at once, and " + ticket},
                      {"--grpc-below", "chooses among a flight's locations, and " + ticket},
                      {"--buffer-lists", "asks a UCX location for buffer lists, and " + ticket}});
}

int Get(const GetOptions& o) {
  if (o.path.empty() && o.ticket.empty()) {
    return Fail(o.uri,
                Status::Invalid("a grpc:// URI needs --path NAME (or --ticket T for DoGet)"));
  }
  if (const int rc = RefuseIgnoredGetOptions(o); rc != 0) return rc;
  Result<flight::Via> via = ParseVia(o.via);
  if (!via.ok()) return Fail("--via", via.status());
  Result<Device*> device = ParseDevice(o.device);
  if (!device.ok()) return Fail("--device", device.status());
  const auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<flight::Client>> client =
      Connect(o.uri, o.token_file, o.tls_roots, o.timeout_s, o.verbose, o.traceparent);
  if (!client.ok()) return Fail(o.uri, client.status());
  flight::GetOptions options;
  options.via = *via;
  options.device = *device;
  options.parallel = o.parallel;
  if (o.grpc_below >= 0) options.grpc_below = o.grpc_below;
  options.buffer_lists = o.buffer_lists;
  options.spin = std::chrono::microseconds(o.spin_us);
  options.window = o.window;
  Result<ValidationLevel> validation = ParseValidation(o.validation);
  if (!validation.ok()) return Fail("--validation", validation.status());
  options.read.validation = *validation;
  Result<UniqueDeviceArrayStream> stream = Status::OK();
  if (o.columns.empty()) {
    stream = o.path.empty() ? (*client)->DoGet(o.ticket, options) : (*client)->Get(o.path, options);
  } else if (o.path.empty()) {
    return Fail("--columns", Status::Invalid("needs --path (a ticket carries no schema)"));
  } else {
    Result<flight::FlightInfo> info = (*client)->GetFlightInfo(o.path);
    if (!info.ok()) return Fail("get", info.status());
    Result<UniqueSchema> schema = info->DecodeSchema();
    if (!schema.ok()) return Fail("get", schema.status());
    Result<std::vector<int32_t>> columns = ColumnIndices(schema->get(), o.columns);
    if (!columns.ok()) return Fail("--columns", columns.status());
    options.read.columns = std::move(*columns);
    stream = (*client)->GetInfo(*info, options);
  }
  if (!stream.ok()) return Fail("get", stream.status());
  const std::string label = o.path.empty() ? "ticket" : o.path;
  const int rc = Drain(stream->get(), o, label, o.uri, start);
  if (rc != 0) return rc;
  // Where the bytes came from: each endpoint takes its own plane.
  const flight::PlaneBytes planes = (*client)->plane_bytes();
  std::printf("%s: by plane: shm %lld bytes, ucx %lld bytes, grpc %lld bytes\n", label.c_str(),
              static_cast<long long>(planes.shm), static_cast<long long>(planes.ucx),
              static_cast<long long>(planes.grpc));
  return 0;
}

int List(const FlightOptions& o) {
  if (const int rc = RefuseTlsRoots(o.uri, o.given); rc != 0) return rc;
  const bool tty = isatty(STDERR_FILENO) != 0;
  if (tty) std::fprintf(stderr, "ferry list: asking %s ...", o.uri.c_str());
  Result<std::unique_ptr<flight::Client>> client =
      Connect(o.uri, o.token_file, o.tls_roots, o.timeout_s, false);
  Result<std::vector<flight::FlightInfo>> flights =
      client.ok() ? (*client)->ListFlights()
                  : Result<std::vector<flight::FlightInfo>>(client.status());
  if (tty) std::fprintf(stderr, "\r\033[K");
  if (!flights.ok()) return Fail("list", flights.status());
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const flight::FlightInfo& f : *flights) {
      nlohmann::json endpoints = nlohmann::json::array();
      for (const flight::Endpoint& e : f.endpoints) {
        endpoints.push_back(
            {{"ticket", e.ticket},
             {"locations", e.locations},
             {"expiration", e.expiration ? flight::FormatRfc3339(*e.expiration) : ""}});
      }
      Result<UniqueSchema> schema = f.DecodeSchema();
      Result<std::string> text = schema.ok() ? SchemaToString(schema->get()) : schema.status();
      out.push_back({{"path", f.path},
                     {"records", f.total_records},
                     {"bytes", f.total_bytes},
                     {"ordered", f.ordered},
                     {"schema", text.ok() ? *text : "(" + text.status().message() + ")"},
                     {"endpoints", endpoints}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%-24s %12s %14s  %s\n", "FLIGHT", "RECORDS", "BYTES", "LOCATIONS");
  for (const flight::FlightInfo& f : *flights) {
    std::string name;
    for (const std::string& p : f.path) name += (name.empty() ? "" : "/") + p;
    if (name.empty()) name = "(command)";
    std::string kinds;
    for (const flight::Endpoint& e : f.endpoints) {
      for (const std::string& l : e.locations) {
        const std::string kind = l == flight::kReuseConnection ? "grpc" : l.substr(0, l.find(':'));
        kinds += (kinds.empty() ? "" : ",") + kind;
      }
    }
    std::printf("%-24s %12lld %14lld  %s\n", name.c_str(), static_cast<long long>(f.total_records),
                static_cast<long long>(f.total_bytes), kinds.c_str());
  }
  return 0;
}

int Put(const FlightOptions& o) {
  if (const int rc = RefuseTlsRoots(o.uri, o.given); rc != 0) return rc;
  const auto start = std::chrono::steady_clock::now();
  Result<UniqueArrayStream> input = ipc::ReadPath(o.file);
  if (!input.ok()) return Fail(o.file, input.status());
  Result<std::unique_ptr<flight::Client>> client =
      Connect(o.uri, o.token_file, o.tls_roots, o.timeout_s, false);
  if (!client.ok()) return Fail(o.uri, client.status());
  const bool bar = o.progress && isatty(STDERR_FILENO) != 0;
  auto producer = std::make_unique<CountingProducer>(std::move(*input), bar);
  std::shared_ptr<CountingProducer::Counts> counts = producer->counts;
  UniqueArrayStream stream = ExportArrayStream(std::move(producer));
  const Status st = (*client)->Put(o.path, stream.get());
  if (bar) std::fprintf(stderr, "\n");
  if (!st.ok()) return Fail("put", st);
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %lld batches, %lld rows, %lld bytes uploaded in %.3f s (%.1f MB/s)\n",
              o.path.c_str(), static_cast<long long>(counts->batches),
              static_cast<long long>(counts->rows), static_cast<long long>(counts->bytes), t,
              static_cast<double>(counts->bytes) / 1e6 / t);
  return 0;
}

int StatusCommand(const FlightOptions& o) {
  if (const int rc = RefuseTlsRoots(o.uri, o.given); rc != 0) return rc;
  Result<std::unique_ptr<flight::Client>> client =
      Connect(o.uri, o.token_file, o.tls_roots, o.timeout_s, false);
  if (!client.ok()) return Fail(o.uri, client.status());
  return ShowStatus(o, **client);
}

// `ferry serve --metrics` without --flight (flight_commands.hpp): the one plane's figures.
Result<std::unique_ptr<MetricsEndpoint>> ServePlaneMetrics(const std::string& listen,
                                                           const dipc::Server* server,
                                                           const std::string& plane) {
  FERRY_ASSIGN_OR_RAISE(std::unique_ptr<MetricsExporter> exporter,
                        MetricsExporter::Start(listen, [server, plane] {
                          flight::ServerMetrics m;
                          m.planes.push_back(flight::PlaneMetricsOf(plane, server->stats()));
                          return m;
                        }));
  return std::unique_ptr<MetricsEndpoint>(std::move(exporter));
}

constexpr FlightModule kModule{kFlightModuleVersion, &ServeFlights,     &Get, &List, &Put,
                               &StatusCommand,       &ServePlaneMetrics};

}  // namespace

}  // namespace ferry::cli

extern "C" __attribute__((visibility("default"))) const ferry::cli::FlightModule*
FerryCliFlightModule() {
  return &ferry::cli::kModule;
}
