// The UCP context: features, keepalive and quiet logs.
#if FERRY_WITH_UCX

#include "transport/ucx/context.hpp"

#include <ucs/config/global_opts.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>

namespace ferry::transport::ucx {

Status UcxError(int code, const std::string& what, ucs_status_t status) {
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

Result<std::shared_ptr<Context>> Context::Make(bool rma) {
  QuietLogs();
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return UcxError(EIO, "cannot read UCX's configuration", st);
  // A peer that dies without a word (SIGKILL, a cable) is found by keepalive; UCX's default
  // checks every 20 s. One second bounds how long a survivor waits.
  if (std::getenv("UCX_KEEPALIVE_INTERVAL") == nullptr) {
    (void)ucp_config_modify(config, "KEEPALIVE_INTERVAL", "1s");
  }
  // Bodies of a few hundred kilobytes go eager (copied through shared memory or the socket, the
  // send done at once) rather than by rendezvous, whose round trip per message would make a
  // sender of small batches wait for the receiver each time.
  if (std::getenv("UCX_RNDV_THRESH") == nullptr) {
    (void)ucp_config_modify(config, "RNDV_THRESH", "256k");
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
    return UcxError(EIO, "cannot initialise UCX", st);
  }
  return context;
}

Context::~Context() {
  if (context_ != nullptr) ucp_cleanup(context_);
}

}  // namespace ferry::transport::ucx

#endif  // FERRY_WITH_UCX
