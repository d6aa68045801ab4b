/* The Arrow C Data, C Stream, C Device Data and C Device Stream interfaces.
 *
 * These declarations follow the Arrow specifications field for field. The include guards are the
 * specifications' own, so this header coexists with any other project's copy of the same structs.
 * It compiles as C99 and as C++.
 */
#ifndef FERRY_ABI_ARROW_C_ABI_H
#define FERRY_ABI_ARROW_C_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  /* Array type description */
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;

  /* Release callback */
  void (*release)(struct ArrowSchema*);
  /* Opaque producer-specific data */
  void* private_data;
};

struct ArrowArray {
  /* Array data description */
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;

  /* Release callback */
  void (*release)(struct ArrowArray*);
  /* Opaque producer-specific data */
  void* private_data;
};

#endif /* ARROW_C_DATA_INTERFACE */

#ifndef ARROW_C_DEVICE_DATA_INTERFACE
#define ARROW_C_DEVICE_DATA_INTERFACE

/* Spectrum of accelerator device types, values shared with DLPack's DLDeviceType. */
typedef int32_t ArrowDeviceType;

#define ARROW_DEVICE_CPU 1
#define ARROW_DEVICE_CUDA 2
#define ARROW_DEVICE_CUDA_HOST 3
#define ARROW_DEVICE_OPENCL 4
#define ARROW_DEVICE_VULKAN 7
#define ARROW_DEVICE_METAL 8
#define ARROW_DEVICE_VPI 9
#define ARROW_DEVICE_ROCM 10
#define ARROW_DEVICE_ROCM_HOST 11
#define ARROW_DEVICE_EXT_DEV 12
#define ARROW_DEVICE_CUDA_MANAGED 13
#define ARROW_DEVICE_ONEAPI 14
#define ARROW_DEVICE_WEBGPU 15
#define ARROW_DEVICE_HEXAGON 16

struct ArrowDeviceArray {
  /* The Arrow array; its buffers live on the device below. */
  struct ArrowArray array;
  /* The device id identifying which device the buffers are on. */
  int64_t device_id;
  /* The type of device the buffers are allocated on. */
  ArrowDeviceType device_type;
  /* Event to wait on (a pointer to a device-specific event object) before reading buffers. */
  void* sync_event;
  /* Reserved bytes for future expansion; producers must zero them. */
  int64_t reserved[3];
};

#endif /* ARROW_C_DEVICE_DATA_INTERFACE */

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
  /* Get the schema of the stream; returns 0 or an errno-compatible code. */
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  /* Get the next array; end of stream is an out array whose release is NULL. */
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  /* Describe the last error; valid until the next call on this stream. */
  const char* (*get_last_error)(struct ArrowArrayStream*);

  /* Release callback */
  void (*release)(struct ArrowArrayStream*);
  /* Opaque producer-specific data */
  void* private_data;
};

#endif /* ARROW_C_STREAM_INTERFACE */

#ifndef ARROW_C_DEVICE_STREAM_INTERFACE
#define ARROW_C_DEVICE_STREAM_INTERFACE

struct ArrowDeviceArrayStream {
  /* The device type of every array this stream produces. */
  ArrowDeviceType device_type;
  /* Get the schema of the stream; returns 0 or an errno-compatible code. */
  int (*get_schema)(struct ArrowDeviceArrayStream* self, struct ArrowSchema* out);
  /* Get the next device array; end of stream is an out array whose array.release is NULL. */
  int (*get_next)(struct ArrowDeviceArrayStream* self, struct ArrowDeviceArray* out);
  /* Describe the last error; valid until the next call on this stream. */
  const char* (*get_last_error)(struct ArrowDeviceArrayStream* self);

  /* Release callback */
  void (*release)(struct ArrowDeviceArrayStream* self);
  /* Opaque producer-specific data */
  void* private_data;
};

#endif /* ARROW_C_DEVICE_STREAM_INTERFACE */

#ifdef __cplusplus
}
#endif

#endif /* FERRY_ABI_ARROW_C_ABI_H */
