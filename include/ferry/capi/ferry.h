/* ferry's C surface: errno-style return codes (0 is success) and an error struct with a message.
 *
 * Every function that can fail takes an optional `struct FerryError*` (NULL is allowed) and fills
 * its message on failure. No function throws or aborts on bad input: NULL pointers, released
 * structs and malformed data all come back as EINVAL (or ENOMEM, ENOTSUP, ERANGE) with a message.
 */
#ifndef FERRY_CAPI_FERRY_H
#define FERRY_CAPI_FERRY_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/device_abi.h"
#include "ferry/abi/dlpack_abi.h"
#include "ferry/abi/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An errno-compatible code: 0 on success. */
typedef int FerryErrorCode;

/** The version of the libferry this process loaded, "MAJOR.MINOR.PATCH": a static string the
 * caller must not free. */
FERRY_EXPORT const char* FerryVersion(void);

/** How much an ArrayView validation checks; each level includes the ones before it. */
enum FerryValidationLevel {
  /** Nothing. */
  FERRY_VALIDATION_LEVEL_NONE = 0,
  /** Structure, buffer counts and sizes that follow from length and offset; reads no buffer. */
  FERRY_VALIDATION_LEVEL_MINIMAL = 1,
  /** Adds O(1) reads of first and last offsets. */
  FERRY_VALIDATION_LEVEL_DEFAULT = 2,
  /** Checks every element (offsets, union ids, dictionary indices, run ends, UTF-8, nulls). */
  FERRY_VALIDATION_LEVEL_FULL = 3
};

/** A non-owning view of an ArrowArray through its ArrowSchema. The public fields mirror the
 * root of the view after SetArray; `private_data` owns ferry's C++ view tree and is freed by
 * FerryArrayViewReset. The schema and array must outlive the view. */
struct FerryArrayView {
  int64_t length;
  int64_t offset;
  int64_t null_count;
  int64_t n_buffers;
  int64_t n_children;
  /** The storage type as a ferry type id (see FerryTypeIdName). */
  int32_t storage_type;
  void* private_data;
};

/** Initialise `view` for arrays of `schema` (parses every node; no array yet). On failure the
 * view is left reset. */
FERRY_EXPORT FerryErrorCode FerryArrayViewInitFromSchema(struct FerryArrayView* view,
                                                         const struct ArrowSchema* schema,
                                                         struct FerryError* error);

/** Point `view` at `array`, learning data-buffer sizes from the last offsets (O(1) host reads
 * per node). Validation is a separate step: FerryArrayViewValidate. */
FERRY_EXPORT FerryErrorCode FerryArrayViewSetArray(struct FerryArrayView* view,
                                                   const struct ArrowArray* array,
                                                   struct FerryError* error);

/** Point `view` at `array` without reading any buffer (safe for device memory). */
FERRY_EXPORT FerryErrorCode FerryArrayViewSetArrayMinimal(struct FerryArrayView* view,
                                                          const struct ArrowArray* array,
                                                          struct FerryError* error);

/** Validate the array the view points at, at `level` (a FerryValidationLevel; any other value
 * is EINVAL). The message names the path to the failing element, e.g.
 * `field "a" > child 0 > element 17: offset 40 > data size 32`. */
FERRY_EXPORT FerryErrorCode FerryArrayViewValidate(struct FerryArrayView* view, int32_t level,
                                                   struct FerryError* error);

/** Free the view's private data; safe to call more than once and on a zeroed view. */
FERRY_EXPORT void FerryArrayViewReset(struct FerryArrayView* view);

/** Buffer `i` of the viewed node: its address and size in bytes (-1 while unknown, as after
 * SetArrayMinimal). The memory belongs to the viewed array; nothing is read. */
FERRY_EXPORT FerryErrorCode FerryArrayViewBufferView(const struct FerryArrayView* view, int64_t i,
                                                     struct FerryBufferView* out,
                                                     struct FerryError* error);

