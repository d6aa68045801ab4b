// The C surface of the dipc layer.
#include <chrono>
#include <cstring>
#include <memory>

#include "capi/error.hpp"
#include "ferry/device/device.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"

using ferry::Status;

struct FerryDipcServer {
  std::unique_ptr<ferry::dipc::Server> server;
};

struct FerryDipcRegion {
  std::shared_ptr<ferry::Allocator> allocator;
};

// Shared with every stream connected with it: one that outlives the handle still gives its
// connection back.
struct FerryDipcConnectionPool {
  std::shared_ptr<ferry::dipc::ConnectionPool> pool;
};

namespace {

Status CopyUri(const ferry::dipc::Uri& uri, char* out, size_t out_size) {
  const std::string text = uri.ToString();
  if (text.size() + 1 > out_size) {
    return Status::OutOfRange("the URI needs " + std::to_string(text.size() + 1) + " bytes, not " +
                              std::to_string(out_size));
  }
  std::memcpy(out, text.c_str(), text.size() + 1);
  return Status::OK();
}

Status Connect(const char* uri, const char* data_uri, const char* ticket,
               const struct FerryDipcClientOptions* client, struct ArrowDeviceArrayStream* out) {
  if (uri == nullptr || ticket == nullptr || out == nullptr) {
    return Status::Invalid("uri, ticket or out is NULL");
  }
  FERRY_ASSIGN_OR_RAISE(ferry::dipc::Uri parsed, ferry::dipc::Uri::Parse(uri));
  ferry::dipc::ClientOptions options;
  if (client != nullptr) {
    if (client->device != nullptr) {
      options.device = ferry::Device::FromC(client->device);
      if (options.device == nullptr) return Status::Invalid("the device is not one of ferry's");
    }
    if (client->timeout_ms < 0 || client->max_metadata_bytes < 0 || client->max_body_bytes < 0 ||
        client->window < 0 || client->connect_timeout_ms < 0) {
      return Status::Invalid("a client option is negative");
    }
    if (client->pool != nullptr) options.pool = client->pool->pool;
    options.connect_timeout = std::chrono::milliseconds(client->connect_timeout_ms);
    if (client->timeout_ms > 0) options.timeout = std::chrono::milliseconds(client->timeout_ms);
    if (client->max_metadata_bytes > 0) options.max_metadata_bytes = client->max_metadata_bytes;
    if (client->max_body_bytes > 0) options.max_body_bytes = client->max_body_bytes;
    if (client->paced != 0) options.window = client->window;
  }
  if (data_uri == nullptr) {
    FERRY_ASSIGN_OR_RAISE(auto stream, ferry::dipc::ConnectStream(parsed, ticket, options));
    stream.move_to(out);
    return Status::OK();
  }
  FERRY_ASSIGN_OR_RAISE(ferry::dipc::Uri data, ferry::dipc::Uri::Parse(data_uri));
  FERRY_ASSIGN_OR_RAISE(auto stream, ferry::dipc::ConnectStream(parsed, data, ticket, options));
  stream.move_to(out);
  return Status::OK();
}

// The URI of `which` (0: one connection, 1: metadata, 2: data) for `name`.
FerryErrorCode ServerUri(const struct FerryDipcServer* server, const char* name, int which,
                         char* out, size_t out_size, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (server == nullptr || out == nullptr) return Status::Invalid("server or out is NULL");
    const std::string n = name != nullptr ? name : "";
    const ferry::dipc::Server& s = *server->server;
    return CopyUri(which == 0   ? s.uri(n)
                   : which == 1 ? s.metadata_uri(n)
                                : s.data_uri(n),
                   out, out_size);
  });
}

}  // namespace

extern "C" {

FerryErrorCode FerryDipcServerStart(const struct FerryDipcServerOptions* options,
                                    struct FerryDipcServer** out, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (out == nullptr) return Status::Invalid("out is NULL");
    *out = nullptr;
    ferry::dipc::ServerOptions o;
    if (options != nullptr) {
      if (options->transport != nullptr) o.transport = options->transport;
      if (options->listen != nullptr) o.listen = options->listen;
      if (options->body_type != FERRY_DIPC_BODY_PACKED &&
          options->body_type != FERRY_DIPC_BODY_BUFFER_LIST) {
        return Status::Invalid("unknown body type " + std::to_string(options->body_type));
      }
      o.body_type = static_cast<ferry::dipc::BodyType>(options->body_type);
      if (options->region_bytes < 0 || options->timeout_ms < 0 || options->max_clients < 0) {
        return Status::Invalid("region_bytes, timeout_ms or max_clients is negative");
      }
      if (options->region_bytes > 0) o.region_bytes = options->region_bytes;
      if (options->timeout_ms > 0) o.timeout = std::chrono::milliseconds(options->timeout_ms);
      if (options->max_clients > 0) o.max_clients = options->max_clients;
    }
    FERRY_ASSIGN_OR_RAISE(auto server, ferry::dipc::Server::Start(std::move(o)));
    *out = new FerryDipcServer{std::move(server)};
    return Status::OK();
  });
}

FerryErrorCode FerryDipcServerAddPath(struct FerryDipcServer* server, const char* name,
                                      const char* path, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (server == nullptr || name == nullptr || path == nullptr) {
      return Status::Invalid("server, name or path is NULL");
    }
    FERRY_ASSIGN_OR_RAISE(auto dataset, ferry::dipc::Dataset::FromPath(path));
    server->server->Add(name, std::move(dataset));
    return Status::OK();
  });
}

