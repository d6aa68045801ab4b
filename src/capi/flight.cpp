// The C surface of the flight layer.
#include "ferry/capi/flight.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capi/error.hpp"
#include "ferry/device/device.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/flight/server.hpp"

using ferry::Status;

struct FerryFlightClient {
  std::unique_ptr<ferry::flight::Client> client;
};

struct FerryFlightInfo {
  std::vector<ferry::flight::FlightInfo> flights;
  std::vector<std::string> names;
};

struct FerryFlightResults {
  std::vector<std::string> bodies;
};

struct FerryFlightServer {
  std::unique_ptr<ferry::flight::Server> server;
};

namespace {

const ferry::flight::Endpoint* EndpointAt(const FerryFlightInfo* info, size_t i, size_t e) {
  if (info == nullptr || i >= info->flights.size()) return nullptr;
  const auto& endpoints = info->flights[i].endpoints;
  return e < endpoints.size() ? &endpoints[e] : nullptr;
}

FerryFlightInfo* MakeInfo(std::vector<ferry::flight::FlightInfo> flights) {
  auto* out = new FerryFlightInfo{std::move(flights), {}};
  for (const auto& f : out->flights) {
    std::string name;
    for (const std::string& p : f.path) name += (name.empty() ? "" : "/") + p;
    out->names.push_back(std::move(name));
  }
  return out;
}

ferry::Result<ferry::Device*> DeviceOf(const struct FerryDevice* device) {
  if (device == nullptr) return static_cast<ferry::Device*>(nullptr);
  ferry::Device* d = ferry::Device::FromC(device);
  if (d == nullptr) return Status::Invalid("the device is not one of ferry's");
  return d;
}

}  // namespace

extern "C" {

FerryErrorCode FerryFlightConnect(const char* uri, const struct FerryFlightClientOptions* options,
                                  struct FerryFlightClient** out, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (uri == nullptr || out == nullptr) return Status::Invalid("uri or out is NULL");
    *out = nullptr;
    ferry::flight::ClientOptions o;
    if (options != nullptr) {
      if (options->token != nullptr) o.token = options->token;
      if (options->tls_roots != nullptr) o.tls_roots = options->tls_roots;
      if (options->tls_cert != nullptr) o.tls_cert = options->tls_cert;
      if (options->tls_key != nullptr) o.tls_key = options->tls_key;
      if (options->tls_server_name != nullptr) o.tls_server_name = options->tls_server_name;
      if (options->timeout_ms < 0) return Status::Invalid("timeout_ms is negative");
      if (options->timeout_ms > 0) o.timeout = std::chrono::milliseconds(options->timeout_ms);
    }
    FERRY_ASSIGN_OR_RAISE(auto client, ferry::flight::Client::Connect(uri, std::move(o)));
    *out = new FerryFlightClient{std::move(client)};
    return Status::OK();
  });
}

void FerryFlightClientRelease(struct FerryFlightClient* client) { delete client; }

FerryErrorCode FerryFlightListFlights(struct FerryFlightClient* client,
                                      struct FerryFlightInfo** out, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (client == nullptr || out == nullptr) return Status::Invalid("client or out is NULL");
    *out = nullptr;
    FERRY_ASSIGN_OR_RAISE(auto flights, client->client->ListFlights());
    *out = MakeInfo(std::move(flights));
    return Status::OK();
  });
}

FerryErrorCode FerryFlightGetInfo(struct FerryFlightClient* client, const char* path,
                                  struct FerryFlightInfo** out, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (client == nullptr || path == nullptr || out == nullptr) {
      return Status::Invalid("client, path or out is NULL");
    }
    *out = nullptr;
    FERRY_ASSIGN_OR_RAISE(ferry::flight::FlightInfo info, client->client->GetFlightInfo(path));
    std::vector<ferry::flight::FlightInfo> one;
    one.push_back(std::move(info));
    *out = MakeInfo(std::move(one));
    return Status::OK();
  });
}

size_t FerryFlightInfoCount(const struct FerryFlightInfo* info) {
  return info == nullptr ? 0 : info->flights.size();
}

