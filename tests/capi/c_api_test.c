/* The C surface, exercised from plain C99: format parsing and printing, arrays from JSON, graded
 * validation of a hand-corrupted array, JSON rendering, streams and NULL-argument handling. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c_support.h"
#include "ferry/capi/ferry.h"

static void TestFormats(void) {
  struct FerryFormatInfo info;
  struct FerryError error;
  char out[64];
  CHECK(FerryFormatParse("tsu:UTC", &info, &error) == 0);
  CHECK(strcmp(FerryTypeIdName(info.type_id), "timestamp") == 0);
  CHECK(info.time_unit == 2);
  CHECK(strcmp(info.timezone, "UTC") == 0);
  CHECK(FerryFormatToString(&info, out, sizeof(out), &error) == 0);
  CHECK(strcmp(out, "tsu:UTC") == 0);
  CHECK(FerryFormatToString(&info, out, 3, &error) == ERANGE);

  CHECK(FerryFormatParse("d:40,2", &info, &error) == EINVAL);
  CHECK(strstr(error.message, "precision 40 exceeds 38") != NULL);
  CHECK(FerryFormatParse("+ud:1,x", &info, &error) == EINVAL);
  CHECK(strstr(error.message, "position 6") != NULL);
  CHECK(FerryFormatParse(NULL, &info, &error) == EINVAL);
  CHECK(FerryFormatParse("i", NULL, NULL) == EINVAL); /* NULL error struct is allowed */
  /* Each return code names its error code (docs/architecture.md, "Errors"). */
  CHECK(strcmp(FerryErrorCodeName(0), "OK") == 0);
  CHECK(strcmp(FerryErrorCodeName(EINVAL), "InvalidArgument") == 0);
  CHECK(strcmp(FerryErrorCodeName(ERANGE), "OutOfRange") == 0);
  CHECK(strcmp(FerryErrorCodeName(ENOENT), "NotFound") == 0);
  CHECK(strcmp(FerryErrorCodeName(EPERM), "Unauthenticated") == 0);
  CHECK(strcmp(FerryErrorCodeName(EXDEV), "Unknown") == 0);
}

static void TestValidation(void) {
  struct ArrowSchema schema = MakeSchema("u");
  struct ArrowArray array;
  struct FerryArrayView view;
  struct FerryError error;
  char* json = NULL;
  char text[64];
  size_t needed = 0;

  CHECK(FerryArrayFromJson(&schema, "[\"ab\", null, \"cde\"]", &array, &error) == 0);
  CHECK(FerrySchemaToString(&schema, text, sizeof(text), &needed, &error) == 0);
  CHECK(strcmp(text, "string") == 0);
  CHECK(FerryArrayViewInitFromSchema(&view, &schema, &error) == 0);
  CHECK(FerryArrayViewSetArray(&view, &array, &error) == 0);
  CHECK(view.length == 3 && view.null_count == 1 && view.n_buffers == 3);
  CHECK(FerryArrayViewValidate(&view, FERRY_VALIDATION_LEVEL_FULL, &error) == 0);
  CHECK(FerryArrayViewToJson(&view, &json, &error) == 0);
  CHECK(json != NULL && strcmp(json, "[\"ab\", null, \"cde\"]") == 0);
  FerryFree(json);

  /* Make the offsets go backwards: 0, 2, 2, 5 -> 0, 4, 2, 5. */
  ((int32_t*)array.buffers[1])[1] = 4;
  CHECK(FerryArrayViewSetArray(&view, &array, &error) == 0);
  CHECK(FerryArrayViewValidate(&view, FERRY_VALIDATION_LEVEL_MINIMAL, &error) == 0);
  CHECK(FerryArrayViewValidate(&view, FERRY_VALIDATION_LEVEL_DEFAULT, &error) == 0);
  CHECK(FerryArrayViewValidate(&view, FERRY_VALIDATION_LEVEL_FULL, &error) == EINVAL);
  CHECK(strstr(error.message, "element 1: offset 2 < previous offset 4") != NULL);
  CHECK(FerryArrayViewValidate(&view, 7, &error) == EINVAL);

  FerryArrayViewReset(&view);
  FerryArrayViewReset(&view); /* idempotent */
  CHECK(FerryArrayViewSetArray(&view, &array, &error) == EINVAL);
  CHECK(strstr(error.message, "not initialised") != NULL);
  array.release(&array);
  CHECK(array.release == NULL);

  CHECK(FerryArrayViewInitFromSchema(&view, &schema, &error) == 0);
  CHECK(FerryArrayViewSetArray(&view, &array, &error) == EINVAL); /* released */
  CHECK(strstr(error.message, "array is released") != NULL);
  FerryArrayViewReset(&view);
  CHECK(FerryArrayViewInitFromSchema(NULL, &schema, &error) == EINVAL);
}

