// `ferry serve`, and the helpers `ferry get` and the Flight module share with it.
#include "dipc_commands.hpp"

#include <glob.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "ferry/core/host_port.hpp"
#include "ferry/dipc/server.hpp"
#include "flight_commands.hpp"
#include "huge_pages_hint.hpp"
#include "notify.hpp"
#include "parses.hpp"
#include "serve_config.hpp"
#include "serve_log.hpp"
#include "serve_reload.hpp"

namespace ferry::cli {

namespace {

// How long a stopping server waits for its sessions to end on their own.
constexpr std::chrono::milliseconds kStopGrace{250};

// Refuse, by name, what a server without --flight would ignore: the Flight server's options, and
// those that do nothing beside the others given.
int RefuseIgnoredServeOptions(const ServeOptions& o) {
  const std::string flight = ": it needs --flight";
  if (const int rc = RefuseGiven(
          o.given,
          {{"--tls-cert", "serves Arrow Flight over TLS" + flight},
           {"--tls-key", "serves Arrow Flight over TLS" + flight},
           {"--tls-client-ca", "asks Arrow Flight clients for certificates" + flight},
           {"--max-upload-bytes", "bounds an Arrow Flight DoPut" + flight},
           {"--ticket-ttl", "sets how long a ticket from GetFlightInfo stays valid" + flight},
           {"--ucx-listen",
            "places a Flight server's UCX plane" + flight + " (--listen places this server)"},
           {"--peer", "federates Arrow Flight servers" + flight},
           {"--peers-file", "federates Arrow Flight servers" + flight},
           {"--peer-timeout", "bounds a federated Flight server's peers" + flight},
           {"--allow-partial", "answers without a Flight server's silent peers" + flight},
           {"--peer-tls-roots", "trusts a Flight server's grpc+tls:// peers" + flight},
           {"--partition-bytes", "partitions are a Flight's endpoints: use it with --flight"},
           {"--drain-timeout", "bounds a Flight server's drain" + flight}});
      rc != 0) {
    return rc;
  }
  const std::string transport = o.transport.empty() ? "shm" : o.transport;
  if (transport == "shm") {
    if (const int rc = RefuseGiven(o.given, {{"--insecure",
                                              "lets a UCX listener beyond loopback go without a "
                                              "token, and a shm server is reached from this host "
                                              "only"}});
        rc != 0) {
      return rc;
    }
  }
  if (!o.device.empty() && o.device != "cpu") {
    const Result<dipc::BodyType> body = dipc::ParseBodyType(o.body_type);
    if (body.ok() && *body != dipc::BodyType::kBufferList) {
      return Fail("--device", Status::Invalid("lends bodies by CUDA IPC handle, which needs "
                                              "--body-type list"));
    }
    return RefuseGiven(o.given, {{"--keep",
                                  "--device keeps the bodies in the GPU's memory already, and the "
                                  "host URI serves them from the shared region"}});
  }
  return 0;
}

}  // namespace

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

int Fail(const std::string& what, const Status& st) {
  std::fprintf(stderr, "ferry: %s: %s\n", what.c_str(), st.message().c_str());
  return 2;
}

Result<std::string> ReadToken(const std::string& file) {
  if (file.empty()) {
    const char* env = std::getenv("FERRY_TOKEN");
    return std::string(env != nullptr ? env : "");
  }
  std::ifstream in(file);
  if (!in) return Status::FromErrno(errno, "cannot read the token file " + file);
  std::string token;
  std::getline(in, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty()) return Status::Invalid("the token file " + file + " is empty");
  return token;
}

bool ListensOnLoopbackOnly(const std::string& address) {
  if (address.empty()) return true;
  // An address that does not parse is not known to be loopback; the listener refuses it anyway.
  Result<HostPort> parsed = ParseHostPort(address);
  if (!parsed.ok()) return false;
  const std::string& host = parsed->host;
  if (host.empty()) return true;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  bool loopback = found != nullptr;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      loopback &= (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      loopback &=
          IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    } else {
      loopback = false;
    }
  }
  freeaddrinfo(found);
  return loopback;
}

