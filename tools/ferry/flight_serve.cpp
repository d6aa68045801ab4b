// `ferry serve --flight` in the ferry tool's Flight module: the server's options from the command
// line, its peers, and the server run until it is stopped (flight_operate.cpp).
#include "flight_serve.hpp"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "dipc_commands.hpp"
#include "ferry/flight/server.hpp"
#include "flight_operate.hpp"
#include "huge_pages_hint.hpp"
#include "metrics_exporter.hpp"
#include "parses.hpp"
#include "serve_log.hpp"
#include "serve_reload.hpp"

namespace ferry::cli {

Result<std::string> ReadWholeFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::FromErrno(errno, std::string("cannot read the ") + what + " " + path);
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

namespace {

// The peers of --peer, then those of --peers-file (one URI a line; blank lines and '#' comments
// skipped).
Result<std::vector<std::string>> Peers(const ServeOptions& o) {
  std::vector<std::string> peers = o.peers;
  if (o.peers_file.empty()) return peers;
  FERRY_ASSIGN_OR_RAISE(std::string text, ReadWholeFile(o.peers_file, "peers file"));
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    line = line.substr(0, line.find('#'));
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const size_t last = line.find_last_not_of(" \t\r");
    peers.push_back(line.substr(first, last - first + 1));
  }
  return peers;
}

// Refuse, by name, what a Flight server would ignore: the options of a server without --flight,
// the planes' options when no plane is served, and those that do nothing beside the others.
int RefuseIgnoredServeOptions(const ServeOptions& o, size_t peers) {
  if (const int rc = RefuseGiven(
          o.given, {{"--device",
                     "keeps bodies in a GPU's memory on a server without --flight: a Flight "
                     "server's planes serve host memory"},
                    {"--print-ticket",
                     "prints the tickets of a server without --flight: a Flight server issues "
                     "them from GetFlightInfo (ferry list --json shows them)"}});
      rc != 0) {
    return rc;
  }
  const std::string no_plane = "sets the shm and ucx planes, and --transport grpc serves neither";
  if (o.transport == "grpc") {
    if (const int rc = RefuseGiven(o.given, {{"--region-bytes", no_plane},
                                             {"--body-type", no_plane},
                                             {"--keep", no_plane},
                                             {"--max-clients", no_plane},
                                             {"--timeout", no_plane},
                                             {"--ucx-listen", no_plane}});
        rc != 0) {
      return rc;
    }
  }
  if (o.transport == "shm") {
    if (const int rc = RefuseGiven(
            o.given,
            {{"--ucx-listen", "places the UCX plane, and --transport shm serves only shm"}});
        rc != 0) {
      return rc;
    }
  }
  if (peers == 0) {
    const std::string why = "sets how this server asks its peers: it needs --peer or --peers-file";
    if (const int rc = RefuseGiven(
            o.given,
            {{"--peer-timeout", why}, {"--allow-partial", why}, {"--peer-tls-roots", why}});
        rc != 0) {
      return rc;
    }
  }
  if (o.tls_cert.empty()) {
    return RefuseGiven(o.given, {{"--tls-client-ca",
                                  "asks clients for certificates over TLS: it needs --tls-cert "
                                  "and --tls-key"}});
  }
  return 0;
}

}  // namespace

