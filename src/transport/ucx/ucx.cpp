// The UCX transport's entry points: resolving addresses, listening and connecting. Without UCX
// at build time every entry point reports that this build has none.
#include "ferry/transport/ucx.hpp"

#include <cerrno>

#if FERRY_WITH_UCX

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "ferry/core/host_address.hpp"
#include "ferry/core/host_port.hpp"
#include "transport/ucx/client_connection.hpp"
#include "transport/ucx/endpoint.hpp"
#include "transport/ucx/listener.hpp"

namespace ferry::transport {

namespace {

// "host:port" (or "[v6]:port"; empty means 127.0.0.1:0) resolved to a socket address.
struct Endpoint {
  std::string host;
  sockaddr_storage addr{};
  socklen_t addrlen = 0;
};

Result<Endpoint> Resolve(const std::string& address) {
  Endpoint out;
  std::string port = "0";
  out.host = "127.0.0.1";
  if (!address.empty()) {
    Result<HostPort> parsed = ParseHostPort(address);
    if (!parsed.ok()) return Status::Invalid("UCX " + parsed.status().message());
    if (!parsed->host.empty()) out.host = std::move(parsed->host);
    port = std::move(parsed->port);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(out.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Status::Invalid("cannot resolve UCX address \"" + address + "\": " + gai_strerror(rc));
  }
  std::memcpy(&out.addr, found->ai_addr, found->ai_addrlen);
  out.addrlen = found->ai_addrlen;
  freeaddrinfo(found);
  return out;
}

// Whether a connection to a server on this host (`this_host`, IsThisHostsAddress) gets the fast
// endpoint (shared memory, CMA) beside the socket-address one: yes, unless FERRY_UCX_FAST_PATH=0.
bool FastPath(bool this_host) {
  if (!this_host) return false;
  const char* env = std::getenv("FERRY_UCX_FAST_PATH");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  // The fast path exists for shared memory and CMA: with UCX limited to other transports
  // (UCX_TLS=tcp,self) it would add an endpoint that gains nothing.
  if (const char* tls = std::getenv("UCX_TLS"); tls != nullptr) {
    const std::string t = tls;
    bool shared = false;
    for (const char* name : {"all", "sm", "shm", "posix", "sysv", "cma", "knem", "xpmem"}) {
      shared |= t.find(name) != std::string::npos;
    }
    if (!shared) return false;
  }
  return true;
}

}  // namespace

bool UcxAvailable() noexcept { return true; }

UcxLibrary LoadedUcx() {
  UcxLibrary ucx;
  ucx.available = true;
  ucx.built_against = std::to_string(UCP_API_MAJOR) + "." + std::to_string(UCP_API_MINOR);
  unsigned major = 0;
  unsigned minor = 0;
  unsigned release = 0;
  ucp_get_version(&major, &minor, &release);
  ucx.loaded = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
  // The library that defines ucp_get_version is the libucp every UCP call goes to.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ucp_get_version), &info) != 0 && info.dli_fname != nullptr) {
    ucx.path = info.dli_fname;
  }
  return ucx;
}

Result<std::unique_ptr<Listener>> ListenUcx(const std::string& address, TransportLimits limits) {
  FERRY_ASSIGN_OR_RAISE(Endpoint where, Resolve(address));
  auto listener = internal::ucx::UcxListener::Make(reinterpret_cast<const sockaddr*>(&where.addr),
                                                   where.addrlen, where.host, std::move(limits));
  if (!listener.ok()) {
    return listener.status().WithContext("cannot listen on " + address);
  }
  return std::unique_ptr<Listener>(std::move(*listener));
}

Result<std::unique_ptr<Connection>> ConnectUcx(const std::string& address,
                                               const ConnectOptions& options) {
  if (options.trace.size() > kMaxTraceBytes) {
    return Status::Invalid("a trace of " + std::to_string(options.trace.size()) +
                           " bytes is over the limit of " + std::to_string(kMaxTraceBytes));
  }
  FERRY_ASSIGN_OR_RAISE(Endpoint where, Resolve(address));
  const bool this_host = IsThisHostsAddress(reinterpret_cast<const sockaddr*>(&where.addr));
  FERRY_ASSIGN_OR_RAISE(std::unique_ptr<internal::ucx::ClientConnection> conn,
                        internal::ucx::ClientConnection::Connect(
                            reinterpret_cast<const sockaddr*>(&where.addr), where.addrlen, address,
                            FastPath(this_host), !this_host, options));
  return std::unique_ptr<Connection>(std::move(conn));
}

}  // namespace ferry::transport

#else  // !FERRY_WITH_UCX

namespace ferry::transport {

bool UcxAvailable() noexcept { return false; }

UcxLibrary LoadedUcx() { return {}; }

Result<std::unique_ptr<Listener>> ListenUcx(const std::string& /*address*/,
                                            TransportLimits /*limits*/) {
  return Status::NotSupported("this build of ferry has no UCX transport");
}

Result<std::unique_ptr<Connection>> ConnectUcx(const std::string& /*address*/,
                                               const ConnectOptions& /*options*/) {
  return Status::NotSupported("this build of ferry has no UCX transport");
}

}  // namespace ferry::transport

#endif  // FERRY_WITH_UCX
