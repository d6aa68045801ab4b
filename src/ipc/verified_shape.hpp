// The shape of the last record batch message a decoder verified, to know the next one of that
// shape without verifying it again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ipc/flatbuffers.hpp"

namespace ferry::ipc::internal {

/// The bytes of the last record batch Message flatbuffer that passed verification, and where its
/// values lie: the batch's length and body length, and the data of its field node, buffer and
/// variadic count vectors. Flatbuffers' verifier and the decoder's checks of a message's layout
/// read none of those values, so a message of the same size whose other bytes are equal passes
/// them as the remembered one did, and `Matches` says so for the cost of comparing the bytes.
/// Owned by one decoder; not thread-safe.
class VerifiedShape {
 public:
  /// Whether `data` (`size` bytes, 8-aligned like the remembered message) equals the remembered
  /// message everywhere but its values. False when nothing is remembered.
  bool Matches(const uint8_t* data, size_t size) const;

  /// Remember `message`, the root of `size` verified bytes at `data`. A message is not
  /// remembered (and a remembered one is forgotten) unless it is a record batch without custom
  /// metadata whose values overlap none of its layout's bytes: a crafted message whose vector
  /// data lay over a vtable or an offset would otherwise change its layout through its values.
  void Remember(const uint8_t* data, size_t size, const fb::Message* message);

  /// Whether a message is remembered; for tests.
  bool remembered() const { return !same_.empty(); }

 private:
  struct Range {
    size_t begin;
    size_t end;
  };
  std::vector<uint8_t> bytes_;  // the remembered message
  std::vector<Range> same_;     // the ranges of bytes_ a match must equal: all but the values
};

}  // namespace ferry::ipc::internal
