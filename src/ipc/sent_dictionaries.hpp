// What a writer knows of the dictionaries it sent: which arrays are dictionaries (in the
// pre-order that assigns their ids), and how a dictionary is told from the one sent last.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/core/result.hpp"
#include "ipc/assembler.hpp"

namespace ferry::ipc::internal {

/// The value schemas of a schema tree's dictionaries, in the canonical pre-order that assigns
/// ids.
void CollectDictionarySchemas(const ArrowSchema* s, std::vector<const ArrowSchema*>* out);

/// Dictionary-encoded nodes of an array tree, (value schema, dictionary) in the canonical
/// pre-order that assigns ids.
void CollectDictionaries(const ArrowSchema* s, const ArrowArray* a,
                         std::vector<std::pair<const ArrowSchema*, const ArrowArray*>>* out);

/// A hash of an assembled body: its lengths, and every byte of its pieces.
uint64_t HashBody(const AssembledBody& body);

/// The first `length` values of a dictionary, hashed from ferry's JSON rendering (a value, not
/// a layout, comparison): how the writer tells that a new dictionary starts with the one it
/// sent.
Result<uint64_t> ValuesHash(const ArrowSchema* schema, const ArrowArray* dictionary,
                            int64_t length);

/// What the reader holds for one dictionary id: the last message's body hash, and (with deltas)
/// the whole dictionary's length and value hash; and where that dictionary lies in the batch the
/// writer holds (StreamWriter::WriteHeldBatch), empty when it holds none.
struct SentDictionary {
  std::optional<uint64_t> body_hash;  // made when first needed, while `held` is still there
  int64_t length = 0;
  uint64_t values_hash = 0;
  std::vector<uintptr_t> layout;
  const ArrowArray* held = nullptr;  // the dictionary itself, in the held batch
};

/// Where an array's values lie: every node's length, offset, null count and buffer addresses,
/// its children and dictionary included, appended to `out`. In memory that is held (so not
/// freed and reused), and that Arrow's arrays promise not to change, the same layout is the same
/// values.
void AppendLayout(const ArrowArray* a, std::vector<uintptr_t>* out);

}  // namespace ferry::ipc::internal
