/* ferry's C surface: errors, the version, arrays, schemas and array views (its base part).
 * One part of ferry/capi/ferry.h, which states the conventions every part follows; it may be
 * included alone. */
#ifndef FERRY_CAPI_ARRAY_H
#define FERRY_CAPI_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/device_abi.h"
#include "ferry/abi/dlpack_abi.h"
#include "ferry/abi/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An errno-compatible code: 0 on success. Each of ferry's error codes has its own (the table in
 * docs/architecture.md, "Errors"): EINVAL invalid argument, ENOENT not found, EEXIST already
 * exists, EBUSY failed precondition, ERANGE out of range, ECONNREFUSED unavailable, ETIMEDOUT
 * deadline exceeded, ECANCELED cancelled, EACCES permission denied, EPERM unauthenticated,
 * ENOMEM resource exhausted, EBADMSG data loss, ENOTSUP unimplemented, ENOTRECOVERABLE
 * internal, EIO I/O error. */
typedef int FerryErrorCode;

/** The name of the error code `code` stands for ("InvalidArgument", "NotFound", ...; "OK" for
 * 0), as the C++, Python and Ruby faces name it; "Unknown" for a code that is none of ferry's.
 * A static string the caller must not free. */
FERRY_EXPORT const char* FerryErrorCodeName(FerryErrorCode code);

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

#ifdef __cplusplus
}
#endif

#endif /* FERRY_CAPI_ARRAY_H */
