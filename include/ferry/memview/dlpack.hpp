// DLPack bridge: memory views to and from DLManagedTensorVersioned (and the legacy
// DLManagedTensor), zero-copy in both directions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "ferry/abi/dlpack_abi.h"
#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/memview/memory_view.hpp"

namespace ferry::memview {

/// Export `view` as a versioned DLPack tensor that owns a copy of the view (so `view.owner`
/// stays alive until the consumer calls the deleter). Read-only views set READ_ONLY, fp6 and fp4
/// items alone in a byte IS_SUBBYTE_TYPE_PADDED. Fails for items that are not one native-order
/// scalar, and for byte strides that are not a multiple of the item size (DLPack strides count
/// elements).
FERRY_EXPORT Result<DLManagedTensorVersioned*> ToDLPack(const MemoryView& view);
/// The same through the legacy struct, which has no flags: read-only views and padded fp6/fp4
/// items are refused.
FERRY_EXPORT Result<DLManagedTensor*> ToDLPackLegacy(const MemoryView& view);

/// Take ownership of a versioned DLPack tensor: the returned view's owner calls its deleter when
/// the last copy of the view goes. On a major-version mismatch only the deleter is called and an
/// error is returned. bool (kDLBool, 8 bits) becomes a `{bool}` item; 16-bit floats and
/// bfloat16, the fp8 codes, padded fp6/fp4 and two-lane fp4 become low-precision float items
/// (low_float.hpp); other lanes, packed fp6/fp4, complex and opaque handles are refused (the
/// tensor is still deleted).
FERRY_EXPORT Result<MemoryView> FromDLPack(DLManagedTensorVersioned* tensor);
/// The layout of a plain DLPack tensor as FromDLPack's view would give it: the item format (a
/// static string), the item size, the bytes the shape covers, and the read-only flag.
struct DLPackPlainLayout {
  std::string_view format;  ///< a static string, NUL-terminated
  int64_t item_size = 0;
  int64_t byte_size = 0;
  bool readonly = true;
};
/// The layout of a plain versioned tensor, learned without taking it or allocating. Plain means
/// this major version, one lane of an integer, float or bool, at most `max_dims` dimensions with
/// a shape, and sizes and byte strides that fit in int64; the byte strides go to `byte_strides`
/// when the tensor has strides. Any other tensor gives nullopt: FromDLPack says what is wrong.
FERRY_EXPORT std::optional<DLPackPlainLayout> DescribePlainDLPack(
    const DLManagedTensorVersioned& tensor, int64_t* byte_strides, int64_t max_dims);
/// The same for the legacy struct (taken as writable, as the legacy protocol implies).
FERRY_EXPORT Result<MemoryView> FromDLPackLegacy(DLManagedTensor* tensor);

}  // namespace ferry::memview
