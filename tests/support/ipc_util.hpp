// IPC helpers shared by the ipc tests, fuzzers and benchmarks: write batches to bytes, read them
// back, and render what was read.
#pragma once

#include <string>
#include <vector>

#include "ferry/abi/unique.hpp"
#include "ferry/core/bytes.hpp"
#include "ferry/format/array.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/decoder.hpp"
#include "ferry/ipc/writer.hpp"

namespace ferry::testing {

/// Write `batches` (struct arrays of `schema`) in the stream or file format into memory.
Result<SharedBytes> WriteIpc(const ArrowSchema* schema,
                             const std::vector<const ArrowArray*>& batches, bool file,
                             ipc::WriteOptions options = {});

/// Read a whole stream (or file, by its magic) and render every batch as JSON rows, one string
/// per batch.
Result<std::vector<std::string>> ReadIpcAsJson(const SharedBytes& bytes,
                                               ipc::ReadOptions options = {});

/// Every buffer pointer of a tree (dictionaries included), for zero-copy and alignment checks.
void CollectBuffers(const ArrowArray* array, std::vector<const void*>* out);

/// A root struct field with one child per column.
Field BatchField(std::vector<Field> columns);

/// A CPU device batch over `a`'s nodes (no copy; `a` must outlive it) whose release only counts,
/// in `*releases`: for writers that take their batches.
UniqueDeviceArray BorrowCounted(const ArrowArray* a, int* releases);

}  // namespace ferry::testing