const char* FerryFlightInfoPath(const struct FerryFlightInfo* info, size_t i) {
  if (info == nullptr || i >= info->names.size()) return nullptr;
  return info->names[i].c_str();
}

int64_t FerryFlightInfoTotalRecords(const struct FerryFlightInfo* info, size_t i) {
  if (info == nullptr || i >= info->flights.size()) return -1;
  return info->flights[i].total_records;
}

int64_t FerryFlightInfoTotalBytes(const struct FerryFlightInfo* info, size_t i) {
  if (info == nullptr || i >= info->flights.size()) return -1;
  return info->flights[i].total_bytes;
}

size_t FerryFlightInfoEndpoints(const struct FerryFlightInfo* info, size_t i) {
  if (info == nullptr || i >= info->flights.size()) return 0;
  return info->flights[i].endpoints.size();
}

const char* FerryFlightInfoTicket(const struct FerryFlightInfo* info, size_t i, size_t e,
                                  size_t* size) {
  const ferry::flight::Endpoint* endpoint = EndpointAt(info, i, e);
  if (size != nullptr) *size = endpoint == nullptr ? 0 : endpoint->ticket.size();
  return endpoint == nullptr ? nullptr : endpoint->ticket.data();
}

size_t FerryFlightInfoLocations(const struct FerryFlightInfo* info, size_t i, size_t e) {
  const ferry::flight::Endpoint* endpoint = EndpointAt(info, i, e);
  return endpoint == nullptr ? 0 : endpoint->locations.size();
}

const char* FerryFlightInfoLocation(const struct FerryFlightInfo* info, size_t i, size_t e,
                                    size_t l) {
  const ferry::flight::Endpoint* endpoint = EndpointAt(info, i, e);
  if (endpoint == nullptr || l >= endpoint->locations.size()) return nullptr;
  return endpoint->locations[l].c_str();
}

int64_t FerryFlightInfoExpiration(const struct FerryFlightInfo* info, size_t i, size_t e) {
  const ferry::flight::Endpoint* endpoint = EndpointAt(info, i, e);
  if (endpoint == nullptr || !endpoint->expiration) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             endpoint->expiration->time_since_epoch())
      .count();
}

const char* FerryFlightInfoAppMetadata(const struct FerryFlightInfo* info, size_t i, size_t* size) {
  if (size != nullptr) *size = 0;
  if (info == nullptr || i >= info->flights.size()) return nullptr;
  const std::string& note = info->flights[i].app_metadata;
  if (size != nullptr) *size = note.size();
  return note.c_str();
}

FerryErrorCode FerryFlightInfoSchema(const struct FerryFlightInfo* info, size_t i,
                                     struct ArrowSchema* out, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (info == nullptr || out == nullptr) return Status::Invalid("info or out is NULL");
    if (i >= info->flights.size()) return Status::OutOfRange("no flight " + std::to_string(i));
    FERRY_ASSIGN_OR_RAISE(ferry::UniqueSchema schema, info->flights[i].DecodeSchema());
    schema.move_to(out);
    return Status::OK();
  });
}

void FerryFlightInfoRelease(struct FerryFlightInfo* info) { delete info; }

FerryErrorCode FerryFlightGetSchema(struct FerryFlightClient* client, const char* path,
                                    struct ArrowSchema* out, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (client == nullptr || path == nullptr || out == nullptr) {
      return Status::Invalid("client, path or out is NULL");
    }
    FERRY_ASSIGN_OR_RAISE(ferry::UniqueSchema schema, client->client->GetSchema(path));
    schema.move_to(out);
    return Status::OK();
  });
}

