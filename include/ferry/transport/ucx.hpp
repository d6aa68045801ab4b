// The UCX transport (Debian's libucx), in the Dissociated IPC protocol's own mapping: untagged
// messages are Active Messages (id 0, no header), tagged messages are UCP tag messages, and
// type-1 bodies are read with RMA gets from UCX-registered memory whose packed key is the URI's
// remote_handle. Over TCP it reaches other hosts; between ferry peers on one host it can add a
// shared-memory endpoint (ConnectOptions::extensions). Progress is event driven (each worker's
// event descriptor), so an idle connection costs no CPU.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "ferry/abi/export.h"
#include "ferry/transport/transport.hpp"

namespace ferry::transport {

/// Whether this build has the UCX transport.
FERRY_EXPORT bool UcxAvailable() noexcept;

/// Which UCX a process runs on: both ends of a UCX connection need wire-compatible builds (1.13
/// and 1.22 are not), and a process can load another libucp than the one ferry was built against
/// (the same soname). A plain value; reading it creates no UCX context.
struct UcxLibrary {
  /// Whether this build has the UCX transport; the fields below are empty when it has not.
  bool available = false;
  /// The UCP API version of the headers ferry was compiled against ("1.13").
  std::string built_against;
  /// The version of the libucp this process loaded ("1.13.1"), from ucp_get_version.
  std::string loaded;
  /// The path of that libucp, as the dynamic loader found it.
  std::string path;
};
/// The UCX this process loaded (see UcxLibrary).
FERRY_EXPORT UcxLibrary LoadedUcx();
/// Listen on `address` ("host:port"; port 0 or an empty address picks a free port on
/// 127.0.0.1). ENOTSUP when the build has no UCX.
FERRY_EXPORT Result<std::unique_ptr<Listener>> ListenUcx(const std::string& address,
                                                         TransportLimits limits = {});
/// Connect to a UCX listener at "host:port".
FERRY_EXPORT Result<std::unique_ptr<Connection>> ConnectUcx(const std::string& address,
                                                            const ConnectOptions& options);

}  // namespace ferry::transport
