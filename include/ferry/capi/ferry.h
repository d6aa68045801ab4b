/* ferry's C surface: errno-style return codes (0 is success) and an error struct with a message.
 *
 * Every function that can fail takes an optional `struct FerryError*` (NULL is allowed) and fills
 * its message on failure. No function throws or aborts on bad input: NULL pointers, released
 * structs and malformed data all come back as EINVAL (or ENOMEM, ENOTSUP, ERANGE) with a message.
 *
 * This header gathers the parts: array.h (errors, arrays, schemas, array views), async.h, device.h,
 * memview.h, ipc.h and dipc.h; each may be included alone.
 */
#ifndef FERRY_CAPI_FERRY_H
#define FERRY_CAPI_FERRY_H

#include "ferry/capi/array.h"
#include "ferry/capi/async.h"
#include "ferry/capi/device.h"
#include "ferry/capi/dipc.h"
#include "ferry/capi/ipc.h"
#include "ferry/capi/memview.h"

#endif /* FERRY_CAPI_FERRY_H */