FerryErrorCode FerryFlightGet(struct FerryFlightClient* client, const char* path, int via,
                              const struct FerryDevice* device, struct ArrowDeviceArrayStream* out,
                              char* location, size_t location_size, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (client == nullptr || path == nullptr || out == nullptr) {
      return Status::Invalid("client, path or out is NULL");
    }
    if (via < FERRY_FLIGHT_VIA_AUTO || via > FERRY_FLIGHT_VIA_GRPC) {
      return Status::Invalid("unknown via " + std::to_string(via));
    }
    ferry::flight::GetOptions options;
    options.via = static_cast<ferry::flight::Via>(via);
    FERRY_ASSIGN_OR_RAISE(options.device, DeviceOf(device));
    std::string used;
    FERRY_ASSIGN_OR_RAISE(auto stream, client->client->Get(path, options, &used));
    if (location != nullptr && location_size > 0) {
      const size_t n = std::min(used.size(), location_size - 1);
      std::memcpy(location, used.data(), n);
      location[n] = '\0';
    }
    stream.move_to(out);
    return Status::OK();
  });
}

FerryErrorCode FerryFlightDoGet(struct FerryFlightClient* client, const char* ticket,
                                size_t ticket_size, const struct FerryDevice* device,
                                struct ArrowDeviceArrayStream* out, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (client == nullptr || ticket == nullptr || out == nullptr) {
      return Status::Invalid("client, ticket or out is NULL");
    }
    ferry::flight::GetOptions options;
    FERRY_ASSIGN_OR_RAISE(options.device, DeviceOf(device));
    FERRY_ASSIGN_OR_RAISE(auto stream,
                          client->client->DoGet(std::string(ticket, ticket_size), options));
    stream.move_to(out);
    return Status::OK();
  });
}

FerryErrorCode FerryFlightPut(struct FerryFlightClient* client, const char* path,
                              struct ArrowArrayStream* stream, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (client == nullptr || path == nullptr) return Status::Invalid("client or path is NULL");
    return client->client->Put(path, stream);
  });
}

FerryErrorCode FerryFlightAction(struct FerryFlightClient* client, const char* type,
                                 const char* body, size_t body_size,
                                 struct FerryFlightResults** out, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (client == nullptr || type == nullptr || out == nullptr) {
      return Status::Invalid("client, type or out is NULL");
    }
    *out = nullptr;
    const std::string b = body == nullptr ? std::string() : std::string(body, body_size);
    FERRY_ASSIGN_OR_RAISE(std::vector<std::string> bodies, client->client->Action(type, b));
    *out = new FerryFlightResults{std::move(bodies)};
    return Status::OK();
  });
}

size_t FerryFlightResultsCount(const struct FerryFlightResults* results) {
  return results == nullptr ? 0 : results->bodies.size();
}

const char* FerryFlightResultsAt(const struct FerryFlightResults* results, size_t i, size_t* size) {
  const bool ok = results != nullptr && i < results->bodies.size();
  if (size != nullptr) *size = ok ? results->bodies[i].size() : 0;
  return ok ? results->bodies[i].data() : nullptr;
}

void FerryFlightResultsRelease(struct FerryFlightResults* results) { delete results; }

FerryErrorCode FerryFlightSetSessionOption(struct FerryFlightClient* client, const char* name,
                                           const char* value, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (client == nullptr || name == nullptr) return Status::Invalid("client or name is NULL");
    FERRY_ASSIGN_OR_RAISE(
        auto refused, client->client->SetSessionOptions({{name, value == nullptr ? "" : value}}));
    if (auto it = refused.find(name); it != refused.end()) {
      return Status::Invalid("the server refused session option \"" + std::string(name) + "\" (" +
                             it->second + ")");
    }
    return Status::OK();
  });
}

FerryErrorCode FerryFlightGetSessionOptions(struct FerryFlightClient* client,
                                            struct FerryFlightResults** out,
                                            struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (client == nullptr || out == nullptr) return Status::Invalid("client or out is NULL");
    *out = nullptr;
    FERRY_ASSIGN_OR_RAISE(ferry::flight::SessionOptions options,
                          client->client->GetSessionOptions());
    std::vector<std::string> pairs;
    for (auto& [name, value] : options) {
      pairs.push_back(name);
      pairs.push_back(std::move(value));
    }
    *out = new FerryFlightResults{std::move(pairs)};
    return Status::OK();
  });
}

