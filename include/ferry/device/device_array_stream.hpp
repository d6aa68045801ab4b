// Device array streams: wrapping an ArrowArrayStream as an ArrowDeviceArrayStream.
#pragma once

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/device/device.hpp"

namespace ferry {

/// Wrap `array_stream` (moved in; marked released on success) as `out`, whose arrays are
/// labelled with `device` and carry no event. The end of the stream stays an array whose
/// `release` is NULL, and errors and their messages pass through unchanged. The wrapped
/// stream's private_data is never read. No copy.
FERRY_EXPORT Status BasicDeviceArrayStreamInit(ArrowDeviceArrayStream* out,
                                               ArrowArrayStream* array_stream, Device& device);

}  // namespace ferry
