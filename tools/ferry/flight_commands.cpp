// The Flight commands' options, and the loader of the Flight module that runs them
// (flight_commands.hpp).
#include "flight_commands.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <mutex>

namespace ferry::cli {

namespace {

// The directory of the running executable, from /proc/self/exe.
std::string ExecutableDirectory() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  const std::string text(path, static_cast<size_t>(n));
  const size_t slash = text.rfind('/');
  return slash == std::string::npos ? "." : text.substr(0, slash);
}

// Load the module once: beside the tool (the build tree), then where `install` puts it
// (FERRY_CLI_MODULE_DIR, relative to the tool's directory).
Result<const FlightModule*> LoadFlightModule() {
  static std::once_flag once;
  static Result<const FlightModule*> loaded = Status::Invalid("not loaded");
  std::call_once(once, [] {
    const std::string dir = ExecutableDirectory();
    std::string reasons;
    for (const std::string& path :
         {dir + "/" + kFlightModuleFile, dir + "/" FERRY_CLI_MODULE_DIR "/" + kFlightModuleFile}) {
      if (access(path.c_str(), F_OK) != 0) {
        reasons += (reasons.empty() ? "" : "; ") + path + ": not there";
        continue;
      }
      // RTLD_NOW: a missing gRPC library is reported here, not as a crash mid-command.
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        reasons += (reasons.empty() ? "" : "; ") + std::string(dlerror());
        continue;
      }
      using Entry = const FlightModule* (*)();
      auto entry = reinterpret_cast<Entry>(dlsym(handle, kFlightModuleEntry));
      const FlightModule* module = entry != nullptr ? entry() : nullptr;
      if (module == nullptr || module->version != kFlightModuleVersion) {
        reasons += (reasons.empty() ? "" : "; ") + path + ": not this tool's Flight module";
        dlclose(handle);
        continue;
      }
      loaded = module;
      return;
    }
    loaded = Status::NotFound("Arrow Flight is not available: cannot load ferry's Flight module (" +
                              reasons + ")");
  });
  return loaded;
}

// Run one of the module's commands; a module that cannot be loaded fails the command, naming
// `where` (the URI or option that asked for Flight).
template <typename Options>
int RunInModule(int (*FlightModule::*command)(const Options&), const std::string& where,
                const Options& options) {
  Result<const FlightModule*> module = LoadFlightModule();
  if (!module.ok()) return Fail(where, module.status());
  return ((*module)->*command)(options);
}

}  // namespace

int RunFlightServe(const ServeOptions& options) {
  return RunInModule(&FlightModule::serve, "--flight", options);
}

int RunFlightGet(const GetOptions& options) {
  return RunInModule(&FlightModule::get, options.uri, options);
}

int RunList(const FlightOptions& options) {
  return RunInModule(&FlightModule::list, options.uri, options);
}

int RunPut(const FlightOptions& options) {
  return RunInModule(&FlightModule::put, options.uri, options);
}

int RunStatus(const FlightOptions& options) {
  return RunInModule(&FlightModule::status, options.uri, options);
}

Result<std::unique_ptr<MetricsEndpoint>> StartServerMetrics(const std::string& listen,
                                                            const dipc::Server* server,
                                                            const std::string& plane) {
  FERRY_ASSIGN_OR_RAISE(const FlightModule* module, LoadFlightModule());
  return module->server_metrics(listen, server, plane);
}

bool IsFlightUri(const std::string& uri) {
  return uri.rfind("grpc://", 0) == 0 || uri.rfind("grpc+tls://", 0) == 0 ||
         uri.rfind("grpc+tcp://", 0) == 0 || uri.rfind("grpc+unix://", 0) == 0;
}

