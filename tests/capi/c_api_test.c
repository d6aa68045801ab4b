/* The C surface, exercised from plain C99: format parsing and printing, arrays from JSON, graded
 * validation of a hand-corrupted array, JSON rendering, streams and NULL-argument handling. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/capi/ferry.h"

static int g_passed = 0;
static int g_failed = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      ++g_passed;                                                              \
    } else {                                                                   \
      ++g_failed;                                                              \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

/* A one-node schema with a static format, released by clearing `release`. */
static void ReleaseStaticSchema(struct ArrowSchema* schema) { schema->release = NULL; }

static struct ArrowSchema MakeSchema(const char* format) {
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof(schema));
  schema.format = format;
  schema.name = "s";
  schema.flags = ARROW_FLAG_NULLABLE;
  schema.release = &ReleaseStaticSchema;
  return schema;
}

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
  struct FerryBufferView dst_view;
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
  CHECK(src_view.size_bytes == 5); /* learnt from the device */
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
  src_view.size_bytes = 6;
  CHECK(FerryDeviceBufferInit(cpu, src_view, guarded, &buffer, &error) == 0);
  CHECK(buffer.size_bytes == 6);
  src_view.data = buffer.data;
  dst_view.data = read_back;
  dst_view.size_bytes = 6;
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

int main(void) {
  TestFormats();
  TestValidation();
  TestStream();
  TestDevices();
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