static void TestStream(void) {
  struct ArrowSchema schema = MakeSchema("i");
  struct ArrowSchema owned;
  struct ArrowArray arrays[2];
  struct ArrowArrayStream stream;
  struct ArrowSchema got_schema;
  struct ArrowArray got;
  struct FerryError error;
  int n = 0;

  CHECK(FerrySchemaDeepCopy(&schema, &owned, &error) == 0);
  CHECK(FerryArrayFromJson(&owned, "[1, 2]", &arrays[0], &error) == 0);
  CHECK(FerryArrayFromJson(&owned, "[3]", &arrays[1], &error) == 0);
  CHECK(FerryArrayStreamInit(&stream, &owned, 2, arrays, &error) == 0);
  CHECK(owned.release == NULL && arrays[0].release == NULL);
  CHECK(stream.get_schema(&stream, &got_schema) == 0);
  CHECK(strcmp(got_schema.format, "i") == 0);
  got_schema.release(&got_schema);
  for (;;) {
    CHECK(stream.get_next(&stream, &got) == 0);
    if (got.release == NULL) break;
    ++n;
    got.release(&got);
  }
  CHECK(n == 2);
  stream.release(&stream);
  CHECK(stream.release == NULL);
  CHECK(FerryArrayStreamInit(NULL, NULL, 0, NULL, &error) == EINVAL);
}

