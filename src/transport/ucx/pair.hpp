// Internal to the UCX transport: ferry's pairs, a metadata message and its body sent as one
// tagged message (the hello's kHelloPairs), and their bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ferry/core/bytes.hpp"
#include "ferry/core/result.hpp"

namespace ferry::transport::internal::ucx {

/// A tagged message from the server whose tag has this bit (reserved in the protocol's body
/// tags) is a pair, tagged as its body with this bit added.
constexpr uint64_t kPairTagBit = uint64_t{1} << 40;
/// With pairs, the tag of a metadata message that has no body (a schema, the end of the stream,
/// an error): every metadata message then travels tagged, in the order the server sent it.
constexpr uint64_t kLoneMetadataTag = kPairTagBit | (uint64_t{1} << 41);
/// A pair's bytes: the metadata message's length (uint32, little-endian), four zero bytes, the
/// metadata message, zeros to a multiple of kPairAlignment, then the body.
constexpr size_t kPairHeaderBytes = 8;
/// Where a pair's body starts is a multiple of this: a body lands as aligned as the buffer.
constexpr size_t kPairAlignment = 64;
/// A body this large or smaller goes in a pair with its metadata: the largest that ferry's UCX
/// sends eager (its RNDV_THRESH). Larger ones go as two messages, where one more small message
/// costs nothing beside the body's rendezvous.
constexpr size_t kPairMaxBodyBytes = size_t{256} << 10;

/// Where the body starts in a pair whose metadata message is `metadata_bytes` long.
constexpr uint64_t PairBodyOffset(uint64_t metadata_bytes) {
  return (kPairHeaderBytes + metadata_bytes + kPairAlignment - 1) / kPairAlignment * kPairAlignment;
}

/// A pair's bytes before its body, for the metadata message in `pieces`: one allocation and a
/// copy of the metadata. Errors name a NULL piece.
Result<std::shared_ptr<std::vector<uint8_t>>> PairHead(std::span<const ByteSpan> pieces);

/// A pair's metadata message and body: views of its bytes, sharing their owner (no copy).
struct PairParts {
  SharedBytes metadata;
  SharedBytes body;
};

/// Split `bytes`, the pair tagged `tag`, whose metadata message may be at most
/// `max_metadata_bytes`. Errors (kInvalidArgument) name the tag and the sizes that do not fit.
Result<PairParts> SplitPair(uint64_t tag, const SharedBytes& bytes, int64_t max_metadata_bytes);

}  // namespace ferry::transport::internal::ucx