void AddFlightGetOptions(CLI::App* cmd, GetOptions* o) {
  cmd->add_option("--path", o->path, "With a grpc:// URI: the flight's name");
  cmd->add_option("--via", o->via,
                  "With a grpc:// URI: which location to read from (auto: shared memory on this "
                  "host, then UCX, then DoGet)")
      ->check(CLI::IsMember({"auto", "shm", "ucx", "grpc"}))
      ->capture_default_str();
  cmd->add_option("--parallel", o->parallel,
                  "With a grpc:// URI: how many of the flight's endpoints to read at once, each "
                  "through its own fastest location (default 0: as many as it has, at most 4; "
                  "1: one after the other)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--grpc-below", o->grpc_below,
                  "With a grpc:// URI and --via auto: an endpoint on another host whose share of "
                  "the flight is smaller than this many bytes is read over DoGet before UCX, "
                  "since a UCX connection takes longer to set up than DoGet takes to move it "
                  "(default 4 MiB; 0: UCX first for every size)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--token-file", o->token_file,
                  "With a grpc:// URI: a file holding the server's token (else FERRY_TOKEN)");
  cmd->add_option("--tls-roots", o->tls_roots,
                  "With grpc+tls://: PEM certificates to trust (default: the system's)");
  cmd->add_flag("-v,--verbose", o->verbose,
                "Log what landing on --device copied, and with a grpc:// URI which location was "
                "used and each fallback");
}

CLI::App* AddListCommand(CLI::App& app, FlightOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "list", "List the flights of an Arrow Flight server: name, records, bytes, locations.");
  cmd->add_option("uri", o->uri, "grpc://HOST:PORT or grpc+tls://HOST:PORT")->required();
  cmd->add_option("--token-file", o->token_file, "A file holding the token (else FERRY_TOKEN)");
  cmd->add_option("--tls-roots", o->tls_roots, "PEM certificates to trust for grpc+tls");
  cmd->add_option("--timeout", o->timeout_s, "Seconds to wait for the server")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", o->json, "Print JSON: every flight with its endpoints and tickets");
  return cmd;
}

CLI::App* AddPutCommand(CLI::App& app, FlightOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "put", "Upload an IPC stream or file to an Arrow Flight server (DoPut) as flight --path.");
  cmd->add_option("uri", o->uri, "grpc://HOST:PORT or grpc+tls://HOST:PORT")->required();
  cmd->add_option("file", o->file, "IPC stream or file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--path", o->path, "The flight's name")->required();
  cmd->add_option("--token-file", o->token_file, "A file holding the token (else FERRY_TOKEN)");
  cmd->add_option("--tls-roots", o->tls_roots, "PEM certificates to trust for grpc+tls");
  cmd->add_option("--timeout", o->timeout_s, "Seconds the server may stay silent")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("!--no-progress", o->progress, "Do not draw the progress bar");
  return cmd;
}

CLI::App* AddStatusCommand(CLI::App& app, FlightOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "status",
      "Show a Flight server's state: health (SERVING, or NOT_SERVING while it drains), version, "
      "uptime, planes, datasets, sessions (active/total) and bytes sent per plane, and its "
      "federation peers. --drain asks it to drain: it stops taking new calls and sessions, lets "
      "those in progress end, then exits.");
  cmd->add_option("uri", o->uri, "grpc://HOST:PORT or grpc+tls://HOST:PORT")->required();
  cmd->add_option("--token-file", o->token_file,
                  "A file holding the server's token (else FERRY_TOKEN); a server with a token "
                  "answers and drains only with it");
  cmd->add_option("--tls-roots", o->tls_roots, "PEM certificates to trust for grpc+tls");
  cmd->add_option("--timeout", o->timeout_s, "Seconds to wait for the server")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", o->json,
                "Print the server's answer as JSON (the stats action's document: \"server\", "
                "\"datasets\", one object per plane, and \"peers\" when federated)");
  cmd->add_flag("--drain", o->drain,
                "Start a drain (the drain action), then show the state: health turns "
                "NOT_SERVING, new calls and sessions are refused with UNAVAILABLE, and the "
                "server exits 0 once those in progress end or its --drain-timeout passes");
  return cmd;
}

}  // namespace ferry::cli
