// The UCP context: features, keepalive and quiet logs.
#if FERRY_WITH_UCX

#include "transport/ucx/context.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <ucs/config/global_opts.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <vector>

namespace ferry::transport::internal::ucx {

Status UcxError(StatusCode code, const std::string& what, ucs_status_t status) {
  return Status(code, what + " (UCX: " + ucs_status_string(status) + ")");
}

namespace {

// UCX prints warnings for conditions ferry reports itself (a peer that went away, a refused
// connection); users who want UCX's own words set UCX_LOG_LEVEL.
void QuietLogs() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("UCX_LOG_LEVEL") == nullptr) {
      (void)ucs_global_opts_set_value("LOG_LEVEL", "fatal");
    }
  });
}

}  // namespace

bool LoadedUcxAtLeast(unsigned major, unsigned minor) {
  unsigned loaded_major = 0, loaded_minor = 0, release = 0;
  ucp_get_version(&loaded_major, &loaded_minor, &release);
  return loaded_major > major || (loaded_major == major && loaded_minor >= minor);
}

std::string OnHostDevices() {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return {};
  std::vector<std::string> names;
  for (const ifaddrs* i = all; i != nullptr; i = i->ifa_next) {
    if (i->ifa_name == nullptr || i->ifa_addr == nullptr ||
        (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) {
      continue;
    }
    const std::string name = i->ifa_name;
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    bool keep = (i->ifa_flags & IFF_LOOPBACK) != 0;
    if (!keep) {
      // sysfs files a virtual interface under /sys/devices/virtual/net.
      char target[PATH_MAX] = {};
      const std::string link = "/sys/class/net/" + name;
      const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
      keep = n > 0 && std::string_view(target, static_cast<size_t>(n)).find("/virtual/") ==
                          std::string_view::npos;
    }
    if (keep) names.push_back(name);
  }
  freeifaddrs(all);
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : ",") + name;
  return joined;
}

bool OneSidedGetsOnOneHost() {
  static const bool one_sided = LoadedUcxAtLeast(1, 16);
  return one_sided;
}

Result<std::shared_ptr<Context>> Context::Make(bool rma, const std::string& net_devices,
                                               bool shared_memory) {
  QuietLogs();
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return UcxError(StatusCode::kIOError, "cannot read UCX's configuration", st);
  // UCX's keepalive stays at its default (20 s): a killed peer on one host is found at once (the
  // kernel resets its sockets), a stopped peer or a dead link by ferry's own timeouts. A short
  // keepalive makes UCX 1.13 fail an endpoint while it answers an emulated RMA get, which it
  // treats as fatal (ucp_get_req_handler), after the process itself was stopped for a moment.
  // Bodies of a few hundred kilobytes go eager (copied through shared memory or the socket, the
  // send done at once) rather than by rendezvous, whose round trip per message would make a
  // sender of small batches wait for the receiver each time.
  if (std::getenv("UCX_RNDV_THRESH") == nullptr) {
    (void)ucp_config_modify(config, "RNDV_THRESH", "256k");
  }
  if (!net_devices.empty() && std::getenv("UCX_NET_DEVICES") == nullptr) {
    st = ucp_config_modify(config, "NET_DEVICES", net_devices.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      return UcxError(StatusCode::kIOError, "cannot limit UCX to the devices " + net_devices, st);
    }
  }
  // A worker with shared-memory transports maps their segments when it is made: about 4 ms of a
  // worker's 5 on this VM, wasted when the peer is on another host. (A UCX that knows no "shm"
  // alias keeps its defaults.)
  if (!shared_memory && std::getenv("UCX_TLS") == nullptr) {
    (void)ucp_config_modify(config, "TLS", "^shm");
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  if (rma) params.features |= UCP_FEATURE_RMA;
  params.mt_workers_shared = 1;
  std::shared_ptr<Context> context(new Context());
  st = ucp_init(&params, config, &context->context_);
  ucp_config_release(config);
  if (st != UCS_OK) {
    context->context_ = nullptr;
    return UcxError(StatusCode::kIOError, "cannot initialise UCX", st);
  }
  return context;
}

Context::~Context() {
  if (context_ != nullptr) ucp_cleanup(context_);
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