Result<std::vector<std::string>> ExpandFiles(const std::string& target) {
  struct stat st {};
  if (stat(target.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(target, ec)) {
      const std::string leaf = entry.path().filename().string();
      if (leaf.empty() || leaf[0] == '.' || !entry.is_regular_file()) continue;
      files.push_back(entry.path().string());
    }
    if (ec) return Status::FromErrno(ec.value(), "cannot list directory " + target);
    if (files.empty()) return Status::NotFound("directory " + target + " holds no file to serve");
    std::sort(files.begin(), files.end());
    return files;
  }
  if (target.find_first_of("*?[") == std::string::npos) return std::vector<std::string>{target};
  glob_t found{};
  const int rc = glob(target.c_str(), GLOB_ERR, nullptr, &found);
  std::vector<std::string> files;
  for (size_t i = 0; rc == 0 && i < found.gl_pathc; ++i) files.emplace_back(found.gl_pathv[i]);
  globfree(&found);
  if (rc == GLOB_NOMATCH || (rc == 0 && files.empty())) {
    return Status::NotFound("no file matches the pattern " + target);
  }
  if (rc != 0) return Status::IOError("cannot expand the pattern " + target);
  return files;  // glob(3) sorts them
}

CLI::App* AddServeCommand(CLI::App& app, ServeOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Serve IPC files to clients over the Dissociated IPC protocol; prints each dataset's URI "
      "and runs until interrupted (SIGINT or SIGTERM stop it within a second; with --config, "
      "SIGHUP re-reads the file's datasets).");
  AddServeKeys(cmd, o);
  return cmd;
}

