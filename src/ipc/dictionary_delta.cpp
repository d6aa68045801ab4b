// Joining a dictionary and its delta: flat value types buffer by buffer, the rest through JSON.
#include "ipc/dictionary_delta.hpp"

#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "ferry/core/host_buffer.hpp"
#include "ferry/core/keep_alive.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/bits.hpp"
#include "ferry/format/json.hpp"
#include "ipc/flat_values.hpp"

namespace ferry::ipc::internal {

namespace {

// Non-NULL storage for buffers of no bytes.
alignas(64) const uint8_t kNoBytes[64] = {};

// The joined array's buffers, kept by its nodes.
struct Joined {
  HostBuffer validity;
  HostBuffer values;  // fixed-width values, booleans' bits, or offsets
  HostBuffer data;    // binary and string bytes
};

// Bits [from, from + n) of `src` (all set where `src` is NULL) to bits [at, at + n) of `dst`.
void CopyBits(const uint8_t* src, int64_t from, int64_t n, uint8_t* dst, int64_t at) {
  if (src != nullptr && from % 8 == 0 && at % 8 == 0) {
    std::memcpy(dst + at / 8, src + from / 8, static_cast<size_t>(n / 8));
    for (int64_t i = n / 8 * 8; i < n; ++i) SetBit(dst, at + i, GetBit(src, from + i));
    return;
  }
  for (int64_t i = 0; i < n; ++i) SetBit(dst, at + i, src == nullptr || GetBit(src, from + i));
}

int64_t NullCount(const ArrowArray* a) {
  if (a->null_count >= 0) return a->null_count;
  const auto* bits = static_cast<const uint8_t*>(a->buffers[0]);
  return bits == nullptr ? 0 : a->length - CountSetBits(bits, a->offset, a->length);
}

// The rows of `dictionary` then `delta` through their JSON renderings: every type, slowly.
Result<UniqueArray> JoinThroughJson(const ArrowSchema* schema, const ArrowArray* a,
                                    const ArrowArray* b) {
  FERRY_ASSIGN_OR_RAISE(ArrayView va, ArrayView::Make(schema));
  FERRY_RETURN_NOT_OK(va.SetArray(a));
  FERRY_ASSIGN_OR_RAISE(ArrayView vb, ArrayView::Make(schema));
  FERRY_RETURN_NOT_OK(vb.SetArray(b));
  FERRY_ASSIGN_OR_RAISE(std::string ja, ArrayToJson(va));
  FERRY_ASSIGN_OR_RAISE(std::string jb, ArrayToJson(vb));
  // Both are JSON arrays: splice b's elements after a's.
  ja.pop_back();
  if (a->length > 0 && b->length > 0) ja.push_back(',');
  ja.append(jb, 1, std::string::npos);
  return ArrayFromJson(schema, ja);
}

// Offsets of `width` bytes (4 or 8) of both parts, each rebased to follow what comes before
// it, and their bytes; fails if a 32-bit offset would overflow.
template <typename Offset>
Status JoinBinary(const ArrowArray* const (&parts)[2], Joined* out) {
  int64_t bytes = 0;
  for (const ArrowArray* p : parts) {
    if (p->length == 0) continue;
    const auto* offsets = static_cast<const Offset*>(p->buffers[1]) + p->offset;
    if (offsets[p->length] < offsets[0]) {
      return Status::Invalid("the " + std::string(p == parts[0] ? "dictionary" : "delta") +
                             "'s last offset " + std::to_string(offsets[p->length]) +
                             " is below its first " + std::to_string(offsets[0]));
    }
    bytes += static_cast<int64_t>(offsets[p->length] - offsets[0]);
  }
  if (bytes > std::numeric_limits<Offset>::max()) {
    return Status::OutOfRange("the dictionary and its delta hold " + std::to_string(bytes) +
                              " bytes of values, past the " +
                              std::to_string(std::numeric_limits<Offset>::max()) +
                              " that 32-bit offsets reach (a large_string or large_binary "
                              "dictionary takes them)");
  }
  const int64_t rows = parts[0]->length + parts[1]->length;
  FERRY_RETURN_NOT_OK(out->values.Resize((rows + 1) * static_cast<int64_t>(sizeof(Offset))));
  FERRY_RETURN_NOT_OK(out->data.Resize(bytes));
  auto* joined = reinterpret_cast<Offset*>(out->values.data());
  joined[0] = 0;
  Offset base = 0;
  int64_t row = 0;
  for (const ArrowArray* p : parts) {
    if (p->length == 0) continue;
    const auto* offsets = static_cast<const Offset*>(p->buffers[1]) + p->offset;
    const Offset first = offsets[0];
    for (int64_t i = 1; i <= p->length; ++i) joined[row + i] = base + (offsets[i] - first);
    const Offset n = offsets[p->length] - first;
    if (n > 0) {
      std::memcpy(out->data.data() + base, static_cast<const uint8_t*>(p->buffers[2]) + first,
                  static_cast<size_t>(n));
    }
    base += n;
    row += p->length;
  }
  return Status::OK();
}

}  // namespace

Result<UniqueArray> JoinDelta(const ArrowSchema* schema, const ArrowArray* dictionary,
                              const ArrowArray* delta) {
  const std::optional<FlatValues> flat = FlatValuesOf(schema);
  if (!flat) return JoinThroughJson(schema, dictionary, delta);
  const bool binary = flat->binary;
  const int64_t bits = flat->bits;  // a fixed-width value's, 1 for booleans

  const ArrowArray* const parts[2] = {dictionary, delta};
  const int64_t rows = dictionary->length + delta->length;
  const int64_t nulls = NullCount(dictionary) + NullCount(delta);
  auto joined = std::make_shared<Joined>();
  // Buffer `i` of both parts, as bits, into `out`.
  const auto join_bits = [&](int i, HostBuffer* out) -> Status {
    FERRY_RETURN_NOT_OK(out->Resize((rows + 7) / 8));
    int64_t at = 0;
    for (const ArrowArray* p : parts) {
      CopyBits(static_cast<const uint8_t*>(p->buffers[i]), p->offset, p->length, out->data(), at);
      at += p->length;
    }
    return Status::OK();
  };
  if (nulls > 0) FERRY_RETURN_NOT_OK(join_bits(0, &joined->validity));
  if (binary) {
    FERRY_RETURN_NOT_OK(flat->large ? JoinBinary<int64_t>(parts, joined.get())
                                    : JoinBinary<int32_t>(parts, joined.get()));
  } else if (bits == 1) {
    FERRY_RETURN_NOT_OK(join_bits(1, &joined->values));
  } else {
    const int64_t width = bits / 8;
    FERRY_RETURN_NOT_OK(joined->values.Resize(rows * width));
    int64_t at = 0;
    for (const ArrowArray* p : parts) {
      if (p->length > 0) {
        std::memcpy(joined->values.data() + at,
                    static_cast<const uint8_t*>(p->buffers[1]) + p->offset * width,
                    static_cast<size_t>(p->length * width));
      }
      at += p->length * width;
    }
  }
  const auto stored = [](const HostBuffer& b) -> const void* {
    return b.size() > 0 ? b.data() : kNoBytes;
  };
  const void* buffers[3] = {nulls > 0 ? joined->validity.data() : nullptr, stored(joined->values),
                            stored(joined->data)};
  UniqueArray out;
  KeepAlive keep(joined);
  keep.MakeNode(out.get(), rows, nulls, 0, buffers, binary ? 3 : 2, 0);
  return out;
}

}  // namespace ferry::ipc::internal
