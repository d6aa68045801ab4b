// Following a flight's locations: shared memory when the endpoint's server is on this host, then
// UCX, then DoGet on this server (or on the grpc:// location given), or only the one asked for;
// several endpoints one after the other or several at once.
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "ferry/core/host_address.hpp"
#include "ferry/core/host_port.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/dipc/uri.hpp"
#include "flight/call_trace.hpp"
#include "flight/client_impl.hpp"

namespace ferry::flight {

namespace {

const char* ViaName(Via via) {
  switch (via) {
    case Via::kShm:
      return "shm";
    case Via::kUcx:
      return "ucx";
    case Via::kGrpc:
      return "grpc";
    default:
      return "auto";
  }
}

// What kind of location a URI is: shm, ucx, grpc (this server or another), or none of ferry's.
Via KindOf(const std::string& location) {
  if (location.empty() || location == kReuseConnection) return Via::kGrpc;
  if (location.rfind("shm://", 0) == 0) return Via::kShm;
  if (location.rfind("ucx://", 0) == 0) return Via::kUcx;
  if (location.rfind("grpc", 0) == 0) return Via::kGrpc;
  return Via::kAuto;
}

// The host of the server that holds `endpoint`: that of its ucx:// or grpc:// location (a
// shm:// location names none), else `fallback`, the server asked.
std::string EndpointHost(const Endpoint& endpoint, const std::string& fallback) {
  for (const std::string& l : endpoint.locations) {
    size_t start = 0;
    for (const char* scheme : {"ucx://", "grpc://", "grpc+tls://"}) {
      if (l.rfind(scheme, 0) == 0) start = std::strlen(scheme);
    }
    if (start == 0) continue;
    const std::string authority = l.substr(start, l.find_first_of("/?", start) - start);
    Result<HostPort> hp = ParseHostPort(authority);
    if (hp.ok() && !hp->host.empty()) return hp->host;
  }
  return fallback;
}

}  // namespace

bool IsLocalHost(const std::string& name) {
  std::string host = name;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty() || host == "localhost") return true;
  char self[256] = {};
  if (gethostname(self, sizeof(self) - 1) == 0 && host == self) return true;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  bool local = false;
  for (addrinfo* a = found; a != nullptr && !local; a = a->ai_next) {
    local = IsThisHostsAddress(a->ai_addr);
  }
  freeaddrinfo(found);
  return local;
}