/* The device layer from C: resolve, wrap, copy CPU -> guarded -> CPU, refused moves, buffers. */
static void TestDevices(void) {
  struct ArrowSchema schema = MakeSchema("u");
  struct ArrowArray array;
  struct ArrowDeviceArray cpu_array;
  struct ArrowDeviceArray guarded_array;
  struct ArrowDeviceArray back;
  struct ArrowDeviceArray refused;
  struct FerryDeviceArrayView view;
  struct FerryDeviceArrayView guarded_view;
  struct FerryDevice* cpu = FerryDeviceCpu();
  struct FerryDevice* guarded = FerryDeviceResolve(ARROW_DEVICE_EXT_DEV, 0);
  struct FerryDevice local_cpu;
  struct FerryBuffer buffer;
  struct FerryBufferView src_view;
  struct FerryMutableBufferView dst_view;
  struct FerryError error;
  char* json = NULL;
  char bytes[6] = "hello";
  char read_back[6] = {0};

  CHECK(FerryDeviceCheckRuntime(&error) == 0);
  CHECK(cpu != NULL && cpu->device_type == ARROW_DEVICE_CPU && cpu == FerryDeviceCpu());
  FerryDeviceInitCpu(&local_cpu);
  CHECK(local_cpu.device_type == ARROW_DEVICE_CPU && local_cpu.buffer_copy != NULL);
  CHECK(guarded != NULL && guarded->device_type == ARROW_DEVICE_EXT_DEV);
  CHECK(FerryDeviceResolve(ARROW_DEVICE_EXT_DEV, 9) == NULL);
  CHECK(strstr(FerryDeviceResolveError(), "EXT_DEV device 9 does not exist") != NULL);
  CHECK(FerryDeviceResolve((ArrowDeviceType)99, 0) == NULL);
  CHECK(strstr(FerryDeviceResolveError(), "device type 99") != NULL);
  CHECK(FerryDeviceParse("cpu") == cpu && FerryDeviceParse("GUARDED:0") == guarded);
  CHECK(strcmp(FerryDeviceResolveError(), "") == 0);
  CHECK(FerryDeviceParse("tpu:0") == NULL);
  CHECK(strstr(FerryDeviceResolveError(), "device \"tpu:0\" is not a device name") != NULL);
  CHECK(FerryDeviceParse("guarded:x") == NULL);
  CHECK(strstr(FerryDeviceResolveError(), "not a non-negative integer") != NULL);
  CHECK(FerryDeviceParse(NULL) == NULL);
  {
    int64_t freed = -1;
    CHECK(FerryDeviceReleaseCached(cpu, &freed, &error) == 0 && freed == 0);
    CHECK(FerryDeviceReleaseCached(NULL, &freed, &error) == EINVAL);
    CHECK(strstr(error.message, "not ferry's") != NULL);
  }

  CHECK(FerryArrayFromJson(&schema, "[\"ab\", null, \"cde\"]", &array, &error) == 0);
  CHECK(FerryDeviceArrayInit(cpu, &cpu_array, &array, NULL, &error) == 0);
  CHECK(array.release == NULL && cpu_array.device_type == ARROW_DEVICE_CPU);

  /* CPU -> guarded -> CPU. */
  FerryDeviceArrayViewInit(&view);
  CHECK(FerryArrayViewInitFromSchema(&view.array_view, &schema, &error) == 0);
  CHECK(FerryDeviceArrayViewSetArray(&view, &cpu_array, &error) == 0);
  CHECK(FerryDeviceArrayViewCopy(&view, guarded, &guarded_array, &error) == 0);
  CHECK(guarded_array.device_type == ARROW_DEVICE_EXT_DEV);
  FerryDeviceArrayViewInit(&guarded_view);
  CHECK(FerryArrayViewInitFromSchema(&guarded_view.array_view, &schema, &error) == 0);
  CHECK(FerryDeviceArrayViewSetArray(&guarded_view, &guarded_array, &error) == 0);
  CHECK(FerryArrayViewBufferView(&guarded_view.array_view, 2, &src_view, &error) == 0);
  CHECK(src_view.size == 5); /* learnt from the device */
  CHECK(FerryArrayViewBufferView(&guarded_view.array_view, 3, &src_view, &error) == EINVAL);
  CHECK(FerryDeviceArrayViewSetArrayAsync(&guarded_view, &guarded_array, NULL, &error) == EINVAL);
  CHECK(strstr(error.message, "needs a stream") != NULL);
  CHECK(FerryDeviceArrayViewSetArray(&guarded_view, &guarded_array, &error) == 0);
  CHECK(FerryDeviceArrayViewCopy(&guarded_view, cpu, &back, &error) == 0);
  CHECK(back.device_type == ARROW_DEVICE_CPU);
  CHECK(FerryArrayViewSetArray(&view.array_view, &back.array, &error) == 0);
  CHECK(FerryArrayViewToJson(&view.array_view, &json, &error) == 0);
  CHECK(json != NULL && strcmp(json, "[\"ab\", null, \"cde\"]") == 0);
  FerryFree(json);

  /* Guarded memory cannot move to the host: ENOTSUP, the source untouched. */
  CHECK(FerryDeviceArrayMoveToDevice(&guarded_array, cpu, &refused, &error) == ENOTSUP);
  CHECK(strstr(error.message, "no zero-copy move") != NULL);
  CHECK(guarded_array.array.release != NULL);
  CHECK(FerryDeviceArrayMoveToDevice(NULL, cpu, &refused, &error) == EINVAL);

  /* Buffers: CPU -> guarded, then back into existing memory. */
  src_view.data = bytes;
  src_view.size = 6;
  CHECK(FerryDeviceBufferInit(cpu, src_view, guarded, &buffer, &error) == 0);
  CHECK(buffer.size == 6);
  src_view.data = buffer.data;
  dst_view.data = read_back;
  dst_view.size = 6;
  CHECK(FerryDeviceBufferCopy(guarded, src_view, cpu, dst_view, &error) == 0);
  CHECK(strcmp(read_back, "hello") == 0);
  buffer.release(&buffer);

  /* Moving marks the source released. */
  FerryDeviceArrayMove(&back, &refused);
  CHECK(back.array.release == NULL && refused.array.release != NULL);

  refused.array.release(&refused.array);
  guarded_array.array.release(&guarded_array.array);
  cpu_array.array.release(&cpu_array.array);
  FerryDeviceArrayViewReset(&guarded_view);
  FerryDeviceArrayViewReset(&view);
  FerryDeviceArrayViewReset(&view); /* idempotent */
}

/* A C library's matrix type, exported through a tag. `transposed` makes it column-major. */
struct TestMatrix {
  double values[6];
  int64_t shape[2];
  int64_t strides[2];
  int transposed;
  int fail;
  int releases;
};

