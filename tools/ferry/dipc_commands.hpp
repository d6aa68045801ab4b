// `ferry serve` and `ferry get`: the dissociated-IPC server and client on the command line.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/core/result.hpp"
#include "ferry/device/device.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/format/array_view.hpp"
#include "given_options.hpp"
#include "wait_for_signal.hpp"

namespace ferry::cli {

/// Options of `ferry serve`.
struct ServeOptions {
  /// shm or ucx ("" is shm; with --flight, "" is both, grpc neither).
  std::string transport;
  /// Where the Dissociated IPC server listens (dipc::ServerOptions::listen); "": a fresh address.
  std::string listen;
  /// "list" (type-1 pairs into the shared region) or "packed" (type-0 bodies).
  std::string body_type = "list";
  /// The shared region's size: the most body bytes in flight, all clients together.
  int64_t region_bytes = int64_t{256} << 20;
  /// Write each dataset's bodies into shared memory once and lend them to every client.
  bool keep = false;
  /// "cuda:N": write each dataset's bodies into that GPU's memory once and lend them to clients
  /// on this host by CUDA IPC handle; "" or "cpu": host memory.
  std::string device;
  /// How long the server waits on a client (its request, its frees, each send).
  double timeout_s = 30;
  int max_clients = 256;
  /// The token (a file holding it; FERRY_TOKEN otherwise): with one, only issued tickets work.
  std::string token_file;
  /// Listen beyond loopback without a token.
  bool insecure = false;
  /// Print an issued ticket after each URI.
  bool print_ticket = false;
  /// Log refused requests and tolerated faults on stderr.
  bool verbose = false;
  /// "text" (lines, the servers' with -v) or "json" (every record as one JSON object a line:
  /// serve_log.hpp).
  std::string log_format = "text";
  /// NAME=FILE pairs.
  std::vector<std::string> datasets;
  /// Arrow Flight (flight_commands.cpp): HOST:PORT to serve gRPC on, beside the planes; empty:
  /// no Flight, one plane (--transport).
  std::string flight;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  int64_t max_upload_bytes = int64_t{4} << 30;
  double ticket_ttl_s = 600;
  std::string ucx_listen;
  /// With --flight: cut each file into endpoints of whole batches of at most this many body
  /// bytes (0: one endpoint per file).
  int64_t partition_bytes = 0;
  /// With --flight: the federation's peers (grpc:// URIs; --peer, and --peers-file's lines), how
  /// long each may take, whether to answer without one that does not, and the PEM certificates
  /// to trust for grpc+tls:// peers.
  std::vector<std::string> peers;
  std::string peers_file;
  double peer_timeout_s = 2;
  bool allow_partial = false;
  std::string peer_tls_roots;
  /// With --flight: how long a drain (SIGTERM, or `ferry status --drain`) lets the calls and
  /// sessions in progress run before the process exits.
  double drain_timeout_s = 30;
  /// With --flight: HOST:PORT to serve Prometheus metrics on (metrics_exporter.hpp); empty: none.
  std::string metrics;
  /// The options the command line gave, to refuse those the chosen mode would ignore (with
  /// --config, also those the file set: serve_config.hpp).
  Given given;
  /// --config: the TOML file the settings were read from, absolute ("": none); SIGHUP re-reads
  /// its [datasets]. --check-config FILE and --config-reference print, then exit.
  std::string config;
  std::string check_config;
  bool config_reference = false;
  /// With --config: the options as the command line alone gave them, which a reload reads the
  /// file under again.
  std::shared_ptr<const ServeOptions> command_line;
};

/// Options of `ferry get`.
struct GetOptions {
  std::string uri;
  std::string data_uri;  // the split shape's data URI, when not empty
  std::string ticket;
  std::string to;
  bool force = false;  // replace an existing --to file
  std::string device = "cpu";
  std::string validation = "full";
  /// How long the server may stay silent before the read fails.
  double timeout_s = 30;
  /// How long to keep trying while nothing listens at the URI: a URI is printed once its server
  /// listens, so a refused connection soon means the server is gone.
  double connect_timeout_s = 2;
  /// The largest message body (a record batch's or a dictionary's) the server may make this
  /// client allocate (dipc::ClientOptions::max_body_bytes).
  int64_t max_body_bytes = int64_t{4} << 30;
  /// Ask a ferry server to lend buffer lists where it would send packed bodies.
  bool buffer_lists = false;
  /// Microseconds a read over shm:// or ucx:// watches for the next batch before it sleeps
  /// (dipc::ClientOptions::spin).
  int64_t spin_us = dipc::ClientOptions{}.spin.count();
  /// Batches the server may send past those read (dipc::ClientOptions::window); -1: its default.
  int64_t window = -1;
  bool progress = true;
  /// Arrow Flight (a grpc:// URI): the flight's name, the location to use (auto, shm, ucx,
  /// grpc), the token and the TLS roots to trust.
  std::string path;
  std::string via = "auto";
  /// Endpoints read at once (0: min(endpoints, 4)).
  int parallel = 0;
  /// With --via auto, an endpoint on another host smaller than this is read over DoGet first
  /// (flight::GetOptions::grpc_below; 0: UCX first for every size; -1: the client's default).
  int64_t grpc_below = -1;
  /// The columns to read (names or indices; empty: all).
  std::vector<std::string> columns;
  std::string token_file;
  std::string tls_roots;
  bool verbose = false;
  /// A W3C traceparent for the servers' logs: sent on Flight calls and in the hello of the
  /// shm:// and ucx:// sessions; empty: none.
  std::string traceparent;
  /// The options the command line gave, to refuse those the URI's scheme would ignore.
  Given given;
};

/// Register `serve` (its options: serve_config.hpp's table) and `get` on `app`, filling the
/// options; returns the two subcommands.
CLI::App* AddServeCommand(CLI::App& app, ServeOptions* options);
CLI::App* AddGetCommand(CLI::App& app, GetOptions* options);

/// Serve every NAME=FILE until SIGINT or SIGTERM (stopping within a second); prints each
/// dataset's URI first, and each dataset's a SIGHUP adds (with --config). Exit status 0, or 2
/// with one line on stderr.
int RunServe(const ServeOptions& options);

/// Read a dataset from a server, optionally into an IPC file (put in place only when whole:
/// output_file.hpp), showing progress on a terminal and a summary line at the
/// end. Exit status 0, or 2 with one line on stderr naming the peer, the phase and the cause.
int RunGet(const GetOptions& options);

/// The token: the file's first line, else FERRY_TOKEN, else "".
Result<std::string> ReadToken(const std::string& file);
/// The files a dataset's FILE names: the file itself; every regular file of a directory, in
/// name order (hidden ones left out); or those a pattern (`part-*.arrows`, glob(3)) matches, in
/// name order. ENOENT, naming the directory or pattern, when there is none.
Result<std::vector<std::string>> ExpandFiles(const std::string& target);
/// Whether a listen address ("host:port", empty for 127.0.0.1) is loopback only.
bool ListensOnLoopbackOnly(const std::string& address);
/// Seconds given on the command line, as milliseconds.
std::chrono::milliseconds Millis(double seconds);
/// Print "ferry: WHAT: MESSAGE" on stderr; returns the exit status 2.
int Fail(const std::string& what, const Status& st);
/// Read `stream` to its end, into an IPC stream file when `options.to` is set (put in place only
/// when whole: output_file.hpp), with progress on a terminal and a summary line naming `label`.
/// Exit status 0, or 2 with one line on stderr naming `peer`.
int Drain(ArrowDeviceArrayStream* stream, const GetOptions& options, const std::string& label,
          const std::string& peer, std::chrono::steady_clock::time_point start);

}  // namespace ferry::cli
