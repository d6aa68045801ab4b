/* ferry's Arrow Flight from C: a client (connect with a URI, a token and TLS roots; list, info,
 * schema, get following the locations, DoGet, put, actions) and a small server (flights from IPC
 * files, on gRPC and the shared-memory and UCX planes). Conventions as in ferry/capi/ferry.h:
 * errno-style codes, an optional struct FerryError*. */
#ifndef FERRY_CAPI_FLIGHT_H
#define FERRY_CAPI_FLIGHT_H

#include "ferry/capi/ferry.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How a client connects. Every field may be NULL or 0 (the default): the bearer token sent on
 * every call, PEM text of the certificates to trust for grpc+tls (NULL: the system's), a client
 * certificate and key, the name the server's certificate must carry (NULL: the URI's host), and
 * each call's deadline (0: 30 s). */
struct FerryFlightClientOptions {
  const char* token;
  const char* tls_roots;
  const char* tls_cert;
  const char* tls_key;
  const char* tls_server_name;
  int64_t timeout_ms;
};

/** Which location FerryFlightGet reads from: the fastest that works, or only the one named. */
enum FerryFlightVia {
  FERRY_FLIGHT_VIA_AUTO = 0,
  FERRY_FLIGHT_VIA_SHM = 1,
  FERRY_FLIGHT_VIA_UCX = 2,
  FERRY_FLIGHT_VIA_GRPC = 3
};

/** A connection to a Flight server (thread-safe), released with FerryFlightClientRelease. */
struct FerryFlightClient;
/** A FlightInfo (or a list of them), released with FerryFlightInfoRelease. */
struct FerryFlightInfo;
/** The result bodies of an action, released with FerryFlightResultsRelease. */
struct FerryFlightResults;

/** Connect to grpc://HOST:PORT, grpc+tls://HOST:PORT or grpc+unix:///PATH (lazily: an absent
 * server fails the first call). `options` may be NULL. */
FERRY_EXPORT FerryErrorCode FerryFlightConnect(const char* uri,
                                               const struct FerryFlightClientOptions* options,
                                               struct FerryFlightClient** out,
                                               struct FerryError* error);
FERRY_EXPORT void FerryFlightClientRelease(struct FerryFlightClient* client);

/** Every flight the server lists, as one FerryFlightInfo holding FerryFlightInfoCount of them. */
FERRY_EXPORT FerryErrorCode FerryFlightListFlights(struct FerryFlightClient* client,
                                                   struct FerryFlightInfo** out,
                                                   struct FerryError* error);
/** GetFlightInfo for the path descriptor [path]: a FerryFlightInfo holding one flight. */
FERRY_EXPORT FerryErrorCode FerryFlightGetInfo(struct FerryFlightClient* client, const char* path,
                                               struct FerryFlightInfo** out,
                                               struct FerryError* error);
/** How many flights `info` holds. */
FERRY_EXPORT size_t FerryFlightInfoCount(const struct FerryFlightInfo* info);
/** Flight `i`'s name (its path's elements joined by '/'; "" for a command), record and byte
 * counts (-1: unknown) and number of endpoints. Strings live as long as `info`. */
FERRY_EXPORT const char* FerryFlightInfoPath(const struct FerryFlightInfo* info, size_t i);
FERRY_EXPORT int64_t FerryFlightInfoTotalRecords(const struct FerryFlightInfo* info, size_t i);
FERRY_EXPORT int64_t FerryFlightInfoTotalBytes(const struct FerryFlightInfo* info, size_t i);
FERRY_EXPORT size_t FerryFlightInfoEndpoints(const struct FerryFlightInfo* info, size_t i);
/** Endpoint `e` of flight `i`: its ticket (`*size` bytes, which may include NULs), its number of
 * locations, location `l`'s URI, and its expiration in nanoseconds since the Unix epoch (0: the
 * server gave none). NULL or 0 for an index out of range. */
FERRY_EXPORT const char* FerryFlightInfoTicket(const struct FerryFlightInfo* info, size_t i,
                                               size_t e, size_t* size);
FERRY_EXPORT size_t FerryFlightInfoLocations(const struct FerryFlightInfo* info, size_t i,
                                             size_t e);
FERRY_EXPORT const char* FerryFlightInfoLocation(const struct FerryFlightInfo* info, size_t i,
                                                 size_t e, size_t l);
FERRY_EXPORT int64_t FerryFlightInfoExpiration(const struct FerryFlightInfo* info, size_t i,
                                               size_t e);
/** Flight `i`'s app_metadata (`*size` bytes; "" when it has none): a federated server started
 * with allow_partial names there, as JSON, the peers that did not answer. NULL out of range. */
FERRY_EXPORT const char* FerryFlightInfoAppMetadata(const struct FerryFlightInfo* info, size_t i,
                                                    size_t* size);
/** Flight `i`'s schema, decoded into `out` (the caller releases it). */
FERRY_EXPORT FerryErrorCode FerryFlightInfoSchema(const struct FerryFlightInfo* info, size_t i,
                                                  struct ArrowSchema* out,
                                                  struct FerryError* error);
FERRY_EXPORT void FerryFlightInfoRelease(struct FerryFlightInfo* info);

/** GetSchema for [path], decoded into `out`. */
FERRY_EXPORT FerryErrorCode FerryFlightGetSchema(struct FerryFlightClient* client, const char* path,
                                                 struct ArrowSchema* out, struct FerryError* error);
/** Read flight [path] following its locations (shared memory on this host, then UCX, then DoGet),
 * or only `via` (a FerryFlightVia), into a stream whose batches land on `device` (NULL: the CPU),
 * fully validated. The URI read from is written to `location` when it is not NULL (truncated to
 * `location_size`). */
