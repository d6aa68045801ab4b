// References to a shared ferry array as fresh ArrowArray trees: each node's release drops one
// reference, so consumers (the C data interface, IPC writers, struct fields) never copy a buffer.
#pragma once

#include <memory>

#include "ferry/format/array.hpp"

namespace ferry_ruby {

/// An ArrowArray tree mirroring `node` (a node of `keep`'s array) whose every node keeps `keep`
/// alive until released. Children and dictionary are wrapped too, so a consumer may move them.
ArrowArray RefArray(std::shared_ptr<const ferry::Array> keep, const ArrowArray* node);

}  // namespace ferry_ruby
