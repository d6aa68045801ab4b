// The flatbuffers code flatc generates from message.fbs (and schema.fbs), behind one include so
// that the generated headers stay out of the source tree and out of the public headers.
#pragma once

#include <cstdint>
#include <string>

#include "fbs/file_generated.h"
#include "fbs/message_generated.h"
#include "fbs/schema_generated.h"
#include "ferry/core/status.hpp"

namespace ferry::ipc::internal {

/// Refuse a vector of 8-byte structs or scalars (Block, FieldNode, Buffer, int64) that does not
/// start on an 8-byte boundary. Flatbuffers' verifier checks only 4, and the accessors read
/// fields in place, so a crafted buffer would make every read undefined behaviour; writers always
/// align non-empty ones (an empty one, never read, may sit anywhere: Arrow C++ and ferry's own
/// writer leave empty footer vectors 4 bytes off). `buffer` is the flatbuffer's first byte
/// (8-aligned); `what()` names the vector in the error, and is called only to make one (the
/// check runs for every batch's metadata, and builds no string when it passes).
template <typename Vector, typename What>
Status CheckAligned8(const Vector* v, const uint8_t* buffer, What&& what) {
  if (v == nullptr || v->size() == 0 || reinterpret_cast<uintptr_t>(v->Data()) % 8 == 0) {
    return Status::OK();
  }
  return Status::Invalid(std::string(what()) + " starts at byte " +
                         std::to_string(v->Data() - buffer) +
                         " of its flatbuffer, not on the 8-byte boundary its 64-bit fields need");
}

}  // namespace ferry::ipc::internal
