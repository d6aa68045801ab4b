/* ferry's C surface: the Dissociated IPC server and client (docs/dipc.md).
 * One part of ferry/capi/ferry.h, which states the conventions every part follows; it may be
 * included alone. */
#ifndef FERRY_CAPI_DIPC_H
#define FERRY_CAPI_DIPC_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/capi/device.h"
#include "ferry/capi/ipc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Dissociated IPC: server and client --------------------------------------------------- */

/** Body types of the Dissociated IPC protocol: whole packed bodies, or (offset, length) pairs into
 * the server's shared region. */
enum FerryDipcBodyType { FERRY_DIPC_BODY_PACKED = 0, FERRY_DIPC_BODY_BUFFER_LIST = 1 };

/** How a server runs: a transport ("shm" or "ucx"; NULL means "shm"), where to listen (NULL or ""
 * picks a fresh address), a FerryDipcBodyType, the shared region's size in bytes (0: 256 MiB),
 * which bounds the body memory in flight, how long the server waits on a client (its request,
 * its frees, its sends; 0: 30 s), and the most clients served at once (0: 256). */
struct FerryDipcServerOptions {
  const char* transport;
  const char* listen;
  int32_t body_type;
  int64_t region_bytes;
  int64_t timeout_ms;
  int32_t max_clients;
};

/** A running server; opaque. */
struct FerryDipcServer;

/** Start a server (its accept thread runs until FerryDipcServerRelease). `options` may be NULL. */
FERRY_EXPORT FerryErrorCode FerryDipcServerStart(const struct FerryDipcServerOptions* options,
                                                 struct FerryDipcServer** out,
                                                 struct FerryError* error);
/** Serve the IPC stream or file at `path` under `name` (mapped once, read zero-copy per client). */
FERRY_EXPORT FerryErrorCode FerryDipcServerAddPath(struct FerryDipcServer* server, const char* name,
                                                   const char* path, struct FerryError* error);
/** Serve `stream` under `name` to the first client that asks (moved in: released on return). */
FERRY_EXPORT FerryErrorCode FerryDipcServerAddStream(struct FerryDipcServer* server,
                                                     const char* name,
                                                     struct ArrowDeviceArrayStream* stream,
                                                     struct FerryError* error);
/** Serve the IPC stream or file at `path` under `name` from memory of its own: its bodies are
 * written there once, now, and every client gets them without a copy: lent (body type 1) or sent
 * whole from there (type 0); memory: the file's body bytes until the server is released. That
 * memory has its own URI
 * (FerryDipcServerUri with this name). */
FERRY_EXPORT FerryErrorCode FerryDipcServerKeepPath(struct FerryDipcServer* server,
                                                    const char* name, const char* path,
                                                    struct FerryError* error);
/** The URI clients read dataset `name` with (NULL: datasets served from the shared region), both
 * streams on one connection, written NUL-terminated into `out` (ERANGE when too small). */
FERRY_EXPORT FerryErrorCode FerryDipcServerUri(const struct FerryDipcServer* server,
                                               const char* name, char* out, size_t out_size,
                                               struct FerryError* error);
/** The split shape's metadata URI and data URI for `name` (FerryDipcConnectTwo); written like
 * FerryDipcServerUri. */
FERRY_EXPORT FerryErrorCode FerryDipcServerMetadataUri(const struct FerryDipcServer* server,
                                                       const char* name, char* out, size_t out_size,
                                                       struct FerryError* error);
FERRY_EXPORT FerryErrorCode FerryDipcServerDataUri(const struct FerryDipcServer* server,
                                                   const char* name, char* out, size_t out_size,
                                                   struct FerryError* error);
/** Stop the server, close every session and free it. NULL is ignored. */
FERRY_EXPORT void FerryDipcServerRelease(struct FerryDipcServer* server);

/** Memory of a server's shared region, for a producer that writes its batches where clients
 * read them (Server::region_allocator, docs/dipc.md); opaque. It keeps the region mapped until
 * released, also after the server is. */
struct FerryDipcRegion;

/** The shared region of `server`, to allocate from (EINVAL where bodies are packed: there is no
 * region). Release it with FerryDipcRegionRelease once every block taken from it is freed. */
FERRY_EXPORT FerryErrorCode FerryDipcServerRegion(struct FerryDipcServer* server,
                                                  struct FerryDipcRegion** out,
                                                  struct FerryError* error);
/** A block of `size` bytes of the region, 64-byte aligned, in `*out`. A batch whose every buffer
 * lies in such blocks is lent to its client where it lies, not copied, and released (on one of
 * the server's threads) once that client frees it or goes. Waits up to the server's timeout for
 * room (ETIMEDOUT); ENOMEM for a size that can never fit. Thread-safe. */
