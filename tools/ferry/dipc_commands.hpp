// `ferry serve` and `ferry get`: the dissociated-IPC server and client on the command line.
#pragma once

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
  /// Log refused requests and tolerated faults on stderr.
  bool verbose = false;
  /// NAME=FILE pairs.
  std::vector<std::string> datasets;
};

/// Serve every NAME=FILE until SIGINT or SIGTERM; prints each dataset's URI first.
int RunServe(const ServeOptions& options);

/// Options of `ferry get`.
struct GetOptions {
  std::string uri;
  std::string data;  // the data channel's URI: bodies on a second connection, when not empty
  std::string ticket;
  std::string to;
  std::string device = "cpu";
  std::string validation = "full";
  /// How long the server may stay silent before the read fails.
  double timeout_s = 30;
  bool progress = true;
};

/// Read a dataset from a server, optionally into an IPC file, showing progress on a terminal and
/// a summary line at the end.
int RunGet(const GetOptions& options);

/// Parse "cpu", "opencl:0", "cuda:0", "cuda_host:0", ... into a device of the device layer.
Result<Device*> ParseDevice(const std::string& text);

}  // namespace ferry::cli
