/* Compiles the ABI header as strict C99 and pins the struct layouts from C. The header is included
 * twice, and after a second copy of one guarded block, to show the guards make copies coexist. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
/* Another project's copy of the C data interface, seen first. */
struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
#endif

#include "dlpack_layout_check.h"
#include "ferry/abi/arrow_c_abi.h"
#include "layout_check.h"

int main(void) {
  struct ArrowDeviceArray device_array;
  memset(&device_array, 0, sizeof(device_array));
  device_array.device_type = ARROW_DEVICE_CUDA_MANAGED;
  /* The reserved words sit at the end of the 128-byte struct. */
  if ((char*)&device_array.reserved[2] + sizeof(int64_t) != (char*)&device_array + 128) {
    fprintf(stderr, "reserved is not at the end of ArrowDeviceArray\n");
    return 1;
  }
  printf("1 passed, 0 failed\n");
  return 0;
}
