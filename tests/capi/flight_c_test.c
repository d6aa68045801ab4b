/* ferry's Flight from plain C99: a server with a token started through the C surface, a client
 * that lists, describes, reads over every location (checking the sum of the values read), uploads
 * and drops, and the errors a wrong token, an unknown flight and bad arguments give. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c_support.h"
#include "ferry/capi/ferry.h"
#include "ferry/capi/flight.h"

/* Read every batch of a one-int64-column stream: rows and the sum of the values. */
static void DrainSum(struct ArrowDeviceArrayStream* stream, int64_t* rows, int64_t* sum) {
  struct ArrowDeviceArray batch;
  *rows = 0;
  *sum = 0;
  for (;;) {
    CHECK(stream->get_next(stream, &batch) == 0);
    if (batch.array.release == NULL) break;
    CHECK(batch.device_type == ARROW_DEVICE_CPU && batch.array.n_children == 1);
    for (int64_t i = 0; i < batch.array.length; ++i) {
      *sum += ((const int64_t*)batch.array.children[0]->buffers[1])[i];
    }
    *rows += batch.array.length;
    batch.array.release(&batch.array);
  }
}

/* A stream of two batches: 1, 20 and 300. */
static void MakeStream(struct ArrowArrayStream* stream) {
  struct ArrowSchema child = MakeSchema("l");
  struct ArrowSchema* children[1] = {&child};
  struct ArrowSchema root = MakeSchema("+s");
  struct ArrowSchema owned;
  struct ArrowArray batches[2];
  struct FerryError error;
  root.n_children = 1;
  root.children = children;
  CHECK(FerrySchemaDeepCopy(&root, &owned, &error) == 0);
  CHECK(FerryArrayFromJson(&owned, "[{\"s\": 1}, {\"s\": 20}]", &batches[0], &error) == 0);
  CHECK(FerryArrayFromJson(&owned, "[{\"s\": 300}]", &batches[1], &error) == 0);
  CHECK(FerryArrayStreamInit(stream, &owned, 2, batches, &error) == 0);
}

