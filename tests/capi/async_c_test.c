/* The async stream adapters from plain C99: ferry's producer over a device stream feeding
 * ferry's handler read back as a stream, the values checked by hand; a producer's error reaching
 * the reader with its code and message; releasing the reader cancelling the producer; and
 * refused arguments. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "c_support.h"
#include "ferry/capi/ferry.h"

/* A device stream of `n` batches of one int32 column "v": batch b is rows 100 * b, 100 * b + 1
 * and 100 * b + 2. */
static void MakeSource(struct ArrowDeviceArrayStream* out, int n) {
  struct ArrowSchema owned;
  struct ArrowArray arrays[8];
  struct ArrowArrayStream stream;
  struct FerryError error;
  char json[128];
  int b;
  OneColumnSchema("i", "v", ARROW_FLAG_NULLABLE, &owned);
  for (b = 0; b < n; ++b) {
    snprintf(json, sizeof(json), "[{\"v\": %d}, {\"v\": %d}, {\"v\": %d}]", 100 * b, 100 * b + 1,
             100 * b + 2);
    CHECK(FerryArrayFromJson(&owned, json, &arrays[b], &error) == 0);
  }
  CHECK(FerryArrayStreamInit(&stream, &owned, n, arrays, &error) == 0);
  CHECK(FerryDeviceBasicArrayStreamInit(out, &stream, FerryDeviceCpu(), &error) == 0);
}

/* A device stream that fails with EIO at its second batch, over a good one (in private_data). */
static int FailingGetSchema(struct ArrowDeviceArrayStream* self, struct ArrowSchema* out) {
  struct ArrowDeviceArrayStream* inner = (struct ArrowDeviceArrayStream*)self->private_data;
  return inner->get_schema(inner, out);
}
static int g_failing_calls = 0;
static int FailingGetNext(struct ArrowDeviceArrayStream* self, struct ArrowDeviceArray* out) {
  struct ArrowDeviceArrayStream* inner = (struct ArrowDeviceArrayStream*)self->private_data;
  if (++g_failing_calls == 2) return EIO;
  return inner->get_next(inner, out);
}
static const char* FailingLastError(struct ArrowDeviceArrayStream* self) {
  (void)self;
  return "the disk under batch 1 failed";
}
static void FailingRelease(struct ArrowDeviceArrayStream* self) {
  struct ArrowDeviceArrayStream* inner = (struct ArrowDeviceArrayStream*)self->private_data;
  inner->release(inner);
  self->release = NULL;
}

static void TestRoundTrip(void) {
  struct ArrowDeviceArrayStream source;
  struct ArrowAsyncDeviceStreamHandler handler;
  struct ArrowDeviceArrayStream reader;
  struct FerryAsyncProducer* producer = NULL;
  struct ArrowSchema schema;
  struct ArrowDeviceArray batch;
  struct FerryError error;
  int64_t requested = -1, pulled = -1, delivered = -1;
  int b = 0;

  MakeSource(&source, 5);
  CHECK(FerryAsyncHandlerToStream(&handler, &reader, 2, 0, 10000, &error) == 0);
  CHECK(FerryAsyncProducerFromStream(&source, &handler, &producer, &error) == 0);
  CHECK(source.release == NULL); /* moved in */
  CHECK(reader.get_schema(&reader, &schema) == 0);
  CHECK(strcmp(schema.format, "+s") == 0 && strcmp(schema.children[0]->name, "v") == 0);
  schema.release(&schema);
  for (;;) {
    const int32_t* values;
    CHECK(reader.get_next(&reader, &batch) == 0);
    if (batch.array.release == NULL) break;
    values = (const int32_t*)batch.array.children[0]->buffers[1];
    CHECK(batch.device_type == ARROW_DEVICE_CPU && batch.array.length == 3);
    CHECK(values[0] == 100 * b && values[2] == 100 * b + 2);
    batch.array.release(&batch.array);
    ++b;
  }
  CHECK(b == 5);
  CHECK(FerryAsyncProducerWait(producer, 10000, &error) == 0);
  FerryAsyncProducerCounters(producer, &requested, &pulled, &delivered);
  /* the queue ahead, then one per batch read (the last may come after the end, unasked) */
  CHECK(requested == 2 + 5 || requested == 2 + 4);
  CHECK(pulled <= requested && delivered == 5);
  FerryAsyncProducerFree(producer);
  reader.release(&reader);
}

