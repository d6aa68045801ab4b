/* The DLPack tensor-exchange structs and the C exchange API (DLPack 1.3), declared for ferry from
 * the DLPack specification. The include guard is DLPack's own, so this header and any copy of
 * dlpack.h can be included together (whichever comes first wins; the layouts are identical).
 * tests/abi/dlpack_layout_check.h pins sizes, offsets and values. C99 and C++. */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 3

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/* Device kinds; the values are shared with ARROW_DEVICE_*. */
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
  kDLTrn = 18
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
  /* Low-precision floats (DLPack 1.1). The name gives exponent and mantissa bits; "fn" has no
   * infinities, "fnuz" no infinities nor negative zero, "fnu" no sign. 8-bit types use bits 8;
   * fp6 uses bits 6 and fp4 bits 4, packed little bit-endian unless the tensor sets
   * DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED. */
  kDLFloat8_e3m4 = 7U,
  kDLFloat8_e4m3 = 8U,
  kDLFloat8_e4m3b11fnuz = 9U,
  kDLFloat8_e4m3fn = 10U,
  kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U,
  kDLFloat8_e5m2fnuz = 13U,
  kDLFloat8_e8m0fnu = 14U,
  kDLFloat6_e2m3fn = 15U,
  kDLFloat6_e3m2fn = 16U,
  kDLFloat4_e2m1fn = 17U
} DLDataTypeCode;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides; /* in elements; must be set when ndim > 0 since DLPack 1.2 (NULL meant
                       row-major before, and consumers still accept it) */
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
/* Set by a producer whose sub-byte items (fp6, fp4) take one byte each instead of being packed. */
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* ---- The C exchange API (DLPack 1.3) ----
 * A library publishes one process-lifetime DLPackExchangeAPI table as the type attribute
 * `__dlpack_c_exchange_api__` of its tensor type: a PyCapsule named "dlpack_exchange_api".
 * Consumers look it up on the type (and may cache it per type), check header.version.major, and
 * call the functions with the GIL held. `py_object` arguments are PyObject*, which must be of the
 * type the table was found on. The *_no_sync calls synchronize no stream: a consumer that launches
 * work asks current_work_stream for the producer's stream and uses it. None may throw. */

/* Allocate a new tensor owned by the producer, shaped like `prototype` (its dtype, ndim, shape and
 * device are read). Returns 0 with *out set, or -1 after calling SetError(error_ctx, kind,
 * message) exactly once. */
typedef int (*DLPackManagedTensorAllocator)(DLTensor* prototype, DLManagedTensorVersioned** out,
                                            void* error_ctx,
                                            void (*SetError)(void* error_ctx, const char* kind,
                                                             const char* message));
/* Export a Python tensor as an owning versioned tensor. 0, or -1 with a Python error set
 * (BufferError when DLPack cannot describe it). */
typedef int (*DLPackManagedTensorFromPyObjectNoSync)(void* py_object,
                                                     DLManagedTensorVersioned** out);
/* Fill a caller-provided DLTensor that borrows from the Python tensor (the producer keeps shape
 * and strides alive) until control returns to Python. 0, or -1 with a Python error set. */
typedef int (*DLPackDLTensorFromPyObjectNoSync)(void* py_object, DLTensor* out);
/* The producer's current work stream for a device (NULL on the CPU). 0, or -1 with a Python error
 * set. */
typedef int (*DLPackCurrentWorkStream)(DLDeviceType device_type, int32_t device_id,
                                       void** out_current_stream);
/* Wrap an owning versioned tensor in a new Python tensor of the producer's type; the tensor's
 * ownership passes to it (on failure too). 0, or -1 with a Python error set. */
typedef int (*DLPackManagedTensorToPyObjectNoSync)(DLManagedTensorVersioned* tensor,
                                                   void** out_py_object);

/* The part of the table every version keeps: the table's version, and an optional older table
 * (NULL when none) for consumers of an older major version. */
typedef struct DLPackExchangeAPIHeader {
  DLPackVersion version;
  struct DLPackExchangeAPIHeader* prev_api;
} DLPackExchangeAPIHeader;

/* The function table. Every entry is required except dltensor_from_py_object_no_sync, which may be
 * NULL. */
typedef struct DLPackExchangeAPI {
  DLPackExchangeAPIHeader header;
  DLPackManagedTensorAllocator managed_tensor_allocator;
  DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync;
  DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync;
  DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync;
  DLPackCurrentWorkStream current_work_stream;
} DLPackExchangeAPI;

#ifdef __cplusplus
}
#endif

#endif /* DLPACK_DLPACK_H_ */
