/* The shared region's allocator from plain C99 (src/capi/dipc.cpp): a producer builds its
 * batches' buffers in a server's region, the server serves them from a C stream, a C client reads
 * the values back (checked by hand), and every batch is released, its blocks freed, by the time
 * the server is; a packed server has no region, and a block that cannot fit is refused at once. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_support.h"
#include "ferry/capi/ferry.h"

enum { kRows = 100, kBatches = 2 };

static struct FerryDipcRegion* g_region = NULL;
static int g_released[kBatches];

/* One batch, struct<x: int64> of kRows rows, whose values live in a block of the region. */
struct RegionBatch {
  struct ArrowArray child;
  struct ArrowArray* children[1];
  const void* buffers[1];
  const void* child_buffers[2];
  int64_t* values;
  int index;
};

static void ReleaseChild(struct ArrowArray* array) { array->release = NULL; }

static void ReleaseBatch(struct ArrowArray* array) {
  struct RegionBatch* b = (struct RegionBatch*)array->private_data;
  if (g_region != NULL) {
    FerryDipcRegionFree(g_region, b->values, kRows * (int64_t)sizeof(int64_t));
  } else {
    free(b->values);
  }
  g_released[b->index] = 1;
  free(b);
  array->release = NULL;
}

/* Batch `index`: x = 1000 * index + row, in a block of the region (of the C heap while there is
 * no region). */
static int MakeBatch(int index, struct ArrowArray* out) {
  struct FerryError error;
  struct RegionBatch* b = (struct RegionBatch*)calloc(1, sizeof(struct RegionBatch));
  void* block = NULL;
  int64_t row;
  if (b == NULL) return ENOMEM;
  if (g_region == NULL) {
    block = malloc(kRows * sizeof(int64_t));
    if (block == NULL) {
      free(b);
      return ENOMEM;
    }
  } else if (FerryDipcRegionAllocate(g_region, kRows * (int64_t)sizeof(int64_t), &block, &error) !=
             0) {
    fprintf(stderr, "FerryDipcRegionAllocate: %s\n", error.message);
    free(b);
    return EIO;
  }
  b->values = (int64_t*)block;
  for (row = 0; row < kRows; ++row) b->values[row] = 1000 * index + row;
  b->index = index;
  b->child_buffers[0] = NULL;
  b->child_buffers[1] = b->values;
  b->child.length = kRows;
  b->child.n_buffers = 2;
  b->child.buffers = b->child_buffers;
  b->child.release = &ReleaseChild;
  b->children[0] = &b->child;
  b->buffers[0] = NULL;
  memset(out, 0, sizeof(*out));
  out->length = kRows;
  out->n_buffers = 1;
  out->buffers = b->buffers;
  out->n_children = 1;
  out->children = b->children;
  out->private_data = b;
  out->release = &ReleaseBatch;
  return 0;
}

/* A device stream over kBatches batches built in the region. */
static void MakeStream(struct ArrowDeviceArrayStream* out) {
  struct ArrowSchema owned;
  struct ArrowArray arrays[kBatches];
  struct ArrowArrayStream stream;
  struct FerryError error;
  int i;
  OneColumnSchema("l", "x", 0, &owned);
  for (i = 0; i < kBatches; ++i) CHECK(MakeBatch(i, &arrays[i]) == 0);
  CHECK(FerryArrayStreamInit(&stream, &owned, kBatches, arrays, &error) == 0);
  CHECK(FerryDeviceBasicArrayStreamInit(out, &stream, FerryDeviceCpu(), &error) == 0);
}

static void TestLentFromTheRegion(void) {
  struct FerryDipcServerOptions options = {"shm",   NULL, FERRY_DIPC_BODY_BUFFER_LIST,
                                           1 << 20, 5000, 0};
  struct FerryDipcServer* server = NULL;
  struct ArrowDeviceArrayStream produced;
  struct ArrowDeviceArrayStream got;
  struct ArrowSchema schema;
  struct FerryError error;
  char uri[1024];
  void* block = NULL;
  int i;
  CHECK(FerryDipcServerStart(&options, &server, &error) == 0);
  CHECK(FerryDipcServerRegion(server, &g_region, &error) == 0);
  /* More than the whole region: refused at once, naming the size. */
  CHECK(FerryDipcRegionAllocate(g_region, 2 << 20, &block, &error) == ENOMEM);
  CHECK(block == NULL);
  CHECK(strstr(error.message, "2097152 bytes") != NULL);
  MakeStream(&produced);
  CHECK(FerryDipcServerAddStream(server, "t", &produced, &error) == 0);
  CHECK(FerryDipcServerUri(server, "t", uri, sizeof(uri), &error) == 0);
  CHECK(FerryDipcConnect(uri, "t", NULL, &got, &error) == 0);
  CHECK(got.get_schema(&got, &schema) == 0);
  schema.release(&schema);
  for (i = 0; i < kBatches; ++i) {
    struct ArrowDeviceArray batch;
    const int64_t* x;
    int64_t row;
    int wrong = 0;
    CHECK(got.get_next(&got, &batch) == 0);
    CHECK(batch.array.release != NULL && batch.array.length == kRows);
    if (batch.array.release == NULL) break;
    x = (const int64_t*)batch.array.children[0]->buffers[1];
    for (row = 0; row < kRows; ++row) wrong += x[row] != 1000 * i + row;
    CHECK(wrong == 0);
    batch.array.release(&batch.array);
  }
  {
    struct ArrowDeviceArray end;
    CHECK(got.get_next(&got, &end) == 0);
    CHECK(end.array.release == NULL);
  }
  got.release(&got);
  /* Stopping the server returns every loan: each batch is released, its block freed. */
  FerryDipcServerRelease(server);
  for (i = 0; i < kBatches; ++i) CHECK(g_released[i] == 1);
  FerryDipcRegionRelease(g_region);
  g_region = NULL;
}