/** Render the viewed array's values as JSON (ferry's rendering, docs/json.md) into a string
 * that the caller frees with FerryFree. Reads every element (host memory only). */
FERRY_EXPORT FerryErrorCode FerryArrayViewToJson(const struct FerryArrayView* view, char** out_json,
                                                 struct FerryError* error);

/** The parsed parts of a format string. */
struct FerryFormatInfo {
  int32_t type_id;
  int32_t fixed_size;
  int32_t decimal_bitwidth;
  int32_t decimal_precision;
  int32_t decimal_scale;
  /** 0 seconds, 1 milliseconds, 2 microseconds, 3 nanoseconds. */
  int32_t time_unit;
  char timezone[256];
  int32_t n_union_type_ids;
  int8_t union_type_ids[128];
};

/** Parse one format string of the C data interface. The error names the character, its
 * position and why. */
FERRY_EXPORT FerryErrorCode FerryFormatParse(const char* format, struct FerryFormatInfo* out,
                                             struct FerryError* error);

/** Print `info` back as a format string into `out` (`out_size` bytes, NUL-terminated); ERANGE
 * when it does not fit. */
FERRY_EXPORT FerryErrorCode FerryFormatToString(const struct FerryFormatInfo* info, char* out,
                                                size_t out_size, struct FerryError* error);

/** Print a readable type of a schema tree (e.g. `list<item: int32>`) into `out`; ERANGE when
 * `out_size` is too small, with the size needed in `*needed` (when not NULL). */
FERRY_EXPORT FerryErrorCode FerrySchemaToString(const struct ArrowSchema* schema, char* out,
                                                size_t out_size, size_t* needed,
                                                struct FerryError* error);

/** The name of a ferry type id ("int32", "large_list_view", ...), or "unknown". */
FERRY_EXPORT const char* FerryTypeIdName(int32_t type_id);

/** Deep-copy `schema` into `out`, which the caller then owns and releases. */
FERRY_EXPORT FerryErrorCode FerrySchemaDeepCopy(const struct ArrowSchema* schema,
                                                struct ArrowSchema* out, struct FerryError* error);

/** Build an array of `schema`'s type from JSON values (docs/json.md) with ferry's builders;
 * the caller owns `out` and releases it. */
FERRY_EXPORT FerryErrorCode FerryArrayFromJson(const struct ArrowSchema* schema, const char* json,
                                               struct ArrowArray* out, struct FerryError* error);

/** Make an ArrowArrayStream over `n_arrays` arrays of `schema`. Moves `*schema` and every
 * `arrays[i]` in (each is marked released), also on failure. */
FERRY_EXPORT FerryErrorCode FerryArrayStreamInit(struct ArrowArrayStream* out,
                                                 struct ArrowSchema* schema, int64_t n_arrays,
                                                 struct ArrowArray* arrays,
                                                 struct FerryError* error);

/** Free memory that ferry allocated for the caller (e.g. FerryArrayViewToJson's string). */
FERRY_EXPORT void FerryFree(void* ptr);

/* -- Devices (docs/device.md) ------------------------------------------------------------------
 * The functions of nanoarrow's device extension under the same names with Arrow replaced by
 * Ferry, each with a trailing `struct FerryError*`. Streams and events are pointers to the
 * native handle (`CUstream*`, `cl_command_queue*`; `CUevent*`, `cl_event*`). */

/** OK when ferry's device layer can run in this process (struct layouts match the spec). */
FERRY_EXPORT FerryErrorCode FerryDeviceCheckRuntime(struct FerryError* error);

/** The CPU device (owned by ferry; never NULL). */
FERRY_EXPORT struct FerryDevice* FerryDeviceCpu(void);

/** Fill `device` with a copy of the CPU device that the caller owns; its `release` marks it
 * released. */
FERRY_EXPORT void FerryDeviceInitCpu(struct FerryDevice* device);