int ServeFlights(const ServeOptions& o) {
  flight::ServerOptions options;
  options.listen = o.flight;
  Result<std::string> token = ReadToken(o.token_file);
  if (!token.ok()) return Fail("--token-file", token.status());
  options.token = *token;
  if (options.token.empty() && !o.insecure &&
      (!ListensOnLoopbackOnly(o.flight) ||
       (o.transport != "shm" && o.transport != "grpc" && !ListensOnLoopbackOnly(o.ucx_listen)))) {
    return Fail("--flight " + o.flight,
                Status::Invalid("a Flight server beyond loopback needs a token (--token-file or "
                                "FERRY_TOKEN), or --insecure"));
  }
  if (o.transport.empty()) {
    options.planes = {"shm", "ucx"};
  } else if (o.transport == "grpc") {
    options.planes.clear();
  } else {
    options.planes = {o.transport};
  }
  for (auto [path, out, what] :
       {std::tuple{&o.tls_cert, &options.tls_cert, "TLS certificate"},
        std::tuple{&o.tls_key, &options.tls_key, "TLS key"},
        std::tuple{&o.tls_client_ca, &options.tls_client_ca, "client CA"}}) {
    if (path->empty()) continue;
    Result<std::string> text = ReadWholeFile(*path, what);
    if (!text.ok()) return Fail(*path, text.status());
    *out = std::move(*text);
  }
  Result<std::vector<std::string>> peers = Peers(o);
  if (!peers.ok()) return Fail(o.peers_file, peers.status());
  if (const int rc = RefuseIgnoredServeOptions(o, peers->size()); rc != 0) return rc;
  options.peers = std::move(*peers);
  options.peer_timeout = Millis(o.peer_timeout_s);
  options.allow_partial = o.allow_partial;
  if (!o.peer_tls_roots.empty()) {
    Result<std::string> roots = ReadWholeFile(o.peer_tls_roots, "peer TLS roots");
    if (!roots.ok()) return Fail(o.peer_tls_roots, roots.status());
    options.peer_tls_roots = std::move(*roots);
  }
  options.keep = o.keep;
  options.ucx_listen = o.ucx_listen;
  options.max_upload_bytes = o.max_upload_bytes;
  options.ticket_ttl = std::chrono::seconds(static_cast<int64_t>(o.ticket_ttl_s));
  options.plane.region_bytes = o.region_bytes;
  options.plane.timeout = Millis(o.timeout_s);
  options.plane.max_clients = o.max_clients;
  Result<dipc::BodyType> body = dipc::ParseBodyType(o.body_type);
  if (!body.ok()) return Fail("--body-type", body.status());
  options.plane.body_type = *body;
  if (o.keep && *body == dipc::BodyType::kPacked) {
    return Fail("--keep", Status::Invalid("keeping datasets needs --body-type list"));
  }
  const ServeLog log{.json = o.log_format == "json", .verbose = o.verbose};
  options.log_sink = log.sink();
  options.log = log.lines();
  options.on_drain = [] { RequestStop(); };
  options.metrics = !o.metrics.empty();
  if (!CatchStopSignals()) return 2;
  DatasetReloader reloader(o);
  options.stats_extra = [&reloader] { return "{\"config\": " + reloader.StatsJson() + "}"; };
  Result<std::unique_ptr<flight::Server>> server = flight::Server::Start(options);
  if (!server.ok()) return Fail("starting the Flight server", server.status());
  std::unique_ptr<MetricsExporter> metrics;  // destroyed before the server
  if (!o.metrics.empty()) {
    const flight::Server* serving = server->get();
    Result<std::unique_ptr<MetricsExporter>> started =
        MetricsExporter::Start(o.metrics, [serving] { return serving->metrics(); });
    if (!started.ok()) return Fail("--metrics " + o.metrics, started.status());
    metrics = std::move(*started);
    log.Tell("metrics_listening", "metrics on " + metrics->url());
  }
  for (const std::string& spec : o.datasets) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return Fail(spec, Status::Invalid("a dataset is NAME=FILE"));
    }
    const std::string name = spec.substr(0, eq);
    Result<std::vector<std::string>> files = ExpandFiles(spec.substr(eq + 1));
    if (!files.ok()) return Fail(spec.substr(eq + 1), files.status());
    if (const Status st = (*server)->AddPaths(name, *files, o.partition_bytes); !st.ok()) {
      return Fail(spec.substr(eq + 1), st);
    }
  }
  // Each flight's line first: Info issues tickets, and issuing sweeps expired ones, so it must
  // be done before anyone who read the URI can hold a ticket (under a test's manual clock, a
  // late sweep took a ticket that had just expired, which then read as unknown, not expired).
  for (const std::string& name : (*server)->names()) {
    Result<flight::FlightInfo> info = (*server)->Info(name);
    if (!info.ok()) continue;
    const size_t n = info->endpoints.size();
    const std::string endpoints = n == 1 ? std::string() : ", " + std::to_string(n) + " endpoints";
    std::string line = "flight [";
    line += name;
    line += "]: ";
    line += std::to_string(info->total_records);
    line += " records, ";
    line += std::to_string(info->total_bytes);
    line += " bytes";
    line += endpoints;
    line += ", ferry get ";
    line += (*server)->uri();
    line += " --path ";
    line += name;
    log.Tell("flight_served", line);
  }
  const bool shm_plane =
      std::find(options.planes.begin(), options.planes.end(), "shm") != options.planes.end();
  if (o.keep && shm_plane) {
    if (const std::string hint = SharedHugePagesHint(); !hint.empty()) {
      log.Tell("huge_pages_off", hint);
    }
  }
  std::printf("%s\n", (*server)->uri().c_str());
  std::fflush(stdout);
  reloader.Bind(
      [&](const std::string& name, const std::string& target) -> Status {
        FERRY_ASSIGN_OR_RAISE(std::vector<std::string> files, ExpandFiles(target));
        return (*server)->AddPaths(name, files, o.partition_bytes);
      },
      [&](const std::string& name) { return (*server)->Drop(name); });
  ServeUntilStopped(**server, o, reloader, log);
  const flight::ServerStats s = (*server)->stats();
  metrics.reset();
  (*server)->Stop();
  char summary[512];
  std::snprintf(
      summary, sizeof(summary),
      "%lld calls, %lld DoGet, %lld DoPut, %.1f MB sent, %.1f MB received, "
      "%lld unauthenticated, %lld tickets refused, %lld uploads refused",
      static_cast<long long>(s.calls), static_cast<long long>(s.do_gets),
      static_cast<long long>(s.do_puts), static_cast<double>(s.bytes_sent) / 1e6,
      static_cast<double>(s.bytes_received) / 1e6, static_cast<long long>(s.unauthenticated),
      static_cast<long long>(s.tickets_refused), static_cast<long long>(s.uploads_failed));
  log.Tell("server_stopped", summary);
  return 0;
}

}  // namespace ferry::cli