static void TestAPackedServerHasNoRegion(void) {
  struct FerryDipcServerOptions options = {"shm", NULL, FERRY_DIPC_BODY_PACKED, 0, 0, 0};
  struct FerryDipcServer* server = NULL;
  struct FerryDipcRegion* region = NULL;
  struct FerryError error;
  CHECK(FerryDipcServerStart(&options, &server, &error) == 0);
  CHECK(FerryDipcServerRegion(server, &region, &error) == EINVAL);
  CHECK(region == NULL);
  CHECK(strstr(error.message, "no shared region") != NULL);
  CHECK(FerryDipcServerRegion(NULL, &region, &error) == EINVAL);
  FerryDipcServerRelease(server);
  FerryDipcRegionRelease(NULL);
}

/* Reads every batch of `got` and checks its values by hand; releases it. */
static void ReadAll(struct ArrowDeviceArrayStream* got) {
  struct ArrowSchema schema;
  int i;
  CHECK(got->get_schema(got, &schema) == 0);
  if (schema.release != NULL) schema.release(&schema);
  for (i = 0; i <= kBatches; ++i) {
    struct ArrowDeviceArray batch;
    int64_t row;
    int wrong = 0;
    CHECK(got->get_next(got, &batch) == 0);
    if (i == kBatches || batch.array.release == NULL) {
      CHECK(i == kBatches && batch.array.release == NULL); /* the end, after every batch */
      if (batch.array.release != NULL) batch.array.release(&batch.array);
      break;
    }
    CHECK(batch.array.length == kRows);
    for (row = 0; row < kRows; ++row) {
      wrong += ((const int64_t*)batch.array.children[0]->buffers[1])[row] != 1000 * i + row;
    }
    CHECK(wrong == 0);
    batch.array.release(&batch.array);
  }
  got->release(got);
}

/* A UCX server of packed bodies lends nothing, so a stream read to its end gives its connection
 * back to the pool, and the next stream to that server takes it: the pool still holds one idle
 * connection after the second stream, where a stream that connected anew would leave two. */
static void TestAPoolKeepsAUcxConnection(void) {
  struct FerryDipcServerOptions options = {"ucx", "127.0.0.1:0", FERRY_DIPC_BODY_PACKED,
                                           0,     5000,          0};
  struct FerryDipcClientOptions client;
  struct FerryDipcConnectionPool* pool = NULL;
  struct FerryDipcServer* server = NULL;
  struct ArrowDeviceArrayStream produced;
  struct ArrowDeviceArrayStream got;
  struct FerryError error;
  char uri[1024];
  const char* names[2] = {"a", "b"};
  int n;
  if (FerryDipcServerStart(&options, &server, &error) != 0) {
    CHECK(strstr(error.message, "UCX") != NULL); /* a build without UCX says so */
    printf("skipped: %s\n", error.message);
    return;
  }
  CHECK(FerryDipcConnectionPoolCreate(-1, 0, &pool, &error) == EINVAL);
  CHECK(pool == NULL && strstr(error.message, "max_idle_ms") != NULL);
  CHECK(FerryDipcConnectionPoolCreate(0, 0, &pool, &error) == 0);
  CHECK(FerryDipcConnectionPoolIdle(pool) == 0);
  memset(&client, 0, sizeof(client));
  client.pool = pool;
  client.connect_timeout_ms = 2000;
  for (n = 0; n < 2; ++n) {
    MakeStream(&produced);
    CHECK(FerryDipcServerAddStream(server, names[n], &produced, &error) == 0);
    CHECK(FerryDipcServerUri(server, names[n], uri, sizeof(uri), &error) == 0);
    CHECK(strstr(uri, "ucx://") == uri && strstr(uri, "ferry=1") != NULL);
    CHECK(FerryDipcConnectWith(uri, NULL, names[n], &client, &got, &error) == 0);
    ReadAll(&got);
    CHECK(FerryDipcConnectionPoolIdle(pool) == 1);
  }
  client.connect_timeout_ms = -1;
  CHECK(FerryDipcConnectWith(uri, NULL, "b", &client, &got, &error) == EINVAL);
  FerryDipcConnectionPoolClear(pool);
  CHECK(FerryDipcConnectionPoolIdle(pool) == 0);
  FerryDipcConnectionPoolRelease(pool);
  FerryDipcConnectionPoolRelease(NULL);
  CHECK(FerryDipcConnectionPoolIdle(NULL) == 0);
  FerryDipcServerRelease(server);
}

int main(void) {
  TestLentFromTheRegion();
  TestAPackedServerHasNoRegion();
  TestAPoolKeepsAUcxConnection();
  printf("%d checks passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