/** The device for (type, id), owned by ferry: CPU, CUDA/CUDA_HOST/CUDA_MANAGED (GPU ordinal;
 * the driver is loaded at run time), OPENCL (ordinal among SVM devices) or EXT_DEV 0 (the
 * guarded test device). NULL when there is none; FerryDeviceResolveError then says why. */
FERRY_EXPORT struct FerryDevice* FerryDeviceResolve(ArrowDeviceType device_type, int64_t device_id);

/** The device a name spells ("cpu", "cuda:0", "cuda_host:1", "cuda_managed:0", "opencl:0",
 * "guarded:0"; any case; ":N" defaults to 0), owned by ferry: the same parser as the CLI's
 * --device and Python's ferry.Device.parse. NULL when the name is bad or the device absent;
 * FerryDeviceResolveError then says why. */
FERRY_EXPORT struct FerryDevice* FerryDeviceParse(const char* name);

/** Why the last FerryDeviceResolve or FerryDeviceParse on this thread returned NULL ("" after a
 * success). */
FERRY_EXPORT const char* FerryDeviceResolveError(void);

/** Wrap `array` (moved in) as `device_array` on `device`; a non-NULL `sync_event` is owned by
 * the result. `reserved` is zeroed. */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayInit(struct FerryDevice* device,
                                                 struct ArrowDeviceArray* device_array,
                                                 struct ArrowArray* array, void* sync_event,
                                                 struct FerryError* error);

/** FerryDeviceArrayInit with a stream: given only a stream, an event is created, recorded on
 * it and owned by the result. */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayInitAsync(struct FerryDevice* device,
                                                      struct ArrowDeviceArray* device_array,
                                                      struct ArrowArray* array, void* sync_event,
                                                      void* stream, struct FerryError* error);

/** Wrap `array_stream` (moved in) as a device stream whose arrays are labelled `device`. The
 * end of the stream stays an array with a NULL release. */
FERRY_EXPORT FerryErrorCode FerryDeviceBasicArrayStreamInit(
    struct ArrowDeviceArrayStream* device_array_stream, struct ArrowArrayStream* array_stream,
    struct FerryDevice* device, struct FerryError* error);

/** A view of a device array: its device (set by SetArray*) and the array view. Initialise with
 * FerryDeviceArrayViewInit, then FerryArrayViewInitFromSchema(&view.array_view, ...). */
struct FerryDeviceArrayView {
  struct FerryDevice* device;
  struct FerryArrayView array_view;
};

/** Zero `device_array_view`. */
FERRY_EXPORT void FerryDeviceArrayViewInit(struct FerryDeviceArrayView* device_array_view);

/** Free the view's private data (safe to repeat). */
FERRY_EXPORT void FerryDeviceArrayViewReset(struct FerryDeviceArrayView* device_array_view);

/** Point the view at `device_array` without reading any buffer. */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayViewSetArrayMinimal(
    struct FerryDeviceArrayView* device_array_view, struct ArrowDeviceArray* device_array,
    struct FerryError* error);

/** Point the view at `device_array` and learn the data sizes with one device round trip,
 * using the device's internal stream. */
FERRY_EXPORT FerryErrorCode
FerryDeviceArrayViewSetArray(struct FerryDeviceArrayView* device_array_view,
                             struct ArrowDeviceArray* device_array, struct FerryError* error);

/** FerryDeviceArrayViewSetArray ordered on `stream` (required on devices with streams). */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayViewSetArrayAsync(
    struct FerryDeviceArrayView* device_array_view, struct ArrowDeviceArray* device_array,
    void* stream, struct FerryError* error);

/** Copy the visible part of the viewed array to `device_dst` (one allocation; complete on
 * return). `dst` is owned by the caller. */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayViewCopy(struct FerryDeviceArrayView* src,
                                                     struct FerryDevice* device_dst,
                                                     struct ArrowDeviceArray* dst,
                                                     struct FerryError* error);