FERRY_EXPORT FerryErrorCode FerryFlightGet(struct FerryFlightClient* client, const char* path,
                                           int via, const struct FerryDevice* device,
                                           struct ArrowDeviceArrayStream* out, char* location,
                                           size_t location_size, struct FerryError* error);
/** DoGet with a ticket of `ticket_size` bytes on this server. */
FERRY_EXPORT FerryErrorCode FerryFlightDoGet(struct FerryFlightClient* client, const char* ticket,
                                             size_t ticket_size, const struct FerryDevice* device,
                                             struct ArrowDeviceArrayStream* out,
                                             struct FerryError* error);
/** Upload `stream` (consumed) as flight [path] with DoPut; returns once the server stored it. */
FERRY_EXPORT FerryErrorCode FerryFlightPut(struct FerryFlightClient* client, const char* path,
                                           struct ArrowArrayStream* stream,
                                           struct FerryError* error);
/** DoAction `type` with a body of `body_size` bytes; the result bodies go to `*out`. */
FERRY_EXPORT FerryErrorCode FerryFlightAction(struct FerryFlightClient* client, const char* type,
                                              const char* body, size_t body_size,
                                              struct FerryFlightResults** out,
                                              struct FerryError* error);
FERRY_EXPORT size_t FerryFlightResultsCount(const struct FerryFlightResults* results);
/** Result `i`'s body (`*size` bytes), or NULL out of range. */
FERRY_EXPORT const char* FerryFlightResultsAt(const struct FerryFlightResults* results, size_t i,
                                              size_t* size);
FERRY_EXPORT void FerryFlightResultsRelease(struct FerryFlightResults* results);

/** Flight's SetSessionOptions with one option, `name` set to the text `value` (NULL or "" removes
 * it): opens a session when the client holds none (its cookie is sent on every later call to
 * this server, DoGet's too). EINVAL naming the option when the server refuses it (an unknown
 * name, a value of the wrong type or range). Reads then take the session's body_type,
 * parallelism and target_device, and DoGet its compression. */
FERRY_EXPORT FerryErrorCode FerryFlightSetSessionOption(struct FerryFlightClient* client,
                                                        const char* name, const char* value,
                                                        struct FerryError* error);
/** Flight's GetSessionOptions: `*out` holds two results per option, its name (2 i) then its value
 * as text (2 i + 1); none without a session. */
FERRY_EXPORT FerryErrorCode FerryFlightGetSessionOptions(struct FerryFlightClient* client,
                                                         struct FerryFlightResults** out,
                                                         struct FerryError* error);
/** Flight's CloseSession: the server ends the session and the client forgets its cookie. */
FERRY_EXPORT FerryErrorCode FerryFlightCloseSession(struct FerryFlightClient* client,
                                                    struct FerryError* error);

/** A Flight server: gRPC on `listen` (HOST:PORT, port 0: a free one) and the shared-memory and
 * UCX planes; every call must carry `token` when it is not NULL or empty. */
struct FerryFlightServer;
FERRY_EXPORT FerryErrorCode FerryFlightServerStart(const char* listen, const char* token,
                                                   struct FerryFlightServer** out,
                                                   struct FerryError* error);
/** How FerryFlightServerStartWith starts a server. Every field may be NULL or 0 (the default):
 * where gRPC listens (NULL: 127.0.0.1:0) and the token every call must carry, as for
 * FerryFlightServerStart; the server's TLS certificate chain and key (PEM text; both NULL: plain
 * gRPC); federation: `peer_count` other Flight servers (grpc:// or grpc+tls:// URIs) whose
 * flights this server lists and describes with its own, how long a peer may take to answer
 * (0: 2000 ms), whether a peer that does not answer is left out and named in the FlightInfo's
 * app_metadata (nonzero) rather than failing the call with UNAVAILABLE naming it (0), and the
 * certificates to trust for grpc+tls peers (PEM text; NULL: the system's). */
struct FerryFlightServerOptions {
  const char* listen;
  const char* token;
  const char* tls_cert;
  const char* tls_key;
  const char* const* peers;
  size_t peer_count;
  int64_t peer_timeout_ms;
  int allow_partial;
  const char* peer_tls_roots;
};
/** Start a Flight server with `options` (NULL: every default); EINVAL names a bad field (a NULL
 * peer, a peer URI that is not grpc:// or grpc+tls://, a negative timeout). */
FERRY_EXPORT FerryErrorCode
FerryFlightServerStartWith(const struct FerryFlightServerOptions* options,
                           struct FerryFlightServer** out, struct FerryError* error);
/** Serve an IPC stream or file as flight `name`. */
FERRY_EXPORT FerryErrorCode FerryFlightServerAddPath(struct FerryFlightServer* server,
                                                     const char* name, const char* path,
                                                     struct FerryError* error);
/** Serve `count` IPC streams or files as one flight `name` with one endpoint per file, in this
 * order, each file cut further into endpoints of whole batches of at most `partition_bytes` body
 * bytes when it is positive. The files' schemas must be equal (EINVAL naming the file). */
FERRY_EXPORT FerryErrorCode FerryFlightServerAddPaths(struct FerryFlightServer* server,
                                                      const char* name, const char* const* paths,
                                                      size_t count, int64_t partition_bytes,
                                                      struct FerryError* error);
/** The server's grpc:// URI with the port bound, written to `out` (ERANGE if it does not fit). */
FERRY_EXPORT FerryErrorCode FerryFlightServerUri(const struct FerryFlightServer* server, char* out,
                                                 size_t out_size, struct FerryError* error);
/** Stop the server and its planes. */
FERRY_EXPORT void FerryFlightServerRelease(struct FerryFlightServer* server);

#ifdef __cplusplus
}
#endif

#endif /* FERRY_CAPI_FLIGHT_H */
