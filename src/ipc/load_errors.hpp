// Internal to the IPC decoder: what the array loader says when a batch's nodes or buffers are
// wrong, naming the message, the field and the buffer. Out of line and cold: the loader's checks
// stay small on the path every buffer of every batch takes.
#pragma once

#include <cstdint>
#include <string>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/core/status.hpp"
#include "ipc/message_label.hpp"

namespace ferry::ipc::internal {

/// Where a node sits in the batch: a chain of stack frames, one per level, rendered only for an
/// error ("field \"l\" > child 0"). Borrows the schema nodes and its parent.
struct Path {
  const Path* parent = nullptr;
  const ArrowSchema* node = nullptr;
  int64_t index = -1;

  /// The words for this place; empty at the batch's own level.
  std::string Render() const;
};

/// Invalid: "`label`, `path`: `why`".
[[gnu::cold]] Status LoadFailure(const MessageLabel& label, const Path& path,
                                 const std::string& why);

/// How buffer `index_in_node` of a node (-1: a V4 union's validity buffer), body buffer
/// `body_index`, is named in errors.
std::string BufferName(int64_t index_in_node, uint32_t body_index);

/// A node's buffer the batch does not list (it has only `buffers`).
[[gnu::cold]] Status MissingBuffer(const MessageLabel& label, const Path& path,
                                   int64_t index_in_node, uint32_t buffers);

/// A buffer whose offset or length is negative, whose offset is not 8-aligned, or that runs past
/// the body of `body_size` bytes: the first of these that holds.
[[gnu::cold]] Status BadBuffer(const MessageLabel& label, const Path& path, int64_t index_in_node,
                               uint32_t body_index, int64_t offset, int64_t length,
                               int64_t body_size);

/// Buffer `i` (`what`) of `size` bytes, too short for `count` elements of `bits` bits (or a
/// count whose size overflows).
[[gnu::cold]] Status TooShort(const MessageLabel& label, const Path& path, int64_t i, int64_t size,
                              int64_t count, int64_t bits, const char* what);

/// A field node whose length is negative or too large, or whose null count lies outside
/// 0..length: the first of these that holds.
[[gnu::cold]] Status BadCounts(const MessageLabel& label, const Path& path, int64_t length,
                               int64_t null_count);

}  // namespace ferry::ipc::internal