/** FerryDeviceArrayViewCopy ordered on `stream`; a device result owns an event recorded on it. */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayViewCopyAsync(struct FerryDeviceArrayView* src,
                                                          struct FerryDevice* device_dst,
                                                          struct ArrowDeviceArray* dst,
                                                          void* stream, struct FerryError* error);

/** Move `src` to `device_dst` without copying; ENOTSUP (src untouched) when no zero-copy path
 * exists. */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayMoveToDevice(struct ArrowDeviceArray* src,
                                                         struct FerryDevice* device_dst,
                                                         struct ArrowDeviceArray* dst,
                                                         struct FerryError* error);

/** Allocate `dst` on `device_dst` and copy `src` into it (complete on return). */
FERRY_EXPORT FerryErrorCode FerryDeviceBufferInit(struct FerryDevice* device_src,
                                                  struct FerryBufferView src,
                                                  struct FerryDevice* device_dst,
                                                  struct FerryBuffer* dst,
                                                  struct FerryError* error);

/** FerryDeviceBufferInit ordered on `stream`. */
FERRY_EXPORT FerryErrorCode FerryDeviceBufferInitAsync(struct FerryDevice* device_src,
                                                       struct FerryBufferView src,
                                                       struct FerryDevice* device_dst,
                                                       struct FerryBuffer* dst, void* stream,
                                                       struct FerryError* error);

/** Move `src` to `dst` without copying; ENOTSUP when not possible. */
FERRY_EXPORT FerryErrorCode FerryDeviceBufferMove(struct FerryDevice* device_src,
                                                  struct FerryBuffer* src,
                                                  struct FerryDevice* device_dst,
                                                  struct FerryBuffer* dst,
                                                  struct FerryError* error);

/** Copy `src` into the existing `dst` (complete on return). */
FERRY_EXPORT FerryErrorCode FerryDeviceBufferCopy(struct FerryDevice* device_src,
                                                  struct FerryBufferView src,
                                                  struct FerryDevice* device_dst,
                                                  struct FerryBufferView dst,
                                                  struct FerryError* error);

/** FerryDeviceBufferCopy ordered on `stream`. */
FERRY_EXPORT FerryErrorCode FerryDeviceBufferCopyAsync(struct FerryDevice* device_src,
                                                       struct FerryBufferView src,
                                                       struct FerryDevice* device_dst,
                                                       struct FerryBufferView dst, void* stream,
                                                       struct FerryError* error);

/** Move the struct `src` into `dst` and mark `src` released. */
FERRY_EXPORT void FerryDeviceArrayMove(struct ArrowDeviceArray* src, struct ArrowDeviceArray* dst);

/* ---- Memory views ---------------------------------------------------------------------------
 * Typed N-d strided views after Ruby 3.0's MemoryView, with enforced request flags and an exporter
 * registry keyed by a type tag (a string the exporting library chooses, e.g. "numo.NArray"). */

/** Request flags; the values are Ruby's RUBY_MEMORY_VIEW_* values, and each includes the flags it
 * implies (STRIDES includes MULTI_DIMENSIONAL; ROW_MAJOR includes STRIDES). */
enum FerryMemoryViewFlags {
  FERRY_MEMORY_VIEW_SIMPLE = 0,
  FERRY_MEMORY_VIEW_WRITABLE = 0x01,
  FERRY_MEMORY_VIEW_FORMAT = 0x02,
  FERRY_MEMORY_VIEW_MULTI_DIMENSIONAL = 0x04,
  FERRY_MEMORY_VIEW_STRIDES = 0x0C,
  FERRY_MEMORY_VIEW_ROW_MAJOR = 0x1C,
  FERRY_MEMORY_VIEW_COLUMN_MAJOR = 0x2C,
  FERRY_MEMORY_VIEW_ANY_CONTIGUOUS = 0x3C,
  FERRY_MEMORY_VIEW_INDIRECT = 0x4C
};