namespace internal {

Result<UniqueDeviceArrayStream> ClientImpl::Get(const std::string& path, GetOptions options,
                                                std::string* location) {
  FERRY_ASSIGN_OR_RAISE(FlightInfo info, GetFlightInfo(path));
  return GetInfo(info, options, location);
}

Result<UniqueDeviceArrayStream> ClientImpl::GetInfo(const FlightInfo& info, GetOptions options,
                                                    std::string* location) {
  if (info.endpoints.empty()) {
    return Status::NotFound("the flight has no endpoint: nothing to read");
  }
  if (options.parallel < 0) return Status::Invalid("parallel is negative");
  if (options.window < -1) return Status::Invalid("window is negative (-1: unpaced)");
  FERRY_ASSIGN_OR_RAISE(options, session_->Apply(options));
  Device* target = options.device != nullptr ? options.device : CpuDevice();
  const size_t n = info.endpoints.size();
  const size_t parallel =
      options.parallel > 0 ? static_cast<size_t>(options.parallel) : std::min<size_t>(n, 4);
  const bool at_once = parallel > 1 && n > 1;
  // An endpoint that does not know its size (a FlightInfo this client did not decode) is
  // expected to carry its share of the flight's.
  const auto sized = [&info](const Endpoint& e) {
    Endpoint out = e;
    if (out.expected_bytes < 0) out.expected_bytes = info.EndpointShare();
    return out;
  };
  const int64_t window = options.window;
  // Read at once and paced, the endpoints share the window: each reads only what it was given.
  if (at_once && window >= 0) options.window = 0;
  // Endpoint i's opener; the reader, not the client, goes in it: the stream may outlive the
  // client. `at` is where the location read from goes (endpoint 0's only).
  const auto opener = [&](size_t i, std::string* at) -> EndpointOpener {
    return [reader = reader_, endpoint = sized(info.endpoints[i]), options, at] {
      return reader->Read(endpoint, options, at);
    };
  };
  std::vector<EndpointOpener> rest;
  for (size_t i = 1; i < n; ++i) rest.push_back(opener(i, nullptr));
  if (at_once) {
    // Endpoint 0 is opened before ReadParallel returns, so `location` is still the caller's.
    rest.insert(rest.begin(), opener(0, location));
    return ReadParallel(std::move(rest), parallel, info.ordered, window, target->device_type());
  }
  FERRY_ASSIGN_OR_RAISE(UniqueDeviceArrayStream first, opener(0, location)());
  return Concatenate(std::move(first), std::move(rest), target->device_type());
}

dipc::ClientOptions EndpointReader::DipcOptions(const GetOptions& options) const {
  dipc::ClientOptions d;
  d.device = options.device;
  d.read = options.read;
  d.buffer_lists = options.buffer_lists;
  d.window = options.window;
  d.spin = options.spin;
  d.timeout = options_.timeout;
  d.traceparent = options_.traceparent;
  d.tracestate = options_.tracestate;
  d.pool = pool_;
  return d;
}

Result<UniqueDeviceArrayStream> EndpointReader::Read(const Endpoint& endpoint,
                                                     const GetOptions& options,
                                                     std::string* location) const {
  // Candidates in order of speed, whatever order the server listed them in.
  std::vector<std::string> offered = endpoint.locations;
  if (offered.empty()) offered.emplace_back(kReuseConnection);
  std::string listed;
  for (const std::string& l : offered) listed += (listed.empty() ? "" : ", ") + l;
  const std::string server = EndpointHost(endpoint, host_);
  const bool local = IsLocalHost(server);
  // A small endpoint on another host is read sooner over DoGet than a UCX connection is set up.
  const int64_t expected = endpoint.expected_bytes;
  bool small = options.via == Via::kAuto && !local && expected >= 0 &&
               expected < options.grpc_below &&
               (options.device == nullptr || options.device->device_type() == ARROW_DEVICE_CPU);
  if (small) {
    Log("flight: trying grpc before ucx: the endpoint's expected size (" +
        std::to_string(expected) + " bytes) is below grpc_below (" +
        std::to_string(options.grpc_below) + ")");
  }
  // Unless this client kept a UCX connection to that server: then UCX costs no set-up either.
  if (small) {
    for (const std::string& l : offered) {
      if (KindOf(l) != Via::kUcx) continue;
      Result<dipc::Uri> uri = dipc::Uri::Parse(l);
      if (uri.ok() && dipc::HasKeptConnection(*uri, DipcOptions(options))) {
        Log("flight: trying ucx first after all: a connection to " + l + " is kept");
        small = false;
        break;
      }
    }
  }
  // The locations to try, fastest plane first.
  std::vector<std::pair<Via, std::string>> candidates;
  const std::array<Via, 3> order = small ? std::array<Via, 3>{Via::kShm, Via::kGrpc, Via::kUcx}
                                         : std::array<Via, 3>{Via::kShm, Via::kUcx, Via::kGrpc};
  for (Via kind : order) {
    if (options.via != Via::kAuto && options.via != kind) continue;
    for (const std::string& l : offered) {
      if (KindOf(l) != kind) continue;
      if (kind == Via::kShm && !local && options.via != Via::kShm) {
        std::string line = "flight: skipping " + l;
        line += ": the endpoint's server (";
        line += server;
        line += ") is not on this host";
        Log(line);
        continue;
      }
      candidates.emplace_back(kind, l);
    }
  }
  std::string failures;
  for (size_t c = 0; c < candidates.size(); ++c) {
    const auto& [kind, l] = candidates[c];
    Result<UniqueDeviceArrayStream> stream = Status::OK();
    if (kind == Via::kGrpc) {
      if (l.empty() || l == kReuseConnection || l == uri_) {
        std::vector<std::pair<std::string, std::string>> headers = TraceHeaders(options_);
        for (auto& header : session_->Headers()) headers.push_back(std::move(header));
        stream = OpenDoGet(channel_, options_.token, endpoint.ticket, options, options_.timeout,
                           headers);
      } else {
        ClientOptions other = options_;
        Result<std::unique_ptr<Client>> client = Client::Connect(l, other);
        stream = client.ok() ? (*client)->DoGet(endpoint.ticket, options) : client.status();
      }
    } else {
      Result<dipc::Uri> uri = dipc::Uri::Parse(l);
      if (uri.ok()) {
        dipc::ClientOptions dipc_options = DipcOptions(options);
        // The server is up (it just answered): an address that does not answer at once is
        // unreachable from here (another host, another namespace), so fall back soon. The
        // last candidate has nothing to fall back to, and a loaded host can take seconds to
        // wire a UCX endpoint up: it gets the whole timeout. A shared-memory socket that
        // refuses is on this host and gone: no retry at all.
        const bool last = c + 1 == candidates.size();
        dipc_options.connect_timeout =
            kind == Via::kShm ? std::chrono::milliseconds(1)
            : last            ? options_.timeout
                              : std::min(options_.timeout, std::chrono::milliseconds(2000));
        stream = dipc::ConnectStream(*uri, endpoint.ticket, dipc_options);
      } else {
        stream = uri.status();
      }
    }
    const std::string used = kind == Via::kGrpc && (l.empty() || l == kReuseConnection) ? uri_ : l;
    if (stream.ok()) {
      Log(std::string("flight: reading over ") + ViaName(kind) + " from " + used);
      if (location != nullptr) *location = used;
      std::atomic<int64_t>* counter = kind == Via::kShm   ? &counters_->shm
                                      : kind == Via::kUcx ? &counters_->ucx
                                                          : &counters_->grpc;
      std::string context = "reading over ";
      context += ViaName(kind);
      context += " from " + used;
      context += " (server " + server + ")";
      return CountBytes(std::move(*stream), counters_, counter, std::move(context));
    }
    Log(std::string("flight: ") + ViaName(kind) + " location " + used +
        " failed, trying the next: " + stream.status().message());
    failures += (failures.empty() ? "" : "; ") + used + ": " + stream.status().message();
  }
  if (failures.empty()) {
    return Status::NotFound(std::string("the flight offers no ") +
                            (options.via == Via::kAuto
                                 ? "location ferry can read"
                                 : std::string(ViaName(options.via)) + " location") +
                            " (it offers: " + listed + ")");
  }
  return Status::Unavailable("every location of the endpoint (server " + server +
                             ") failed: " + failures);
}

}  // namespace internal

}  // namespace ferry::flight