static void TestError(void) {
  struct ArrowDeviceArrayStream inner;
  struct ArrowDeviceArrayStream source;
  struct ArrowAsyncDeviceStreamHandler handler;
  struct ArrowDeviceArrayStream reader;
  struct FerryAsyncProducer* producer = NULL;
  struct ArrowSchema schema;
  struct ArrowDeviceArray batch;
  struct FerryError error;

  MakeSource(&inner, 4);
  memset(&source, 0, sizeof(source));
  source.device_type = ARROW_DEVICE_CPU;
  source.get_schema = &FailingGetSchema;
  source.get_next = &FailingGetNext;
  source.get_last_error = &FailingLastError;
  source.release = &FailingRelease;
  source.private_data = &inner;
  CHECK(FerryAsyncHandlerToStream(&handler, &reader, 4, 0, 10000, &error) == 0);
  CHECK(FerryAsyncProducerFromStream(&source, &handler, &producer, &error) == 0);
  CHECK(reader.get_schema(&reader, &schema) == 0);
  schema.release(&schema);
  CHECK(reader.get_next(&reader, &batch) == 0 && batch.array.release != NULL);
  batch.array.release(&batch.array);
  CHECK(reader.get_next(&reader, &batch) == EIO);
  CHECK(strcmp(reader.get_last_error(&reader), "the disk under batch 1 failed") == 0);
  CHECK(FerryAsyncProducerWait(producer, 10000, &error) == EIO);
  CHECK(strstr(error.message, "the disk under batch 1 failed") != NULL);
  FerryAsyncProducerFree(producer);
  reader.release(&reader);
}

static void TestCancel(void) {
  struct ArrowDeviceArrayStream source;
  struct ArrowAsyncDeviceStreamHandler handler;
  struct ArrowDeviceArrayStream reader;
  struct FerryAsyncProducer* producer = NULL;
  struct ArrowDeviceArray batch;
  struct FerryError error;
  int64_t delivered = -1;

  MakeSource(&source, 8);
  CHECK(FerryAsyncHandlerToStream(&handler, &reader, 1, 0, 10000, &error) == 0);
  CHECK(FerryAsyncProducerFromStream(&source, &handler, &producer, &error) == 0);
  CHECK(reader.get_next(&reader, &batch) == 0 && batch.array.release != NULL);
  batch.array.release(&batch.array);
  reader.release(&reader); /* the reader leaves: the producer is cancelled */
  CHECK(FerryAsyncProducerWait(producer, 10000, &error) == 0);
  FerryAsyncProducerCounters(producer, NULL, NULL, &delivered);
  CHECK(delivered >= 1 && delivered <= 2); /* queue_size 1: the batch read and one more at most */
  FerryAsyncProducerFree(producer);
}

static void TestRefusals(void) {
  struct ArrowDeviceArrayStream source;
  struct ArrowAsyncDeviceStreamHandler empty;
  struct ArrowAsyncDeviceStreamHandler handler;
  struct ArrowDeviceArrayStream reader;
  struct FerryAsyncProducer* producer = NULL;
  struct FerryError error;

  memset(&empty, 0, sizeof(empty));
  MakeSource(&source, 1);
  CHECK(FerryAsyncProducerFromStream(&source, &empty, &producer, &error) == EINVAL);
  CHECK(strstr(error.message, "lacks a callback") != NULL);
  CHECK(source.release != NULL); /* a refused call leaves the stream with the caller */
  CHECK(FerryAsyncProducerFromStream(&source, NULL, &producer, &error) == EINVAL);
  CHECK(FerryAsyncProducerFromStream(NULL, &empty, &producer, &error) == EINVAL);
  source.release(&source);
  CHECK(FerryAsyncHandlerToStream(&handler, &reader, 0, 0, 10000, &error) == EINVAL);
  CHECK(strstr(error.message, "queue_size must be at least 1, got 0") != NULL);
  CHECK(FerryAsyncHandlerToStream(NULL, &reader, 1, 0, 10000, &error) == EINVAL);
  CHECK(FerryAsyncProducerWait(NULL, 1, &error) == EINVAL);
  FerryAsyncProducerFree(NULL);
}

/* A consumer's handler written in C: requests one batch at a time, from on_schema and from each
 * on_next_task, and keeps every batch's first value; checks no batch came unrequested. */