int RunServe(const ServeOptions& o) {
  if (!o.flight.empty() && !o.listen.empty()) {
    return Fail("--listen " + o.listen,
                Status::Invalid("is for serving without --flight; a Flight server's shm and ucx "
                                "planes listen on fresh addresses, which its locations name"));
  }
  if (!o.flight.empty()) return RunFlightServe(o);
  if (o.datasets.empty()) return Fail("serve", Status::Invalid("name at least one NAME=FILE"));
  if (o.transport == "grpc") return Fail("--transport grpc", Status::Invalid("needs --flight"));
  if (const int rc = RefuseIgnoredServeOptions(o); rc != 0) return rc;
  const std::string transport = o.transport.empty() ? "shm" : o.transport;
  if (o.listen.find("://") != std::string::npos) {
    return Fail("--listen " + o.listen,
                Status::Invalid("takes an address, not a URI: host:port with --transport ucx, a "
                                "socket path or @name for shm"));
  }
  dipc::ServerOptions options;
  options.transport = transport;
  options.listen = o.listen;
  // Filled before it takes anyone: a client that connects while the server starts must not be
  // told that a dataset about to be served is unknown.
  options.accept = false;
  options.region_bytes = o.region_bytes;
  options.timeout = Millis(o.timeout_s);
  options.max_clients = o.max_clients;
  const ServeLog log{.json = o.log_format == "json", .verbose = o.verbose};
  options.log_sink = log.sink();
  options.log = log.lines();
  Result<dipc::BodyType> body = dipc::ParseBodyType(o.body_type);
  if (!body.ok()) return Fail("--body-type", body.status());
  options.body_type = *body;
  Result<std::string> token = ReadToken(o.token_file);
  if (!token.ok()) return Fail("--token-file", token.status());
  options.token = *token;
  if (transport == "ucx" && options.token.empty() && !o.insecure &&
      !ListensOnLoopbackOnly(o.listen)) {
    return Fail("--listen " + o.listen,
                Status::Invalid("a UCX listener beyond loopback needs a token (--token-file or "
                                "FERRY_TOKEN), or --insecure"));
  }
  std::vector<std::pair<std::string, std::shared_ptr<dipc::Dataset>>> datasets;
  for (const std::string& spec : o.datasets) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return Fail(spec, Status::Invalid("a dataset is NAME=FILE"));
    }
    Result<std::vector<std::string>> files = ExpandFiles(spec.substr(eq + 1));
    if (!files.ok()) return Fail(spec.substr(eq + 1), files.status());
    if (files->size() != 1 || (*files)[0] != spec.substr(eq + 1)) {
      return Fail(spec.substr(eq + 1),
                  Status::Invalid("a directory or pattern serves one flight of many endpoints: "
                                  "serve it with --flight"));
    }
    Result<std::shared_ptr<dipc::Dataset>> d = dipc::Dataset::FromPath(spec.substr(eq + 1));
    if (!d.ok()) return Fail(spec.substr(eq + 1), d.status());
    datasets.emplace_back(spec.substr(0, eq), std::move(*d));
  }
  Device* body_device = nullptr;
  if (!o.device.empty() && o.device != "cpu") {
    Result<Device*> parsed = ParseDevice(o.device);
    if (!parsed.ok()) return Fail("--device", parsed.status());
    body_device = *parsed;
  }
  if (!CatchStopSignals()) return 2;
  DatasetReloader reloader(o);
  Result<std::unique_ptr<dipc::Server>> server = dipc::Server::Start(options);
  if (!server.ok()) return Fail("starting the server", server.status());
  std::unique_ptr<MetricsEndpoint> metrics;  // stopped before the server
  if (!o.metrics.empty()) {
    Result<std::unique_ptr<MetricsEndpoint>> started =
        StartServerMetrics(o.metrics, server->get(), transport);
    if (!started.ok()) return Fail("--metrics " + o.metrics, started.status());
    metrics = std::move(*started);
    log.Tell("metrics_listening", "metrics on " + metrics->url());
  }
  for (auto& [name, d] : datasets) {
    if (body_device != nullptr) {
      if (const Status st = (*server)->KeepOnDevice(name, d, *body_device); !st.ok()) {
        return Fail(name + " on " + o.device, st);
      }
    } else if (o.keep) {
      if (const Status st = (*server)->Keep(name, d); !st.ok()) return Fail(name, st);
    } else {
      (*server)->Add(name, d);
    }
    std::string line = name + " " + (*server)->uri(name).ToString();
    if (o.print_ticket) {
      std::string ticket = name;
      if (!options.token.empty()) {
        Result<std::string> issued = (*server)->IssueTicket(name);
        if (!issued.ok()) return Fail(name, issued.status());
        ticket = *issued;
      }
      line += " " + ticket;
    }
    std::printf("%s\n", line.c_str());
  }
  (*server)->Open();
  std::fflush(stdout);
  // stdout stays one "NAME URI" line per dataset, for scripts; the split shape (metadata and
  // data servers apart) is told on stderr.
  for (auto& [name, d] : datasets) {
    if (body_device != nullptr) {
      std::string host = name;
      host += " host: ferry get ";
      host += (*server)->uri().ToString();
      host += " --ticket ";
      host += name;
      log.Tell("dataset_host_uri", host);
    }
    std::string split = name;
    split += " split: ferry get ";
    split += (*server)->metadata_uri(name).ToString();
    split += " --data-uri ";
    split += (*server)->data_uri(name).ToString();
    split += " --ticket ";
    split += name;
    log.Tell("dataset_split_uris", split);
  }
  if (o.keep && body_device == nullptr && transport == "shm") {
    if (const std::string hint = SharedHugePagesHint(); !hint.empty()) {
      log.Tell("huge_pages_off", hint);
    }
  }
  reloader.Bind(
      [&](const std::string& name, const std::string& file) -> Status {
        FERRY_ASSIGN_OR_RAISE(std::shared_ptr<dipc::Dataset> d, dipc::Dataset::FromPath(file));
        if (body_device != nullptr) {
          FERRY_RETURN_NOT_OK((*server)->KeepOnDevice(name, d, *body_device));
        } else if (o.keep) {
          FERRY_RETURN_NOT_OK((*server)->Keep(name, d));
        } else {
          (*server)->Add(name, d);
        }
        std::printf("%s %s\n", name.c_str(), (*server)->uri(name).ToString().c_str());
        std::fflush(stdout);
        return Status::OK();
      },
      [&](const std::string& name) { return (*server)->Remove(name); });
  Notify("READY=1");
  StartWatchdog();
  (void)reloader.WaitForStop();
  Notify("STOPPING=1");
  StopWatchdog();
  // A client that just closed is let finish (its frees counted), a little: one still reading
  // is cut off, and the summary counts it as still connected.
  (void)(*server)->AwaitIdle(kStopGrace);
  const dipc::ServerStats s = (*server)->stats();
  metrics.reset();
  (*server)->Stop();
  char summary[512];
  std::snprintf(
      summary, sizeof(summary),
      "%lld clients, %lld batches, %.1f MB of bodies (%lld sent whole from their "
      "file), %lld failed, %lld "
      "refused; addresses lent %lld, freed %lld, reclaimed %lld, unknown frees %lld; files served "
      "in place %lld, copied per client %lld; %lld clients still connected",
      static_cast<long long>(s.clients_accepted), static_cast<long long>(s.batches_sent),
      static_cast<double>(s.body_bytes_sent) / 1e6, static_cast<long long>(s.bodies_from_file),
      static_cast<long long>(s.sessions_failed), static_cast<long long>(s.tickets_refused),
      static_cast<long long>(s.addresses_lent), static_cast<long long>(s.addresses_freed),
      static_cast<long long>(s.addresses_reclaimed), static_cast<long long>(s.unknown_frees),
      static_cast<long long>(s.files_lent), static_cast<long long>(s.files_copied),
      static_cast<long long>(s.clients_active));
  log.Tell("server_stopped", summary);
  return 0;
}

}  // namespace ferry::cli
