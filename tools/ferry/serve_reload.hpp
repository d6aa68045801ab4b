// The datasets of `ferry serve --config` across SIGHUP: each reload reads the whole file again
// and, when every key of it is sound, adds and removes datasets on the running server to match
// its [datasets]; a file refused, or a dataset that does not load, leaves the server as it was.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "dipc_commands.hpp"
#include "ferry/core/status.hpp"

namespace ferry::cli {

/// Owned by the serving command, beside its server. Reload and WaitForStop run on the serving
/// thread; StatsJson on any.
class DatasetReloader {
 public:
  /// Serve dataset NAME of FILE (a file, directory or pattern, as ExpandFiles takes it).
  using AddFn = std::function<Status(const std::string& name, const std::string& file)>;
  /// Stop serving NAME; sessions reading it keep it until they end.
  using DropFn = std::function<Status(const std::string& name)>;

  /// `options` as loaded (LoadServeConfig), whose datasets the server serves. With a config
  /// file, SIGHUP is caught from here on: make it before the server says where it listens.
  explicit DatasetReloader(const ServeOptions& options);
  /// How the server adds and drops datasets; set once the server runs, before WaitForStop.
  void Bind(AddFn add, DropFn drop);
  /// Read the file again and serve its datasets: those new added, those gone dropped, those of
  /// another FILE replaced. On an error nothing has changed, and the failure is counted. The
  /// outcome is logged on stderr either way.
  Status Reload();
  /// {"reloads": N, "reload_failures": N}: the reloads that changed the server to the file's
  /// datasets, and those refused.
  std::string StatsJson() const;
  /// Wait for SIGINT, SIGTERM or RequestStop (WaitForSignal's answer, returned); with a config
  /// file, each SIGHUP in between reloads it.
  int WaitForStop();

 private:
  Status Apply(const std::map<std::string, std::string>& wanted, std::string* done);

  ServeOptions options_;
  AddFn add_;
  DropFn drop_;
  std::map<std::string, std::string> served_;
  std::atomic<int64_t> reloads_{0};
  std::atomic<int64_t> failures_{0};
};

}  // namespace ferry::cli