struct OneAtATime {
  int64_t requested;
  int64_t received;
  int64_t unrequested;
  int32_t firsts[16];
  int ended;
  int released;
  int error_code;
};
static int OatSchema(struct ArrowAsyncDeviceStreamHandler* self, struct ArrowSchema* schema) {
  struct OneAtATime* s = (struct OneAtATime*)self->private_data;
  schema->release(schema);
  s->requested += 1;
  self->producer->request(self->producer, 1);
  return 0;
}
static int OatNext(struct ArrowAsyncDeviceStreamHandler* self, struct ArrowAsyncTask* task,
                   const char* metadata) {
  struct OneAtATime* s = (struct OneAtATime*)self->private_data;
  struct ArrowDeviceArray batch;
  (void)metadata;
  if (task == NULL) {
    s->ended = 1;
    return 0;
  }
  if (task->extract_data(task, &batch) != 0) return EIO;
  if (++s->received > s->requested) ++s->unrequested;
  if (s->received <= 16) {
    s->firsts[s->received - 1] =
        ((const int32_t*)batch.array.children[0]->buffers[1])[batch.array.children[0]->offset];
  }
  batch.array.release(&batch.array);
  s->requested += 1;
  self->producer->request(self->producer, 1);
  return 0;
}
static void OatError(struct ArrowAsyncDeviceStreamHandler* self, int code, const char* message,
                     const char* metadata) {
  (void)message;
  (void)metadata;
  ((struct OneAtATime*)self->private_data)->error_code = code;
}
static void OatRelease(struct ArrowAsyncDeviceStreamHandler* self) {
  ((struct OneAtATime*)self->private_data)->released = 1;
}

/* A dipc server serves an async stream (through ferry's handler as a device stream), and a dipc
 * client's stream is produced as an async stream to a C handler: the data crosses both ways. */
static void TestDipc(void) {
  struct FerryDipcServerOptions server_options = {"shm",   NULL, FERRY_DIPC_BODY_BUFFER_LIST,
                                                  1 << 20, 5000, 0};
  struct FerryDipcServer* server = NULL;
  struct ArrowDeviceArrayStream source;
  struct ArrowDeviceArrayStream served;
  struct ArrowDeviceArrayStream client;
  struct ArrowAsyncDeviceStreamHandler to_server;
  struct ArrowAsyncDeviceStreamHandler from_client;
  struct FerryAsyncProducer* into_server = NULL;
  struct FerryAsyncProducer* out_of_client = NULL;
  struct OneAtATime seen;
  struct FerryError error;
  char uri[512];
  int b;

  memset(&seen, 0, sizeof(seen));
  CHECK(FerryDipcServerStart(&server_options, &server, &error) == 0);
  MakeSource(&source, 4);
  CHECK(FerryAsyncHandlerToStream(&to_server, &served, 2, 0, 10000, &error) == 0);
  CHECK(FerryAsyncProducerFromStream(&source, &to_server, &into_server, &error) == 0);
  CHECK(FerryDipcServerAddStream(server, "async", &served, &error) == 0);
  CHECK(FerryDipcServerUri(server, "async", uri, sizeof(uri), &error) == 0);
  if (FerryDipcConnect(uri, "async", NULL, &client, &error) != 0) {
    CHECK(!"FerryDipcConnect");
    fprintf(stderr, "FerryDipcConnect: %s\n", error.message);
    FerryAsyncProducerFree(into_server);
    FerryDipcServerRelease(server);
    return;
  }

  memset(&from_client, 0, sizeof(from_client));
  from_client.on_schema = &OatSchema;
  from_client.on_next_task = &OatNext;
  from_client.on_error = &OatError;
  from_client.release = &OatRelease;
  from_client.private_data = &seen;
  CHECK(FerryAsyncProducerFromStream(&client, &from_client, &out_of_client, &error) == 0);
  CHECK(FerryAsyncProducerWait(out_of_client, 10000, &error) == 0);
  CHECK(seen.released && seen.ended && seen.error_code == 0);
  CHECK(seen.received == 4 && seen.unrequested == 0);
  for (b = 0; b < 4; ++b) CHECK(seen.firsts[b] == 100 * b);
  CHECK(FerryAsyncProducerWait(into_server, 10000, &error) == 0);
  FerryAsyncProducerFree(out_of_client);
  FerryAsyncProducerFree(into_server);
  FerryDipcServerRelease(server);
}

int main(void) {
  TestRoundTrip();
  TestError();
  TestCancel();
  TestRefusals();
  TestDipc();
  printf("%d checks passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