FERRY_EXPORT FerryErrorCode FerryDipcRegionAllocate(struct FerryDipcRegion* region, int64_t size,
                                                    void** out, struct FerryError* error);
/** Give back a block FerryDipcRegionAllocate gave (any thread). NULL `data` is ignored. */
FERRY_EXPORT void FerryDipcRegionFree(struct FerryDipcRegion* region, void* data, int64_t size);
/** Drop the handle (after every block taken from it is freed). NULL is ignored. */
FERRY_EXPORT void FerryDipcRegionRelease(struct FerryDipcRegion* region);

/** UCX connections a client keeps between its streams (dipc::ConnectionPool); opaque. A stream
 * connected with it (FerryDipcClientOptions::pool) takes an idle connection to the same server
 * with the same options, and gives its connection back once read to its end when it was lent
 * nothing (a ucx:// URI with ferry=1, packed bodies). Each idle connection holds a UCX worker and
 * a sleeping thread. Thread-safe. */
struct FerryDipcConnectionPool;

/** A pool that keeps a connection idle for at most `max_idle_ms` (0: 10 s) and at most
 * `per_server` for each server and options (0: 4). EINVAL for a negative argument. */
FERRY_EXPORT FerryErrorCode FerryDipcConnectionPoolCreate(int64_t max_idle_ms, int32_t per_server,
                                                          struct FerryDipcConnectionPool** out,
                                                          struct FerryError* error);
/** Idle connections held now (those idle past max_idle are closed first); 0 for NULL. */
FERRY_EXPORT int64_t FerryDipcConnectionPoolIdle(struct FerryDipcConnectionPool* pool);
/** Close every idle connection now. NULL is ignored. */
FERRY_EXPORT void FerryDipcConnectionPoolClear(struct FerryDipcConnectionPool* pool);
/** Drop the handle: its idle connections close once no stream given the pool is left (a stream
 * that outlives the handle still gives its connection back safely). NULL is ignored. */
FERRY_EXPORT void FerryDipcConnectionPoolRelease(struct FerryDipcConnectionPool* pool);

/** How a client reads: where batches land (NULL: the CPU), how long the server may stay silent
 * (0: 30 s), the largest metadata message and body taken from it (0: 64 MiB and 4 GiB), and
 * whether it paces a ferry server: with `paced` set, the server sends at most `window` batches
 * beyond those read (ClientOptions::window; 0 and 0: ClientOptions' default, unpaced but over
 * ucx:// with ferry=1, where it is 256). `pool` (NULL: none) keeps UCX connections between
 * streams; `connect_timeout_ms` (0: the timeout) bounds setting up a connection, and on a kept
 * connection the wait for the schema (ClientOptions::connect_timeout). Zero-initialise it, so
 * that fields added later keep their defaults. */
struct FerryDipcClientOptions {
  const struct FerryDevice* device;
  int64_t timeout_ms;
  int64_t max_metadata_bytes;
  int64_t max_body_bytes;
  int paced;
  int64_t window;
  struct FerryDipcConnectionPool* pool;
  int64_t connect_timeout_ms;
};

/** Connect to `uri`, ask for `ticket` and fill `out` with the stream of its batches, which land on
 * `device` (NULL: the CPU). Validation of what arrives is full. A refused ticket, an unreachable
 * or dead server fails here (with the server's words when the URI carries ferry=1). */
FERRY_EXPORT FerryErrorCode FerryDipcConnect(const char* uri, const char* ticket,
                                             const struct FerryDevice* device,
                                             struct ArrowDeviceArrayStream* out,
                                             struct FerryError* error);
/** As FerryDipcConnect, in the split shape: metadata from `uri` and bodies (and free_data) from
 * `data_uri` (FerryDipcServerMetadataUri and FerryDipcServerDataUri). */
FERRY_EXPORT FerryErrorCode FerryDipcConnectTwo(const char* uri, const char* data_uri,
                                                const char* ticket,
                                                const struct FerryDevice* device,
                                                struct ArrowDeviceArrayStream* out,
                                                struct FerryError* error);
/** As FerryDipcConnect (or FerryDipcConnectTwo when `data_uri` is not NULL), with `options`
 * (NULL: the defaults). */
FERRY_EXPORT FerryErrorCode FerryDipcConnectWith(const char* uri, const char* data_uri,
                                                 const char* ticket,
                                                 const struct FerryDipcClientOptions* options,
                                                 struct ArrowDeviceArrayStream* out,
                                                 struct FerryError* error);

#ifdef __cplusplus
}
#endif

#endif /* FERRY_CAPI_DIPC_H */