/** A typed N-d view of memory on a device. An exporter's `get` fills one and owns what its
 * pointers point at until its `release` is called with that struct. A view from
 * FerryMemoryViewGet (or the functions below) is ferry's: its pointers stay valid until
 * FerryMemoryViewRelease, which clears `reserved`. Strides are in bytes and may be negative;
 * `sub_offsets` follow PIL (>= 0: dereference, then add). */
struct FerryMemoryView {
  /** The exported object (the exporter's; ferry never dereferences it). */
  void* obj;
  void* data;
  int64_t byte_size;
  int readonly;
  /** Pack-template item format (Ruby's dialect); NULL means unsigned bytes. */
  const char* format;
  int64_t item_size;
  int64_t ndim;
  const int64_t* shape;
  /** NULL: row-major contiguous. */
  const int64_t* strides;
  /** NULL: no indirection. */
  const int64_t* sub_offsets;
  ArrowDeviceType device_type;
  int64_t device_id;
  /** The producer's event (a pointer to the native event), or NULL; not owned by the view. */
  void* sync_event;
  /** The exporter's. */
  void* private_data;
  /** Ferry's; NULL for a view not (or no longer) held by ferry. */
  void* reserved;
};

/** How a C library exports views of its objects. `get` fills `view` for `obj` honouring `flags`
 * (or fails with a message); ferry zeroes the struct first, with device_type CPU and device_id -1;
 * `release` (optional) frees what `get` allocated; `available` (optional) says cheaply whether
 * `get` could succeed. */
struct FerryMemoryViewExporter {
  FerryErrorCode (*get)(void* obj, int32_t flags, struct FerryMemoryView* view,
                        struct FerryError* error);
  void (*release)(struct FerryMemoryView* view);
  int (*available)(void* obj);
};

/** Register (or replace) the exporter of objects tagged `tag`. The exporter is copied. */
FERRY_EXPORT FerryErrorCode FerryMemoryViewRegister(const char* tag,
                                                    const struct FerryMemoryViewExporter* exporter,
                                                    struct FerryError* error);

/** Whether an exporter is registered for `tag` and says it can export `obj` (1) or not (0). */
FERRY_EXPORT int FerryMemoryViewAvailable(const char* tag, void* obj);

/** Export `obj` through the exporter of `tag`, checking the result against `flags` (a view that
 * cannot satisfy them is released and refused, naming the flag). On success `out` is ferry's
 * until FerryMemoryViewRelease. No copy. */
FERRY_EXPORT FerryErrorCode FerryMemoryViewGet(const char* tag, void* obj, int32_t flags,
                                               struct FerryMemoryView* out,
                                               struct FerryError* error);

/** Release a view ferry handed out: calls the exporter's release once. Releasing again (or a
 * view never filled) is a no-op. Safe from any thread. */
FERRY_EXPORT FerryErrorCode FerryMemoryViewRelease(struct FerryMemoryView* view,
                                                   struct FerryError* error);

/** Views of `obj` handed out and not yet released. */
FERRY_EXPORT int64_t FerryMemoryViewExportCount(const void* obj);

/** The item size of a pack-template `format` (`|` alignment, counts, `!`, `<`, `>`); errors give
 * the offset of the bad token. */
FERRY_EXPORT FerryErrorCode FerryMemoryViewItemSize(const char* format, int64_t* out,
                                                    struct FerryError* error);

/** The address of the item at `indices` (ndim of them), following strides and sub-offsets;
 * ERANGE names the index out of range. Works on any filled view. */
FERRY_EXPORT FerryErrorCode FerryMemoryViewGetItemPointer(const struct FerryMemoryView* view,
                                                          const int64_t* indices, void** out,
                                                          struct FerryError* error);

