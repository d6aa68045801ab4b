/* ferry's C surface: memory views and their bridges (docs/memview.md).
 * One part of ferry/capi/ferry.h, which states the conventions every part follows; it may be
 * included alone. */
#ifndef FERRY_CAPI_MEMVIEW_H
#define FERRY_CAPI_MEMVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/capi/device.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 * `sub_offsets` follow PIL (>= 0: dereference, then add). The fields it shares with Ruby's
 * rb_memory_view_t keep Ruby's names, `byte_size` (the length, `size` elsewhere) among them. */
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

struct DLPackExchangeAPI;

/** Take a tensor from a Python object through its producer's DLPack C exchange API (DLPack 1.3):
 * `api` is the table in the capsule `type(py_object).__dlpack_c_exchange_api__` (named
 * "dlpack_exchange_api"), `py_object` a PyObject* of that type, and the caller holds the GIL. The
 * producer's managed_tensor_from_py_object_no_sync exports it, then ferry holds it as
 * FerryMemoryViewFromDLPack does. Nothing is synchronized: reads of device memory go on the
 * producer's current_work_stream. When the producer fails, its Python exception stays set and
 * the error says so. About 0.1 µs on a CPU tensor (docs/benchmarks.md). */
FERRY_EXPORT FerryErrorCode FerryMemoryViewFromDLPackExchange(const struct DLPackExchangeAPI* api,
                                                              void* py_object,
                                                              struct FerryMemoryView* out,
                                                              struct FerryError* error);

#ifdef __cplusplus
}
#endif

#endif /* FERRY_CAPI_MEMVIEW_H */