FerryErrorCode FerryFlightCloseSession(struct FerryFlightClient* client, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (client == nullptr) return Status::Invalid("client is NULL");
    return client->client->CloseSession();
  });
}

FerryErrorCode FerryFlightServerStart(const char* listen, const char* token,
                                      struct FerryFlightServer** out, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (out == nullptr) return Status::Invalid("out is NULL");
    *out = nullptr;
    ferry::flight::ServerOptions options;
    if (listen != nullptr) options.listen = listen;
    if (token != nullptr) options.token = token;
    FERRY_ASSIGN_OR_RAISE(auto server, ferry::flight::Server::Start(std::move(options)));
    *out = new FerryFlightServer{std::move(server)};
    return Status::OK();
  });
}

FerryErrorCode FerryFlightServerStartWith(const struct FerryFlightServerOptions* options,
                                          struct FerryFlightServer** out,
                                          struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (out == nullptr) return Status::Invalid("out is NULL");
    *out = nullptr;
    ferry::flight::ServerOptions o;
    if (options != nullptr) {
      if (options->listen != nullptr) o.listen = options->listen;
      if (options->token != nullptr) o.token = options->token;
      if (options->tls_cert != nullptr) o.tls_cert = options->tls_cert;
      if (options->tls_key != nullptr) o.tls_key = options->tls_key;
      if (options->peers == nullptr && options->peer_count > 0) {
        return Status::Invalid("peers is NULL but peer_count is " +
                               std::to_string(options->peer_count));
      }
      for (size_t k = 0; k < options->peer_count; ++k) {
        if (options->peers[k] == nullptr) {
          return Status::Invalid("peer " + std::to_string(k) + " is NULL");
        }
        o.peers.emplace_back(options->peers[k]);
      }
      if (options->peer_timeout_ms < 0) {
        return Status::Invalid("peer_timeout_ms is negative (" +
                               std::to_string(options->peer_timeout_ms) + ")");
      }
      if (options->peer_timeout_ms > 0) {
        o.peer_timeout = std::chrono::milliseconds(options->peer_timeout_ms);
      }
      o.allow_partial = options->allow_partial != 0;
      if (options->peer_tls_roots != nullptr) o.peer_tls_roots = options->peer_tls_roots;
    }
    FERRY_ASSIGN_OR_RAISE(auto server, ferry::flight::Server::Start(std::move(o)));
    *out = new FerryFlightServer{std::move(server)};
    return Status::OK();
  });
}

FerryErrorCode FerryFlightServerAddPath(struct FerryFlightServer* server, const char* name,
                                        const char* path, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (server == nullptr || name == nullptr || path == nullptr) {
      return Status::Invalid("server, name or path is NULL");
    }
    return server->server->AddPath(name, path);
  });
}

FerryErrorCode FerryFlightServerAddPaths(struct FerryFlightServer* server, const char* name,
                                         const char* const* paths, size_t count,
                                         int64_t partition_bytes, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (server == nullptr || name == nullptr || (paths == nullptr && count > 0)) {
      return Status::Invalid("server, name or paths is NULL");
    }
    std::vector<std::string> files;
    for (size_t i = 0; i < count; ++i) {
      if (paths[i] == nullptr) return Status::Invalid("path " + std::to_string(i) + " is NULL");
      files.emplace_back(paths[i]);
    }
    return server->server->AddPaths(name, files, partition_bytes);
  });
}

FerryErrorCode FerryFlightServerUri(const struct FerryFlightServer* server, char* out,
                                    size_t out_size, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (server == nullptr || out == nullptr) return Status::Invalid("server or out is NULL");
    const std::string uri = server->server->uri();
    if (uri.size() + 1 > out_size) {
      return Status::OutOfRange("the URI needs " + std::to_string(uri.size() + 1) + " bytes, not " +
                                std::to_string(out_size));
    }
    std::memcpy(out, uri.c_str(), uri.size() + 1);
    return Status::OK();
  });
}

void FerryFlightServerRelease(struct FerryFlightServer* server) { delete server; }

}  // extern "C"