static FerryErrorCode MatrixGet(void* obj, int32_t flags, struct FerryMemoryView* view,
                                struct FerryError* error) {
  struct TestMatrix* m = (struct TestMatrix*)obj;
  (void)flags;
  if (m->fail) {
    snprintf(error->message, sizeof(error->message), "matrix is busy");
    return EBUSY;
  }
  m->shape[0] = m->transposed ? 3 : 2;
  m->shape[1] = m->transposed ? 2 : 3;
  m->strides[0] = m->transposed ? 8 : 24;
  m->strides[1] = m->transposed ? 24 : 8;
  view->data = m->values;
  view->byte_size = (int64_t)sizeof(m->values);
  view->readonly = 0;
  view->format = "d";
  view->item_size = 8;
  view->ndim = 2;
  view->shape = m->shape;
  view->strides = m->strides;
  view->private_data = m;
  return 0;
}

static void MatrixRelease(struct FerryMemoryView* view) {
  ((struct TestMatrix*)view->private_data)->releases += 1;
}

static int MatrixAvailable(void* obj) { return obj != NULL; }

static void TestMemoryViews(void) {
  struct FerryMemoryViewExporter exporter = {&MatrixGet, &MatrixRelease, &MatrixAvailable};
  struct TestMatrix m = {{1, 2, 3, 4, 5, 6}, {0, 0}, {0, 0}, 0, 0, 0};
  struct FerryMemoryView v1;
  struct FerryMemoryView v2;
  struct FerryMemoryView refused;
  struct FerryMemoryView of_array;
  struct ArrowSchema schema_out;
  struct ArrowDeviceArray array_out;
  struct ArrowSchema int_schema = MakeSchema("i");
  struct ArrowArray int_array;
  struct ArrowDeviceArray int_device;
  struct FerryError error;
  int64_t item_size = 0;
  int64_t idx[2] = {1, 2};
  void* p = NULL;
  const double* child_values = NULL;

  CHECK(FerryMemoryViewItemSize("|iqc", &item_size, &error) == 0 && item_size == 24);
  CHECK(FerryMemoryViewItemSize("iqc", &item_size, &error) == 0 && item_size == 13);
  CHECK(FerryMemoryViewItemSize("i y", &item_size, &error) == EINVAL);
  CHECK(strstr(error.message, "offset 2") != NULL);

  CHECK(FerryMemoryViewRegister("test.Matrix", NULL, &error) == EINVAL);
  CHECK(FerryMemoryViewRegister("test.Matrix", &exporter, &error) == 0);
  CHECK(FerryMemoryViewAvailable("test.Matrix", &m) == 1);
  CHECK(FerryMemoryViewAvailable("test.Matrix", NULL) == 0);
  CHECK(FerryMemoryViewAvailable("test.Unknown", &m) == 0);
  CHECK(FerryMemoryViewGet("test.Unknown", &m, 0, &v1, &error) == ENOTSUP);
  CHECK(strstr(error.message, "test.Unknown") != NULL);

  /* Two nested exports, counted; items found through the strides; bounds checked. */
  CHECK(FerryMemoryViewGet("test.Matrix", &m,
                           FERRY_MEMORY_VIEW_ROW_MAJOR | FERRY_MEMORY_VIEW_FORMAT, &v1,
                           &error) == 0);
  CHECK(v1.ndim == 2 && v1.shape[0] == 2 && v1.shape[1] == 3 && v1.item_size == 8);
  CHECK(v1.format != NULL && strcmp(v1.format, "d") == 0);
  CHECK(v1.data == m.values && v1.device_type == ARROW_DEVICE_CPU && v1.reserved != NULL);
  CHECK(FerryMemoryViewGetItemPointer(&v1, idx, &p, &error) == 0 && *(double*)p == 6.0);
  idx[0] = 2;
  CHECK(FerryMemoryViewGetItemPointer(&v1, idx, &p, &error) == ERANGE);
  CHECK(strstr(error.message, "index 2 is out of range [0, 2) in dimension 0") != NULL);
  CHECK(FerryMemoryViewGet("test.Matrix", &m, FERRY_MEMORY_VIEW_WRITABLE, &v2, &error) == EINVAL);
  CHECK(strstr(error.message, "2 dimensions") != NULL); /* 2-D needs MULTI_DIMENSIONAL or more */
  CHECK(m.releases == 1);
  m.releases = 0;
  CHECK(FerryMemoryViewGet("test.Matrix", &m,
                           FERRY_MEMORY_VIEW_WRITABLE | FERRY_MEMORY_VIEW_STRIDES, &v2,
                           &error) == 0);
  CHECK(FerryMemoryViewExportCount(&m) == 2);
  CHECK(FerryMemoryViewRelease(&v2, &error) == 0);
  CHECK(FerryMemoryViewRelease(&v2, &error) == 0); /* a double release is a no-op */
  CHECK(m.releases == 1 && FerryMemoryViewExportCount(&m) == 1);

  /* A request the exporter's view cannot meet is refused, and what get made is released. */
  m.transposed = 1;
  CHECK(FerryMemoryViewGet("test.Matrix", &m, FERRY_MEMORY_VIEW_ROW_MAJOR, &refused, &error) ==
        EINVAL);
  CHECK(strstr(error.message, "ROW_MAJOR was requested") != NULL);
  CHECK(m.releases == 2 && FerryMemoryViewExportCount(&m) == 1);
  CHECK(FerryMemoryViewGet("test.Matrix", &m, FERRY_MEMORY_VIEW_COLUMN_MAJOR, &v2, &error) == 0);
  CHECK(FerryMemoryViewRelease(&v2, &error) == 0 && m.releases == 3);
  m.transposed = 0;
  m.fail = 1;
  CHECK(FerryMemoryViewGet("test.Matrix", &m, 0, &refused, &error) == EBUSY);
  CHECK(strstr(error.message, "exporter of \"test.Matrix\": matrix is busy") != NULL);
  m.fail = 0;

  /* The view becomes a fixed-size list without a copy; the array keeps the export alive. */
  CHECK(FerryMemoryViewToDeviceArray(&v1, NULL, 0, &schema_out, &array_out, &error) == 0);
  CHECK(strcmp(schema_out.format, "+w:3") == 0 && array_out.array.length == 2);
  child_values = (const double*)array_out.array.children[0]->buffers[1];
  CHECK(child_values == m.values);
  CHECK(FerryMemoryViewRelease(&v1, &error) == 0);
  CHECK(m.releases == 3 && FerryMemoryViewExportCount(&m) == 1); /* the array still holds it */
  CHECK(FerryMemoryViewToDeviceArray(&v1, NULL, 0, &schema_out, &array_out, &error) == EINVAL);
  CHECK(strstr(error.message, "released") != NULL);
  array_out.array.release(&array_out.array);
  schema_out.release(&schema_out);
  CHECK(m.releases == 4 && FerryMemoryViewExportCount(&m) == 0);

  /* A device array's values, moved in; the view outlives the caller's structs. */
  CHECK(FerryArrayFromJson(&int_schema, "[7, 8, 9]", &int_array, &error) == 0);
  CHECK(FerryDeviceArrayInit(FerryDeviceCpu(), &int_device, &int_array, NULL, &error) == 0);
  CHECK(FerryMemoryViewOfDeviceArray(&int_schema, &int_device, FERRY_MEMORY_VIEW_WRITABLE, 0,
                                     &of_array, &error) == EINVAL);
  CHECK(strstr(error.message, "WRITABLE") != NULL);
  CHECK(int_schema.release != NULL && int_device.array.release != NULL); /* untouched */
  CHECK(FerryMemoryViewOfDeviceArray(&int_schema, &int_device, FERRY_MEMORY_VIEW_FORMAT, 0,
                                     &of_array, &error) == 0);
  CHECK(int_schema.release == NULL && int_device.array.release == NULL); /* moved in */
  CHECK(of_array.ndim == 1 && of_array.shape[0] == 3 && strcmp(of_array.format, "l") == 0);
  CHECK(((const int32_t*)of_array.data)[2] == 9 && of_array.readonly == 1);
  CHECK(FerryMemoryViewRelease(&of_array, &error) == 0 && of_array.reserved == NULL);
  CHECK(FerryMemoryViewOfDeviceArray(&int_schema, &int_device, 0, 0, &of_array, &error) == EINVAL);
  CHECK(strstr(error.message, "released") != NULL);
}

