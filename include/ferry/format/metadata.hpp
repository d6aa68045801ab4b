// Schema metadata in the C data interface's binary encoding.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"

namespace ferry {

/// Owned key/value pairs, in order (keys may repeat, as the format allows).
using Metadata = std::vector<std::pair<std::string, std::string>>;
/// Key/value pairs viewing an encoded metadata block; valid while the block lives.
using MetadataView = std::vector<std::pair<std::string_view, std::string_view>>;

/// Decode an `ArrowSchema.metadata` block (int32 count, then int32-length-prefixed keys and values,
/// native endian). NULL decodes to no pairs. Negative counts or lengths are errors. The block
/// carries no total size, so the caller must trust that it is as long as its lengths say.
FERRY_EXPORT Result<MetadataView> DecodeMetadata(const char* metadata);

/// Encode pairs into a metadata block (the returned bytes are what `metadata` points at).
FERRY_EXPORT std::string EncodeMetadata(const Metadata& pairs);

/// The value of the first pair whose key is `key`, or nullopt.
FERRY_EXPORT Result<std::optional<std::string_view>> MetadataGet(const char* metadata,
                                                                 std::string_view key);

}  // namespace ferry
