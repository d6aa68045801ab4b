// `ferry serve --config`'s reload on SIGHUP (serve_reload.hpp).
#include "serve_reload.hpp"

#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "serve_config.hpp"
#include "serve_log.hpp"
#include "wait_for_signal.hpp"

namespace ferry::cli {

namespace {

// The reload's lines go where the server's own do (--log-format).
ServeLog ServeLogOf(const ServeOptions& o) {
  return ServeLog{.json = o.log_format == "json", .verbose = o.verbose};
}

}  // namespace

DatasetReloader::DatasetReloader(const ServeOptions& options)
    : options_(options), served_(DatasetMap(options.datasets)) {
  if (!options_.config.empty()) CatchReload();
}

void DatasetReloader::Bind(AddFn add, DropFn drop) {
  add_ = std::move(add);
  drop_ = std::move(drop);
}

Status DatasetReloader::Apply(const std::map<std::string, std::string>& wanted, std::string* done) {
  // Each step done is undone, newest first, when a later one fails: the server is left serving
  // what it served.
  std::vector<std::function<void()>> undo;
  auto fail = [&](const Status& st) {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) (*it)();
    return st;
  };
  for (const auto& [wanted_name, wanted_file] : wanted) {
    const std::string name = wanted_name;
    const std::string file = wanted_file;
    auto old = served_.find(name);
    if (old != served_.end() && old->second == file) continue;
    if (old != served_.end()) {
      const std::string previous = old->second;
      if (const Status st = drop_(name); !st.ok()) return fail(st.WithContext("dropping " + name));
      undo.emplace_back([this, name, previous] { (void)add_(name, previous); });
      *done += done->empty() ? " replaced " : ", replaced ";
    } else {
      *done += done->empty() ? " added " : ", added ";
    }
    *done += name;
    if (const Status st = add_(name, file); !st.ok()) {
      std::string what = "dataset " + name;
      what += " (" + file + ")";
      return fail(st.WithContext(what));
    }
    undo.emplace_back([this, name] { (void)drop_(name); });
  }
  for (const auto& [name, file] : served_) {
    if (wanted.count(name) > 0) continue;
    if (const Status st = drop_(name); !st.ok()) return fail(st.WithContext("dropping " + name));
    undo.emplace_back([this, gone = name, from = file] { (void)add_(gone, from); });
    *done += done->empty() ? " removed " : ", removed ";
    *done += name;
  }
  return Status::OK();
}

Status DatasetReloader::Reload() {
  ServeOptions fresh = options_.command_line ? *options_.command_line : ServeOptions{};
  Status st = LoadServeConfig(options_.config, &fresh);
  std::string done;
  if (st.ok()) st = Apply(DatasetMap(fresh.datasets), &done);
  if (!st.ok()) {
    ++failures_;
    ServeLogOf(options_).Tell(
        "config_reload_failed",
        "SIGHUP: " + options_.config + " refused, still serving as before: " + st.message());
    return st;
  }
  ++reloads_;
  served_ = DatasetMap(fresh.datasets);
  ServeLogOf(options_).Tell("config_reloaded",
                            "SIGHUP: reloaded " + options_.config + ":" +
                                (done.empty() ? " the datasets are as they were" : done));
  for (const std::string& key : ChangedKeys(options_, fresh)) {
    ServeLogOf(options_).Tell("config_key_needs_restart",
                              "SIGHUP: " + key + " changed in " + options_.config +
                                  "; a reload re-reads [datasets] only, so it takes effect on "
                                  "restart");
  }
  return Status::OK();
}

std::string DatasetReloader::StatsJson() const {
  return nlohmann::json{{"reloads", reloads_.load()}, {"reload_failures", failures_.load()}}.dump();
}

int DatasetReloader::WaitForStop() {
  int sig = WaitForSignal();
  // SIGHUP comes only with a config file (CatchReload); one before Bind reloads nothing.
  for (; sig == SIGHUP; sig = WaitForSignal()) {
    if (add_) (void)Reload();
  }
  return sig;
}

}  // namespace ferry::cli