static int g_input_released = 0;
static void CountRelease(void* private_data) { g_input_released += *(int*)private_data; }

static void TestIpc(void) {
  struct ArrowSchema child = MakeSchema("i");
  struct ArrowSchema* children[1] = {&child};
  struct ArrowSchema root = MakeSchema("+s");
  struct ArrowSchema owned;
  struct ArrowArray batches[2];
  struct ArrowArrayStream stream;
  struct ArrowArrayStream back;
  struct ArrowArray got;
  struct FerryBuffer bytes;
  struct FerryIpcWriteOptions options = {
      FERRY_IPC_FORMAT_FILE, FERRY_IPC_COMPRESSION_ZSTD, 0, 64, 0, 0};
  struct FerryIpcReadOptions read_options = {FERRY_VALIDATION_LEVEL_FULL, 0};
  struct FerryError error;
  int one = 1;
  int64_t rows = 0;

  root.n_children = 1;
  root.children = children;
  CHECK(FerrySchemaDeepCopy(&root, &owned, &error) == 0);
  CHECK(FerryArrayFromJson(&owned, "[{\"s\": 1}, {\"s\": null}]", &batches[0], &error) == 0);
  CHECK(FerryArrayFromJson(&owned, "[{\"s\": 3}]", &batches[1], &error) == 0);
  CHECK(FerryArrayStreamInit(&stream, &owned, 2, batches, &error) == 0);
  CHECK(FerryIpcWriteBuffer(&stream, &options, &bytes, &error) == 0);
  CHECK(stream.release == NULL); /* consumed */
  CHECK(bytes.size > 16 && memcmp(bytes.data, "ARROW1", 6) == 0);

  /* Read in place; the callback fires once the stream and its arrays are gone. */
  CHECK(FerryIpcReadBuffer(bytes.data, bytes.size, &CountRelease, &one, &read_options, &back,
                           &error) == 0);
  for (;;) {
    CHECK(back.get_next(&back, &got) == 0);
    if (got.release == NULL) break;
    rows += got.length;
    got.release(&got);
  }
  CHECK(rows == 3);
  CHECK(g_input_released == 0);
  back.release(&back);
  CHECK(g_input_released == 1);
  bytes.release(&bytes);
  CHECK(bytes.release == NULL);

  /* Bad input: a clear error, and the callback still runs exactly once. */
  CHECK(FerryIpcReadBuffer((const uint8_t*)"ARROW1\0\0garbage!", 16, &CountRelease, &one, NULL,
                           &back, &error) == EINVAL);
  CHECK(strstr(error.message, "too few") != NULL || strstr(error.message, "magic") != NULL);
  CHECK(g_input_released == 2);
  CHECK(FerryIpcReadPath("/no/such/file", NULL, &back, &error) == ENOENT);
  options.alignment = 16;
  CHECK(FerryIpcWritePath(NULL, "/tmp/x", &options, &error) == EINVAL);
}