int main(void) {
  struct FerryFlightServer* server = NULL;
  struct FerryFlightClient* client = NULL;
  struct FerryFlightClient* anonymous = NULL;
  struct FerryFlightInfo* info = NULL;
  struct FerryFlightResults* results = NULL;
  struct FerryFlightClientOptions options = {"s3cret", NULL, NULL, NULL, NULL, 10000};
  struct FerryIpcWriteOptions write = {
      FERRY_IPC_FORMAT_STREAM, FERRY_IPC_COMPRESSION_NONE, 0, 8, 0, 0};
  struct ArrowArrayStream stream;
  struct ArrowDeviceArrayStream got;
  struct ArrowSchema schema;
  struct FerryError error;
  char uri[256];
  char location[512];
  char path[64];
  const char* ticket = NULL;
  size_t ticket_size = 0;
  int64_t rows = 0;
  int64_t sum = 0;
  int via;
  int rc;

  MakeStream(&stream);
  snprintf(path, sizeof(path), "/tmp/ferry-c-flight-%d.arrows", (int)getpid());
  CHECK(FerryIpcWritePath(&stream, path, &write, &error) == 0);

  CHECK(FerryFlightServerStart("127.0.0.1:0", "s3cret", &server, &error) == 0);
  CHECK(FerryFlightServerAddPath(server, "t", path, &error) == 0);
  CHECK(FerryFlightServerAddPath(server, "u", "/no/such/file", &error) == ENOENT);
  {
    /* Flight p: the file twice, one endpoint each; flight q: the file three times, each cut at
     * 1 byte into endpoints of one whole batch (the file holds two). */
    const char* parts[3] = {path, path, path};
    const char* bad[2] = {path, NULL};
    CHECK(FerryFlightServerAddPaths(server, "p", parts, 2, 0, &error) == 0);
    CHECK(FerryFlightServerAddPaths(server, "q", parts, 3, 1, &error) == 0);
    CHECK(FerryFlightServerAddPaths(server, "r", bad, 2, 0, &error) == EINVAL);
    CHECK(strstr(error.message, "path 1 is NULL") != NULL);
    CHECK(FerryFlightServerAddPaths(server, "p", parts, 1, 0, &error) == EEXIST);
  }
  CHECK(FerryFlightServerUri(server, uri, sizeof(uri), &error) == 0);
  CHECK(strncmp(uri, "grpc://127.0.0.1:", 17) == 0);
  CHECK(FerryFlightServerUri(server, uri, 4, &error) == ERANGE);
  CHECK(FerryFlightServerUri(server, uri, sizeof(uri), &error) == 0);

  CHECK(FerryFlightConnect(uri, NULL, &anonymous, &error) == 0);
  CHECK(FerryFlightListFlights(anonymous, &info, &error) == EPERM);
  CHECK(strstr(error.message, "UNAUTHENTICATED") != NULL);
  CHECK(info == NULL);
  FerryFlightClientRelease(anonymous);

  CHECK(FerryFlightConnect(uri, &options, &client, &error) == 0);
  CHECK(FerryFlightListFlights(client, &info, &error) == 0);
  CHECK(FerryFlightInfoCount(info) == 3);
  CHECK(strcmp(FerryFlightInfoPath(info, 0), "p") == 0);
  CHECK(FerryFlightInfoTotalRecords(info, 0) == 6);
  CHECK(FerryFlightInfoEndpoints(info, 0) == 2);
  CHECK(strcmp(FerryFlightInfoPath(info, 1), "q") == 0);
  CHECK(FerryFlightInfoEndpoints(info, 1) == 6);
  CHECK(strcmp(FerryFlightInfoPath(info, 2), "t") == 0);
  CHECK(FerryFlightInfoTotalRecords(info, 2) == 3);
  CHECK(FerryFlightInfoEndpoints(info, 2) == 1);
  FerryFlightInfoRelease(info);

  CHECK(FerryFlightGetInfo(client, "t", &info, &error) == 0);
  ticket = FerryFlightInfoTicket(info, 0, 0, &ticket_size);
  CHECK(ticket != NULL && ticket_size == 32);
  CHECK(FerryFlightInfoLocations(info, 0, 0) >= 2);
  CHECK(strncmp(FerryFlightInfoLocation(info, 0, 0, 0), "shm://", 6) == 0);
  CHECK(strcmp(FerryFlightInfoLocation(info, 0, 0, FerryFlightInfoLocations(info, 0, 0) - 1),
               "arrow-flight-reuse-connection://?") == 0);
  CHECK(FerryFlightInfoLocation(info, 0, 0, 99) == NULL);
  CHECK(FerryFlightInfoTicket(info, 0, 5, &ticket_size) == NULL && ticket_size == 0);
  CHECK(FerryFlightInfoExpiration(info, 0, 0) > 1700000000LL * 1000000000LL);
  CHECK(FerryFlightInfoSchema(info, 0, &schema, &error) == 0);
  CHECK(strcmp(schema.format, "+s") == 0 && schema.n_children == 1);
  schema.release(&schema);
  CHECK(FerryFlightInfoSchema(info, 3, &schema, &error) == ERANGE);
  ticket = FerryFlightInfoTicket(info, 0, 0, &ticket_size);
  CHECK(FerryFlightDoGet(client, ticket, ticket_size, NULL, &got, &error) == 0);
  DrainSum(&got, &rows, &sum);
  CHECK(rows == 3 && sum == 321);
  got.release(&got);
  FerryFlightInfoRelease(info);

  for (via = FERRY_FLIGHT_VIA_AUTO; via <= FERRY_FLIGHT_VIA_GRPC; ++via) {
    location[0] = '\0';
    CHECK(FerryFlightGet(client, "t", via, NULL, &got, location, sizeof(location), &error) == 0);
    CHECK(strlen(location) > 6);
    if (via == FERRY_FLIGHT_VIA_AUTO || via == FERRY_FLIGHT_VIA_SHM) {
      CHECK(strncmp(location, "shm://", 6) == 0);
    }
    if (via == FERRY_FLIGHT_VIA_UCX) CHECK(strncmp(location, "ucx://", 6) == 0);
    if (via == FERRY_FLIGHT_VIA_GRPC) CHECK(strncmp(location, "grpc://", 7) == 0);
    DrainSum(&got, &rows, &sum);
    CHECK(rows == 3 && sum == 321);
    got.release(&got);
  }
  CHECK(FerryFlightGet(client, "t", 9, NULL, &got, NULL, 0, &error) == EINVAL);
  CHECK(FerryFlightGet(client, "nope", 0, NULL, &got, NULL, 0, &error) == ENOENT);
  CHECK(strstr(error.message, "no flight named \"nope\"") != NULL);
  CHECK(FerryFlightGetSchema(client, "t", &schema, &error) == 0);
  schema.release(&schema);

  MakeStream(&stream);
  CHECK(FerryFlightPut(client, "up", &stream, &error) == 0);
  CHECK(stream.release == NULL);
  CHECK(FerryFlightGet(client, "up", FERRY_FLIGHT_VIA_GRPC, NULL, &got, NULL, 0, &error) == 0);
  DrainSum(&got, &rows, &sum);
  CHECK(rows == 3 && sum == 321);
  got.release(&got);
  /* The stream above has ended, so the flight has no reader left: the drop is not refused. */
  rc = FerryFlightAction(client, "drop", "up", 2, &results, &error);
  if (rc != 0) fprintf(stderr, "drop: %s\n", error.message);
  CHECK(rc == 0);
  if (rc == 0) {
    CHECK(FerryFlightResultsCount(results) == 1);
    CHECK(strncmp(FerryFlightResultsAt(results, 0, &ticket_size), "dropped up", 10) == 0);
    CHECK(FerryFlightResultsAt(results, 1, &ticket_size) == NULL);
    FerryFlightResultsRelease(results);
  }
  CHECK(FerryFlightAction(client, "drop", "up", 2, &results, &error) == ENOENT);

  /* Flight sessions: an option set opens one, a refused one is named, the options read back as
   * the server holds them (parallelism normalised to an integer), CloseSession ends it. */
  CHECK(FerryFlightSetSessionOption(client, "parallelism", "2", &error) == 0);
  CHECK(FerryFlightSetSessionOption(client, "colour", "blue", &error) == EINVAL);
  CHECK(strstr(error.message, "\"colour\" (INVALID_NAME)") != NULL);
  CHECK(FerryFlightSetSessionOption(client, "compression", "zstd", &error) == 0);
  CHECK(FerryFlightGetSessionOptions(client, &results, &error) == 0);
  CHECK(FerryFlightResultsCount(results) == 4);
  CHECK(strncmp(FerryFlightResultsAt(results, 0, &ticket_size), "compression", 11) == 0);
  CHECK(strncmp(FerryFlightResultsAt(results, 1, &ticket_size), "zstd", 4) == 0);
  CHECK(strncmp(FerryFlightResultsAt(results, 2, &ticket_size), "parallelism", 11) == 0);
  CHECK(strncmp(FerryFlightResultsAt(results, 3, &ticket_size), "2", 1) == 0 && ticket_size == 1);
  FerryFlightResultsRelease(results);
  CHECK(FerryFlightGet(client, "t", FERRY_FLIGHT_VIA_GRPC, NULL, &got, NULL, 0, &error) == 0);
  DrainSum(&got, &rows, &sum);
  CHECK(rows == 3 && sum == 321);
  got.release(&got);
  CHECK(FerryFlightCloseSession(client, &error) == 0);
  CHECK(FerryFlightGetSessionOptions(client, &results, &error) == 0);
  CHECK(FerryFlightResultsCount(results) == 0);
  FerryFlightResultsRelease(results);
  CHECK(FerryFlightCloseSession(client, &error) == ENOENT);
  CHECK(FerryFlightPut(client, "x", NULL, &error) == EINVAL);
  CHECK(FerryFlightConnect("nonsense", NULL, &anonymous, &error) == EINVAL);
  CHECK(FerryFlightConnect(NULL, NULL, &anonymous, &error) == EINVAL);

  {
    /* Federation: a second server lists the first as its peer; its flight t is the union (its
     * own endpoint first, then the peer's), and a read of it sums both. A third lists a peer
     * where nothing listens: with allow_partial it answers and names the peer in app_metadata,
     * without it the call fails naming the peer. */
    struct FerryFlightServer* second = NULL;
    struct FerryFlightServer* partial = NULL;
    struct FerryFlightServer* strict = NULL;
    struct FerryFlightServer* refused = NULL;
    struct FerryFlightClient* to_second = NULL;
    struct FerryFlightClient* to_partial = NULL;
    struct FerryFlightClient* to_strict = NULL;
    const char* peers[1] = {uri};
    const char* dead[1] = {"grpc://127.0.0.1:1"};
    const char* null_peer[1] = {NULL};
    struct FerryFlightServerOptions fed = {NULL, "s3cret", NULL, NULL, peers, 1, 5000, 0, NULL};
    struct FerryFlightServerOptions lax = {NULL, "s3cret", NULL, NULL, dead, 1, 500, 1, NULL};
    struct FerryFlightServerOptions tight = {NULL, "s3cret", NULL, NULL, dead, 1, 500, 0, NULL};
    struct FerryFlightServerOptions bad = {NULL, NULL, NULL, NULL, null_peer, 1, 0, 0, NULL};
    char second_uri[256];
    const char* note;
    size_t note_size = 0;

    CHECK(FerryFlightServerStartWith(&fed, &second, &error) == 0);
    CHECK(FerryFlightServerAddPath(second, "t", path, &error) == 0);
    CHECK(FerryFlightServerUri(second, second_uri, sizeof(second_uri), &error) == 0);
    CHECK(FerryFlightConnect(second_uri, &options, &to_second, &error) == 0);
    CHECK(FerryFlightGetInfo(to_second, "t", &info, &error) == 0);
    CHECK(FerryFlightInfoEndpoints(info, 0) == 2);
    CHECK(FerryFlightInfoTotalRecords(info, 0) == 6);
    note = FerryFlightInfoAppMetadata(info, 0, &note_size);
    CHECK(note != NULL && note_size == 0);
    CHECK(FerryFlightInfoAppMetadata(info, 1, &note_size) == NULL && note_size == 0);
    FerryFlightInfoRelease(info);
    CHECK(FerryFlightGet(to_second, "t", FERRY_FLIGHT_VIA_AUTO, NULL, &got, NULL, 0, &error) == 0);
    DrainSum(&got, &rows, &sum);
    CHECK(rows == 6 && sum == 642);
    got.release(&got);

    CHECK(FerryFlightServerStartWith(&lax, &partial, &error) == 0);
    CHECK(FerryFlightServerAddPath(partial, "t", path, &error) == 0);
    CHECK(FerryFlightServerUri(partial, second_uri, sizeof(second_uri), &error) == 0);
    CHECK(FerryFlightConnect(second_uri, &options, &to_partial, &error) == 0);
    CHECK(FerryFlightGetInfo(to_partial, "t", &info, &error) == 0);
    CHECK(FerryFlightInfoEndpoints(info, 0) == 1);
    note = FerryFlightInfoAppMetadata(info, 0, &note_size);
    CHECK(note != NULL && note_size > 0 && strstr(note, "grpc://127.0.0.1:1") != NULL);
    FerryFlightInfoRelease(info);

    CHECK(FerryFlightServerStartWith(&tight, &strict, &error) == 0);
    CHECK(FerryFlightServerAddPath(strict, "t", path, &error) == 0);
    CHECK(FerryFlightServerUri(strict, second_uri, sizeof(second_uri), &error) == 0);
    CHECK(FerryFlightConnect(second_uri, &options, &to_strict, &error) == 0);
    CHECK(FerryFlightGetInfo(to_strict, "t", &info, &error) != 0);
    CHECK(info == NULL);
    CHECK(strstr(error.message, "UNAVAILABLE") != NULL);
    CHECK(strstr(error.message, "grpc://127.0.0.1:1") != NULL);

    CHECK(FerryFlightServerStartWith(&bad, &refused, &error) == EINVAL);
    CHECK(strstr(error.message, "peer 0 is NULL") != NULL);
    CHECK(refused == NULL);
    dead[0] = "http://nowhere";
    CHECK(FerryFlightServerStartWith(&lax, &refused, &error) == EINVAL);
    CHECK(strstr(error.message, "http://nowhere") != NULL);
    CHECK(refused == NULL);

    FerryFlightClientRelease(to_strict);
    FerryFlightClientRelease(to_partial);
    FerryFlightClientRelease(to_second);
    FerryFlightServerRelease(strict);
    FerryFlightServerRelease(partial);
    FerryFlightServerRelease(second);
  }

  FerryFlightClientRelease(client);
  FerryFlightServerRelease(server);
  FerryFlightServerRelease(NULL);
  remove(path);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