FerryErrorCode FerryDipcServerAddStream(struct FerryDipcServer* server, const char* name,
                                        struct ArrowDeviceArrayStream* stream,
                                        struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (server == nullptr || name == nullptr) return Status::Invalid("server or name is NULL");
    if (stream == nullptr || stream->release == nullptr) {
      return Status::Invalid("the stream is NULL or released");
    }
    server->server->Add(name,
                        ferry::dipc::Dataset::FromStream(ferry::UniqueDeviceArrayStream(stream)));
    return Status::OK();
  });
}

FerryErrorCode FerryDipcServerKeepPath(struct FerryDipcServer* server, const char* name,
                                       const char* path, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (server == nullptr || name == nullptr || path == nullptr) {
      return Status::Invalid("server, name or path is NULL");
    }
    FERRY_ASSIGN_OR_RAISE(auto dataset, ferry::dipc::Dataset::FromPath(path));
    return server->server->Keep(name, std::move(dataset));
  });
}

FerryErrorCode FerryDipcServerUri(const struct FerryDipcServer* server, const char* name, char* out,
                                  size_t out_size, struct FerryError* error) {
  return ServerUri(server, name, 0, out, out_size, error);
}

FerryErrorCode FerryDipcServerMetadataUri(const struct FerryDipcServer* server, const char* name,
                                          char* out, size_t out_size, struct FerryError* error) {
  return ServerUri(server, name, 1, out, out_size, error);
}

FerryErrorCode FerryDipcServerDataUri(const struct FerryDipcServer* server, const char* name,
                                      char* out, size_t out_size, struct FerryError* error) {
  return ServerUri(server, name, 2, out, out_size, error);
}

void FerryDipcServerRelease(struct FerryDipcServer* server) { delete server; }

FerryErrorCode FerryDipcConnect(const char* uri, const char* ticket,
                                const struct FerryDevice* device,
                                struct ArrowDeviceArrayStream* out, struct FerryError* error) {
  FerryDipcClientOptions options{};
  options.device = device;
  return ferry::capi::internal::Guard(error,
                                      [&] { return Connect(uri, nullptr, ticket, &options, out); });
}

FerryErrorCode FerryDipcConnectTwo(const char* uri, const char* data_uri, const char* ticket,
                                   const struct FerryDevice* device,
                                   struct ArrowDeviceArrayStream* out, struct FerryError* error) {
  FerryDipcClientOptions options{};
  options.device = device;
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (data_uri == nullptr) return Status::Invalid("data_uri is NULL");
    return Connect(uri, data_uri, ticket, &options, out);
  });
}

FerryErrorCode FerryDipcConnectWith(const char* uri, const char* data_uri, const char* ticket,
                                    const struct FerryDipcClientOptions* options,
                                    struct ArrowDeviceArrayStream* out, struct FerryError* error) {
  return ferry::capi::internal::Guard(error,
                                      [&] { return Connect(uri, data_uri, ticket, options, out); });
}

FerryErrorCode FerryDipcServerRegion(struct FerryDipcServer* server, struct FerryDipcRegion** out,
                                     struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (server == nullptr || out == nullptr) return Status::Invalid("server or out is NULL");
    *out = nullptr;
    std::shared_ptr<ferry::Allocator> allocator = server->server->region_allocator();
    if (allocator == nullptr) {
      return Status::Invalid("the server sends packed bodies: it has no shared region");
    }
    *out = new FerryDipcRegion{std::move(allocator)};
    return Status::OK();
  });
}

FerryErrorCode FerryDipcRegionAllocate(struct FerryDipcRegion* region, int64_t size, void** out,
                                       struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (region == nullptr || out == nullptr) return Status::Invalid("region or out is NULL");
    *out = nullptr;
    FERRY_ASSIGN_OR_RAISE(uint8_t * block, region->allocator->Allocate(size));
    *out = block;
    return Status::OK();
  });
}

void FerryDipcRegionFree(struct FerryDipcRegion* region, void* data, int64_t size) {
  if (region == nullptr || data == nullptr) return;
  region->allocator->Free(static_cast<uint8_t*>(data), size);
}

void FerryDipcRegionRelease(struct FerryDipcRegion* region) { delete region; }

FerryErrorCode FerryDipcConnectionPoolCreate(int64_t max_idle_ms, int32_t per_server,
                                             struct FerryDipcConnectionPool** out,
                                             struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (out == nullptr) return Status::Invalid("out is NULL");
    *out = nullptr;
    if (max_idle_ms < 0) return Status::Invalid("max_idle_ms is negative");
    if (per_server < 0) return Status::Invalid("per_server is negative");
    const std::chrono::milliseconds idle =
        max_idle_ms == 0 ? std::chrono::seconds(10) : std::chrono::milliseconds(max_idle_ms);
    *out = new FerryDipcConnectionPool{std::make_shared<ferry::dipc::ConnectionPool>(
        idle, per_server == 0 ? size_t{4} : static_cast<size_t>(per_server))};
    return Status::OK();
  });
}

int64_t FerryDipcConnectionPoolIdle(struct FerryDipcConnectionPool* pool) {
  return pool == nullptr ? 0 : static_cast<int64_t>(pool->pool->idle());
}

void FerryDipcConnectionPoolClear(struct FerryDipcConnectionPool* pool) {
  if (pool != nullptr) pool->pool->Clear();
}

void FerryDipcConnectionPoolRelease(struct FerryDipcConnectionPool* pool) { delete pool; }

}  // extern "C"