/* Read every batch of `stream` (CPU batches of one int64 column): their rows and the column's
 * sum. */
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

static void TestDipc(void) {
  struct ArrowSchema child = MakeSchema("l");
  struct ArrowSchema* children[1] = {&child};
  struct ArrowSchema root = MakeSchema("+s");
  struct ArrowSchema owned;
  struct ArrowArray batches[2];
  struct ArrowArrayStream stream;
  struct ArrowDeviceArrayStream got;
  struct FerryIpcWriteOptions options = {
      FERRY_IPC_FORMAT_STREAM, FERRY_IPC_COMPRESSION_NONE, 0, 8, 0, 0};
  struct FerryDipcServerOptions server_options = {"shm",   NULL, FERRY_DIPC_BODY_BUFFER_LIST,
                                                  1 << 20, 5000, 0};
  struct FerryDipcClientOptions client_options = {NULL, 5000, 0, 0, 0, 0, NULL, 0};
  struct FerryDipcServer* server = NULL;
  struct FerryError error;
  char uri[512];
  char meta_uri[512];
  char data_uri[512];
  char path[64];
  int64_t sum = 0;
  int64_t rows = 0;

  root.n_children = 1;
  root.children = children;
  CHECK(FerrySchemaDeepCopy(&root, &owned, &error) == 0);
  CHECK(FerryArrayFromJson(&owned, "[{\"s\": 1}, {\"s\": 20}]", &batches[0], &error) == 0);
  CHECK(FerryArrayFromJson(&owned, "[{\"s\": 300}]", &batches[1], &error) == 0);
  CHECK(FerryArrayStreamInit(&stream, &owned, 2, batches, &error) == 0);
  snprintf(path, sizeof(path), "/tmp/ferry-c-dipc-%d.arrows", (int)getpid());
  CHECK(FerryIpcWritePath(&stream, path, &options, &error) == 0);

  CHECK(FerryDipcServerStart(&server_options, &server, &error) == 0);
  CHECK(FerryDipcServerAddPath(server, "t", path, &error) == 0);
  CHECK(FerryDipcServerAddPath(server, "u", "/no/such/file", &error) == ENOENT);
  CHECK(FerryDipcServerUri(server, "t", uri, sizeof(uri), &error) == 0);
  CHECK(strncmp(uri, "shm://", 6) == 0 && strstr(uri, "want_data=") != NULL);
  CHECK(strstr(uri, "ferry=1") != NULL);
  CHECK(FerryDipcServerUri(server, "t", uri, 4, &error) == ERANGE);
  CHECK(FerryDipcServerUri(server, NULL, uri, sizeof(uri), &error) == 0);

  CHECK(FerryDipcConnect(uri, "t", NULL, &got, &error) == 0);
  CHECK(got.device_type == ARROW_DEVICE_CPU);
  DrainSum(&got, &rows, &sum);
  CHECK(rows == 3 && sum == 321);
  got.release(&got);

  CHECK(FerryDipcConnectWith(uri, NULL, "t", &client_options, &got, &error) == 0);
  DrainSum(&got, &rows, &sum);
  CHECK(rows == 3 && sum == 321);
  got.release(&got);
  client_options.timeout_ms = -1;
  CHECK(FerryDipcConnectWith(uri, NULL, "t", &client_options, &got, &error) == EINVAL);
  client_options.timeout_ms = 5000;
  /* Paced: each batch is asked for (the dipc suite counts what the server sends). */
  client_options.paced = 1;
  CHECK(FerryDipcConnectWith(uri, NULL, "t", &client_options, &got, &error) == 0);
  DrainSum(&got, &rows, &sum);
  CHECK(rows == 3 && sum == 321);
  got.release(&got);
  client_options.window = -1;
  CHECK(FerryDipcConnectWith(uri, NULL, "t", &client_options, &got, &error) == EINVAL);
  client_options.paced = 0;
  client_options.window = 0;

  /* The split shape, and a kept dataset (memory of its own: its own URIs) lent to each client. */
  CHECK(FerryDipcServerKeepPath(server, "k", path, &error) == 0);
  CHECK(FerryDipcServerKeepPath(server, "v", "/no/such/file", &error) == ENOENT);
  CHECK(FerryDipcServerMetadataUri(server, "k", meta_uri, sizeof(meta_uri), &error) == 0);
  CHECK(FerryDipcServerDataUri(server, "k", data_uri, sizeof(data_uri), &error) == 0);
  CHECK(strncmp(data_uri, "shm://", 6) == 0 && strcmp(data_uri, meta_uri) != 0);
  CHECK(FerryDipcConnectTwo(meta_uri, data_uri, "k", NULL, &got, &error) == 0);
  DrainSum(&got, &rows, &sum);
  CHECK(rows == 3 && sum == 321);
  got.release(&got);
  CHECK(FerryDipcConnectTwo(uri, NULL, "k", NULL, &got, &error) == EINVAL);
  CHECK(strstr(error.message, "data_uri is NULL") != NULL);
  CHECK(FerryDipcConnectTwo(uri, "shm://x", "k", NULL, &got, &error) == EINVAL);
  CHECK(FerryDipcConnectWith(meta_uri, data_uri, "k", &client_options, &got, &error) == 0);
  DrainSum(&got, &rows, &sum);
  CHECK(rows == 3 && sum == 321);
  got.release(&got);

  CHECK(FerryDipcConnect(uri, "nope", NULL, &got, &error) == ENOENT);
  CHECK(strstr(error.message, "unknown ticket \"nope\"") != NULL);
  CHECK(FerryDipcConnect("not a uri", "t", NULL, &got, &error) == EINVAL);
  CHECK(FerryDipcConnect(uri, "t", NULL, NULL, &error) == EINVAL);
  FerryDipcServerRelease(server);
  FerryDipcServerRelease(NULL);
  server_options.body_type = 7;
  CHECK(FerryDipcServerStart(&server_options, &server, &error) == EINVAL);
  CHECK(server == NULL);
  CHECK(strstr(error.message, "unknown body type 7") != NULL);
  remove(path);
}

int main(void) {
  TestFormats();
  TestValidation();
  TestStream();
  TestDevices();
  TestMemoryViews();
  TestIpc();
  TestDipc();
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