/** A view of a fixed-width, fixed-size-list or fixed_shape_tensor device array's values on its
 * own device, carrying its device and event. `schema` and `array` are moved in (marked
 * released on success, untouched on failure) and live until the view is released. Arrays with
 * nulls are refused unless `allow_nulls`. Reads the device only to count nulls when the count is
 * unknown. */
FERRY_EXPORT FerryErrorCode FerryMemoryViewOfDeviceArray(struct ArrowSchema* schema,
                                                         struct ArrowDeviceArray* array,
                                                         int32_t flags, int allow_nulls,
                                                         struct FerryMemoryView* out,
                                                         struct FerryError* error);

/** A device array (and its schema) over a view's memory on the view's device, zero-copy when
 * dimension 0 is outermost; otherwise copied (CPU views, with `allow_copy`) or refused. The
 * array keeps the view's memory alive, even after the view is released. With a sync event and a
 * `stream`, the stream waits on it and the array owns a new event; without a stream, the host
 * waits. */
FERRY_EXPORT FerryErrorCode FerryMemoryViewToDeviceArray(const struct FerryMemoryView* view,
                                                         void* stream, int allow_copy,
                                                         struct ArrowSchema* schema_out,
                                                         struct ArrowDeviceArray* array_out,
                                                         struct FerryError* error);

/** Export a view ferry holds as a versioned DLPack tensor (READ_ONLY for read-only views; device
 * codes are the ARROW_DEVICE_* values). The tensor keeps the export alive until its deleter is
 * called, even after the view is released. No copy. */
FERRY_EXPORT FerryErrorCode FerryMemoryViewToDLPack(const struct FerryMemoryView* view,
                                                    struct DLManagedTensorVersioned** out,
                                                    struct FerryError* error);

/** The same through the legacy DLManagedTensor, which cannot say read-only: read-only views are
 * refused. */
FERRY_EXPORT FerryErrorCode FerryMemoryViewToDLPackLegacy(const struct FerryMemoryView* view,
                                                          struct DLManagedTensor** out,
                                                          struct FerryError* error);

/** Take a versioned DLPack tensor: on success `out` is a view ferry holds, and the tensor's
 * deleter runs when the view (and anything built over it) is released. The tensor is consumed
 * even on failure: its deleter has then been called (a major-version mismatch calls only the
 * deleter). */
FERRY_EXPORT FerryErrorCode FerryMemoryViewFromDLPack(struct DLManagedTensorVersioned* tensor,
                                                      struct FerryMemoryView* out,
                                                      struct FerryError* error);

/** The same for the legacy struct (its data is taken as writable). */
FERRY_EXPORT FerryErrorCode FerryMemoryViewFromDLPackLegacy(struct DLManagedTensor* tensor,
                                                            struct FerryMemoryView* out,
                                                            struct FerryError* error);

/* ---- Arrow IPC ----------------------------------------------------------------------------- */

/** IPC output format. */
enum FerryIpcFormat { FERRY_IPC_FORMAT_STREAM = 0, FERRY_IPC_FORMAT_FILE = 1 };

/** IPC body compression. */
enum FerryIpcCompression {
  FERRY_IPC_COMPRESSION_NONE = 0,
  FERRY_IPC_COMPRESSION_LZ4_FRAME = 1,
  FERRY_IPC_COMPRESSION_ZSTD = 2
};

/** How to read untrusted IPC input: the validation level run on every batch (a
 * FERRY_VALIDATION_LEVEL_*) and the most bytes decompression may allocate per message (0 keeps
 * the default of 4 GiB). */
struct FerryIpcReadOptions {
  int32_t validation_level;
  int64_t max_decompressed_bytes;
};

/** How to write: a FerryIpcFormat, a FerryIpcCompression, the codec level (0: default), the
 * body alignment (8 or 64; 0 means 8), big_endian (non-zero: write big-endian data, each
 * multi-byte buffer a swapped copy) and emit_dictionary_deltas (non-zero: a dictionary that grows
 * by appending goes as a delta of its new values, not a replacement). */
