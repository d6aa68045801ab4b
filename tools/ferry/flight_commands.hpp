// Arrow Flight on the command line: `ferry serve --flight`, `ferry list`, `ferry get grpc://...`
// and `ferry put`. The tool registers their options itself (flight_commands.cpp) and runs them
// from its Flight module, ferry_cli_flight.so (flight_module.cpp), which it loads only for these
// commands: only they pay for loading gRPC (libferry_flight.so).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "dipc_commands.hpp"
#include "ferry/dipc/server.hpp"

namespace ferry::cli {

/// Options of `ferry list` and `ferry put`.
struct FlightOptions {
  std::string uri;
  std::string path;
  std::string file;
  std::string token_file;
  std::string tls_roots;
  double timeout_s = 30;
  bool json = false;
  bool progress = true;
  /// `ferry status --drain`: ask the server to drain.
  bool drain = false;
  /// The options the command line gave, to refuse those the URI's scheme would ignore.
  Given given;
};

/// Register --path, --via, --parallel, --token-file, --tls-roots and -v on `get`.
void AddFlightGetOptions(CLI::App* get, GetOptions* options);
/// Register `list` and `put`, filling `options`; returns them.
CLI::App* AddListCommand(CLI::App& app, FlightOptions* options);
CLI::App* AddPutCommand(CLI::App& app, FlightOptions* options);
/// Register `status` (a server's health, version, uptime, planes, datasets, sessions, bytes and
/// peers; --json; --drain), filling `options`; returns it.
CLI::App* AddStatusCommand(CLI::App& app, FlightOptions* options);

/// Serve every NAME=FILE as a flight on gRPC and on the fast planes until SIGINT, or until SIGTERM
/// or the drain action, which drain it first (--drain-timeout); prints the grpc:// (or
/// grpc+tls://) URI with the port bound first. Exit status 0, or 2 (also when the Flight module
/// cannot be loaded, with dlopen's reason).
int RunFlightServe(const ServeOptions& options);
/// `ferry get grpc://HOST:PORT --path NAME`: follow the flight's locations (or --via).
int RunFlightGet(const GetOptions& options);
int RunList(const FlightOptions& options);
int RunPut(const FlightOptions& options);
int RunStatus(const FlightOptions& options);

/// Whether `uri` names a Flight server (grpc://, grpc+tls://, grpc+tcp://, grpc+unix://).
bool IsFlightUri(const std::string& uri);

/// A running Prometheus exporter, made by the Flight module (metrics_exporter.hpp): it serves
/// until destroyed, which must come before the end of the server it reads.
class MetricsEndpoint {
 public:
  virtual ~MetricsEndpoint() = default;
  /// http://HOST:PORT/metrics, with the port bound.
  virtual std::string url() const = 0;
};

/// `ferry serve --metrics` without --flight: `server`'s figures as its `plane` (its transport),
/// and the process's, on http://LISTEN/metrics, from the Flight module (which links
/// prometheus-cpp: the module is loaded for this too). kNotFound when the module cannot be
/// loaded; kUnavailable when `listen` cannot be bound.
Result<std::unique_ptr<MetricsEndpoint>> StartServerMetrics(const std::string& listen,
                                                            const dipc::Server* server,
                                                            const std::string& plane);

/// What the Flight module hands the tool: its commands. The tool and the module are built
/// together; `version` guards against a stale module left beside a newer tool.
struct FlightModule {
  int version;
  int (*serve)(const ServeOptions&);
  int (*get)(const GetOptions&);
  int (*list)(const FlightOptions&);
  int (*put)(const FlightOptions&);
  int (*status)(const FlightOptions&);
  Result<std::unique_ptr<MetricsEndpoint>> (*server_metrics)(const std::string& listen,
                                                             const dipc::Server* server,
                                                             const std::string& plane);
};
inline constexpr int kFlightModuleVersion = 4;
/// The module's one exported function (extern "C" FerryCliFlightModule) and its file name.
inline constexpr const char* kFlightModuleEntry = "FerryCliFlightModule";
inline constexpr const char* kFlightModuleFile = "ferry_cli_flight.so";

}  // namespace ferry::cli
