// `ferry serve` and `ferry get`: the dissociated-IPC server and client on the command line.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "ferry/core/result.hpp"
#include "ferry/device/device.hpp"

namespace ferry::cli {

/// Options of `ferry serve`.
struct ServeOptions {
  std::string transport = "shm";
  std::string listen;
  /// "list" (type-1 pairs into the shared region) or "packed" (type-0 bodies).
  std::string body = "list";
  int64_t region_mb = 256;
  /// Write each dataset's bodies into shared memory once and lend them to every client.
  bool keep = false;
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
  /// NAME=FILE pairs.
  std::vector<std::string> datasets;
};

/// Options of `ferry get`.
struct GetOptions {
  std::string uri;
  std::string data;  // the split shape's data URI, when not empty
  std::string ticket;
  std::string to;
  bool force = false;  // replace an existing --to file
  std::string device = "cpu";
  std::string validation = "full";
  /// How long the server may stay silent before the read fails.
  double timeout_s = 30;
  /// The largest body (one batch) the server may make this client allocate.
  int64_t max_batch_bytes = int64_t{4} << 30;
  bool progress = true;
};

/// Register `serve` and `get` on `app`, filling the options; returns the two subcommands.
CLI::App* AddServeCommand(CLI::App& app, ServeOptions* options);
CLI::App* AddGetCommand(CLI::App& app, GetOptions* options);

/// Serve every NAME=FILE until SIGINT or SIGTERM (stopping within a second); prints each
/// dataset's URI first. Exit status 0, or 2 with one line on stderr.
int RunServe(const ServeOptions& options);

/// Read a dataset from a server, optionally into an IPC file (written beside it and renamed
/// when whole, removed on failure), showing progress on a terminal and a summary line at the
/// end. Exit status 0, or 2 with one line on stderr naming the peer, the phase and the cause.
int RunGet(const GetOptions& options);

/// Parse "cpu", "opencl:0", "cuda:0", "cuda_host:0", ... into a device of the device layer.
Result<Device*> ParseDevice(const std::string& text);

}  // namespace ferry::cli
