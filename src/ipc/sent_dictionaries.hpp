// What a writer knows of the dictionaries it sent: which arrays are dictionaries (in the
// pre-order that assigns their ids), and how a dictionary is told from the one sent last.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/core/result.hpp"
#include "ipc/assembler.hpp"

namespace ferry::ipc::internal {

/// Dictionary-encoded nodes of an array tree, (value schema, dictionary) in the canonical
/// pre-order that assigns ids.
void CollectDictionaries(const ArrowSchema* s, const ArrowArray* a,
                         std::vector<std::pair<const ArrowSchema*, const ArrowArray*>>* out);

/// A hash of an assembled body: its lengths, and every byte of its pieces.
uint64_t HashBody(const AssembledBody& body);

/// The first `length` values of a dictionary, hashed as values, bit for bit (nothing under a
/// null is read): in blocks of rows, each FlatValuesHash for flat types and row by row (or column
/// by column where no row is null) for the others. How the writer tells that a new dictionary
/// starts with the one it sent. O(length).
Result<uint64_t> ValuesHash(const ArrowSchema* schema, const ArrowArray* dictionary,
                            int64_t length);

/// ValuesHash of a dictionary's first `head` values and of all of them.
struct ValuesHashes {
  uint64_t head = 0;
  uint64_t full = 0;
};

/// Both in one pass over the dictionary (the block `head` ends in is read twice): for a writer
/// that keeps only hashes, which compares a grown dictionary's first values with the one it sent
/// and keeps the grown one's hash for the next.
Result<ValuesHashes> HashValues(const ArrowSchema* schema, const ArrowArray* dictionary,
                                int64_t head);

/// Whether two assembled bodies hold the same bytes: the same nodes, and each buffer's bytes alike
/// (its padding apart). Equal bodies hold equal values; unequal ones may too (the bytes under
/// nulls may differ), which a caller must tell another way.
bool SameBody(const AssembledBody& a, const AssembledBody& b);

/// HashBody of `array` assembled as a writer would (uncompressed, `alignment`, `swap_bytes`).
Result<uint64_t> HashArray(const ArrowSchema* schema, const ArrowArray* array, int64_t alignment,
                           bool swap_bytes);

/// Whether the first `length` values of `dictionary` are those of `sent` (of that length): for
/// flat types value by value (SameFlatValues), for the others by their bytes assembled as
/// HashArray assembles them (unequal bytes may still be equal values, as under nulls).
Result<bool> SamePrefix(const ArrowSchema* schema, const ArrowArray* sent,
                        const ArrowArray* dictionary, int64_t length, int64_t alignment,
                        bool swap_bytes);

/// What the reader holds for one dictionary id: the last message's body hash, and (with deltas)
/// the whole dictionary's length and value hash; and where that dictionary lies in the batch the
/// writer holds (StreamWriter::WriteHeldBatch), empty when it holds none.
struct SentDictionary {
  std::optional<uint64_t> body_hash;  // made when first needed, while `held` is still there
  int64_t length = 0;
  std::optional<uint64_t> values_hash;  // with deltas: made as body_hash is
  std::vector<uintptr_t> layout;
  const ArrowArray* held = nullptr;     // the dictionary itself, in the held batch
  const ArrowSchema* schema = nullptr;  // its value schema (the writer's)
};

/// A lent dictionary is known by its values' hash from now on: `now` gets it. Where `sent` (the
/// dictionary sent last, known by its hash alone; may be NULL) is no longer than `dictionary`,
/// the same pass gives `head` the hash of `dictionary`'s first `sent->length` values.
Status HashLent(const ArrowSchema* schema, const ArrowArray* dictionary, const SentDictionary* sent,
                SentDictionary* now, std::optional<uint64_t>* head);

/// Give `d` its body hash (HashArray of the dictionary it holds, assembled with `alignment` and
/// `swap_bytes`) where it has none yet and still holds one.
Status HashHeld(SentDictionary* d, int64_t alignment, bool swap_bytes);

/// With `deltas`: give `d` its values' hash (ValuesHash of the dictionary it holds) where it has
/// none yet and still holds one.
Status HashHeldValues(SentDictionary* d, bool deltas);

/// Before the batches that `sent` points into go: each sent dictionary gets its hashes, and is
/// known by its values alone from then on (one whose hashes cannot be made is forgotten: it is
/// sent again, as a replacement, when next used).
void ForgetHeld(std::map<int64_t, SentDictionary>* sent, int64_t alignment, bool swap_bytes,
                bool deltas);

/// Where an array's values lie: every node's length, offset, null count and buffer addresses,
/// its children and dictionary included, appended to `out`. In memory that is held (so not
/// freed and reused), and that Arrow's arrays promise not to change, the same layout is the same
/// values.
void AppendLayout(const ArrowArray* a, std::vector<uintptr_t>* out);

}  // namespace ferry::ipc::internal