struct FerryIpcWriteOptions {
  int32_t format;
  int32_t compression;
  int32_t compression_level;
  int32_t alignment;
  int32_t big_endian;
  int32_t emit_dictionary_deltas;
};

/** Bytes produced by ferry; call release once when done. */
struct FerryIpcBytes {
  const uint8_t* data;
  int64_t size;
  void (*release)(struct FerryIpcBytes* self);
  void* private_data;
};

/** Read an IPC file or stream from `path` (memory-mapped; the format is chosen from the magic)
 * as a stream of struct arrays pointing into the mapping. `options` may be NULL. */
FERRY_EXPORT FerryErrorCode FerryIpcReadPath(const char* path,
                                             const struct FerryIpcReadOptions* options,
                                             struct ArrowArrayStream* out,
                                             struct FerryError* error);

/** Read IPC bytes in place (stream or file format, chosen from the magic): no copy. `release`
 * (may be NULL) is called with `private_data` once the stream and every array read from it are
 * released; on failure it is called before returning. */
FERRY_EXPORT FerryErrorCode FerryIpcReadBuffer(const uint8_t* data, int64_t size,
                                               void (*release)(void* private_data),
                                               void* private_data,
                                               const struct FerryIpcReadOptions* options,
                                               struct ArrowArrayStream* out,
                                               struct FerryError* error);

/** Write every batch of `stream` (struct arrays) to `path`. The stream is consumed (released).
 * `options` may be NULL (stream format, uncompressed, 8-byte alignment). */
FERRY_EXPORT FerryErrorCode FerryIpcWritePath(struct ArrowArrayStream* stream, const char* path,
                                              const struct FerryIpcWriteOptions* options,
                                              struct FerryError* error);

/** Write every batch of `stream` into memory; `out` receives the bytes. */
FERRY_EXPORT FerryErrorCode FerryIpcWriteBuffer(struct ArrowArrayStream* stream,
                                                const struct FerryIpcWriteOptions* options,
                                                struct FerryIpcBytes* out,
                                                struct FerryError* error);

/** An IPC file opened for random access (opaque). */
struct FerryIpcFileReader;

/** Open the file format at `path` (memory-mapped); reads the footer, schema and dictionaries. */
FERRY_EXPORT FerryErrorCode FerryIpcFileReaderOpen(const char* path,
                                                   const struct FerryIpcReadOptions* options,
                                                   struct FerryIpcFileReader** out,
                                                   struct FerryError* error);
/** Number of record batches in the file. */
FERRY_EXPORT int64_t FerryIpcFileReaderNumRecordBatches(const struct FerryIpcFileReader* reader);
/** A deep copy of the file's schema. */
FERRY_EXPORT FerryErrorCode FerryIpcFileReaderSchema(const struct FerryIpcFileReader* reader,
                                                     struct ArrowSchema* out,
                                                     struct FerryError* error);
/** Decode record batch `i` (0-based) as a struct array. */
FERRY_EXPORT FerryErrorCode FerryIpcFileReaderRead(const struct FerryIpcFileReader* reader,
                                                   int64_t i, struct ArrowArray* out,
                                                   struct FerryError* error);
/** Close the reader; arrays already read stay valid. */
FERRY_EXPORT void FerryIpcFileReaderRelease(struct FerryIpcFileReader* reader);

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
  const char* address;
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

/** How a client reads: where batches land (NULL: the CPU), how long the server may stay silent
 * (0: 30 s), and the largest metadata message and body taken from it (0: 64 MiB and 4 GiB). */
struct FerryDipcClientOptions {
  const struct FerryDevice* device;
  int64_t timeout_ms;
  int64_t max_metadata_bytes;
  int64_t max_body_bytes;
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

#endif /* FERRY_CAPI_FERRY_H */
