// Body layout for the writer: one pass over the array tree in pre-order.
#include "ipc/assembler.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <thread>

#include "ferry/format/bits.hpp"
#include "ferry/format/schema_view.hpp"
#include "ipc/endian.hpp"

namespace ferry::ipc::internal {

namespace {

alignas(64) const uint8_t kPadding[64] = {};

// Element i of a little-endian signed integer buffer of `width` bytes (2, 4 or 8).
int64_t LoadSigned(const uint8_t* raw, int width, int64_t i) {
  if (width == 2) {
    int16_t x;
    std::memcpy(&x, raw + i * 2, 2);
    return x;
  }
  if (width == 4) {
    int32_t x;
    std::memcpy(&x, raw + i * 4, 4);
    return x;
  }
  int64_t x;
  std::memcpy(&x, raw + i * 8, 8);
  return x;
}

void StoreSigned(uint8_t* raw, int width, int64_t i, int64_t v) {
  if (width == 2) {
    const auto y = static_cast<int16_t>(v);
    std::memcpy(raw + i * 2, &y, 2);
  } else if (width == 4) {
    const auto y = static_cast<int32_t>(v);
    std::memcpy(raw + i * 4, &y, 4);
  } else {
    std::memcpy(raw + i * 8, &v, 8);
  }
}

// Where a node sits, rendered only for an error message: a column ("field \"x\"", "column 2",
// "dictionary") and the steps below it.
struct Where {
  const Where* parent = nullptr;
  const ArrowSchema* node = nullptr;  // a step: this child's schema
  int64_t index = 0;
  const char* root = nullptr;  // the column: its label when it has no name ("column", ...)

  std::string Render() const {
    // Appends only (GCC 12 warns spuriously on prepending to a temporary string).
    std::string out;
    if (parent != nullptr) out.append(parent->Render()).append(" > ");
    const char* name = node != nullptr ? node->name : nullptr;
    if (name != nullptr && *name != '\0') {
      if (parent == nullptr) out.append("field ");
      return out.append("\"").append(name).append("\"");
    }
    if (parent == nullptr) {
      out.append(root);
      if (index >= 0) out.append(" ").append(std::to_string(index));
      return out;
    }
    return out.append("child ").append(std::to_string(index));
  }
};

class Assembler {
 public:
  // `nodes`: how many field nodes to make room for (a guess is fine: the vectors grow).
  // Fills `out`, cleared first (its vectors keep their room).
  Assembler(int64_t alignment, Codec codec, int level, bool swap_bytes, size_t nodes,
            AssembledBody& out)
      : out_(out),
        entries_(out.entries),
        alignment_(alignment),
        codec_(codec),
        level_(level),
        swap_(swap_bytes) {
    out_.Clear();
    out_.nodes.reserve(nodes);
    entries_.reserve(3 * nodes);
  }

  AssembledBody& out() { return out_; }

  // Write node `a` of type `s` restricted to its buffer positions [offset, offset + length).
  // `types`, when given, is a view made from `s` whose parsed types are used (a writer makes one
  // per stream); otherwise each node's type is parsed here.
  Status Node(const ArrowSchema* s, const ArrayView* types, const ArrowArray* a, int64_t offset,
              int64_t length, const Where& path, int depth) {
    if (depth > 64) return Status::Invalid(path.Render() + ": nesting is deeper than 64");
    std::optional<SchemaView> parsed;
    if (types == nullptr) {
      FERRY_ASSIGN_OR_RAISE(SchemaView made, SchemaView::Make(s));
      parsed.emplace(std::move(made));
    }
    const SchemaView& v = types != nullptr ? types->type() : *parsed;
    const TypeId st = v.storage_type;
    const auto* buffers = reinterpret_cast<const uint8_t* const*>(a->buffers);
    const bool whole = offset == a->offset && length == a->length;

    int64_t null_count = 0;
    const bool has_validity =
        v.layout.n_fixed_buffers > 0 && v.layout.buffer_type[0] == BufferType::kValidity;
    if (st == TypeId::kNull) {
      null_count = length;
    } else if (has_validity && buffers[0] != nullptr) {
      null_count = (whole && a->null_count >= 0)
                       ? a->null_count
                       : length - CountSetBits(buffers[0], offset, length);
    }
    out_.nodes.emplace_back(length, null_count);

    switch (st) {
      case TypeId::kNull:
        return Status::OK();
      case TypeId::kStruct:
        FERRY_RETURN_NOT_OK(Validity(buffers, null_count, offset, length));
        for (int64_t i = 0; i < a->n_children; ++i) {
          const ArrowArray* c = a->children[i];
          FERRY_RETURN_NOT_OK(Node(s->children[i], Child(types, i), c, c->offset + offset, length,
                                   Where{&path, s->children[i], i}, depth + 1));
        }
        return Status::OK();
      case TypeId::kBool:
        FERRY_RETURN_NOT_OK(Validity(buffers, null_count, offset, length));
        return Bits(buffers[1], offset, length);
      case TypeId::kBinary:
      case TypeId::kString:
      case TypeId::kLargeBinary:
      case TypeId::kLargeString: {
        FERRY_RETURN_NOT_OK(Validity(buffers, null_count, offset, length));
        const int width = (st == TypeId::kLargeBinary || st == TypeId::kLargeString) ? 8 : 4;
        int64_t first = 0;
        int64_t last = 0;
        FERRY_RETURN_NOT_OK(Offsets(buffers[1], width, offset, length, &first, &last));
        return Span(buffers[2] + first, last - first);
      }
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kMap: {
        FERRY_RETURN_NOT_OK(Validity(buffers, null_count, offset, length));
        const int width = st == TypeId::kLargeList ? 8 : 4;
        int64_t first = 0;
        int64_t last = 0;
        FERRY_RETURN_NOT_OK(Offsets(buffers[1], width, offset, length, &first, &last));
        const ArrowArray* c = a->children[0];
        return Node(s->children[0], Child(types, 0), c, c->offset + first, last - first,
                    Where{&path, s->children[0], 0}, depth + 1);
      }
      case TypeId::kListView:
      case TypeId::kLargeListView: {
        FERRY_RETURN_NOT_OK(Validity(buffers, null_count, offset, length));
        const int width = st == TypeId::kLargeListView ? 8 : 4;
        const Swap kind = width == 4 ? Swap::kWidth4 : Swap::kWidth8;
        FERRY_RETURN_NOT_OK(Span(buffers[1] + offset * width, length * width, kind));
        FERRY_RETURN_NOT_OK(Span(buffers[2] + offset * width, length * width, kind));
        // Views index the whole child: write it whole.
        const ArrowArray* c = a->children[0];
        return Node(s->children[0], Child(types, 0), c, c->offset, c->length,
                    Where{&path, s->children[0], 0}, depth + 1);
      }
      case TypeId::kFixedSizeList: {
        FERRY_RETURN_NOT_OK(Validity(buffers, null_count, offset, length));
        const int64_t n = v.fixed_size;
        const ArrowArray* c = a->children[0];
        return Node(s->children[0], Child(types, 0), c, c->offset + offset * n, length * n,
                    Where{&path, s->children[0], 0}, depth + 1);
      }
      case TypeId::kSparseUnion:
      case TypeId::kDenseUnion: {
        FERRY_RETURN_NOT_OK(Span(buffers[0] + offset, length));
        if (st == TypeId::kDenseUnion) {
          FERRY_RETURN_NOT_OK(Span(buffers[1] + offset * 4, length * 4, Swap::kWidth4));
        }
        for (int64_t i = 0; i < a->n_children; ++i) {
          const ArrowArray* c = a->children[i];
          const bool sparse = st == TypeId::kSparseUnion;
          FERRY_RETURN_NOT_OK(
              Node(s->children[i], Child(types, i), c, sparse ? c->offset + offset : c->offset,
                   sparse ? length : c->length, Where{&path, s->children[i], i}, depth + 1));
        }
        return Status::OK();
      }
      case TypeId::kRunEndEncoded:
        return RunEndEncoded(s, types, a, offset, length, path, depth);
      case TypeId::kBinaryView:
      case TypeId::kStringView: {
        FERRY_RETURN_NOT_OK(Validity(buffers, null_count, offset, length));
        FERRY_RETURN_NOT_OK(Span(buffers[1] + offset * 16, length * 16, Swap::kView));
        const int64_t n_variadic = a->n_buffers - 3;
        if (n_variadic < 0)
          return Status::Invalid(path.Render() + ": a view array needs at least 3 buffers");
        const auto* sizes = reinterpret_cast<const int64_t*>(a->buffers[a->n_buffers - 1]);
        for (int64_t k = 0; k < n_variadic; ++k) {
          FERRY_RETURN_NOT_OK(Span(buffers[2 + k], sizes[k]));
        }
        out_.variadic_counts.push_back(n_variadic);
        return Status::OK();
      }
      default:
        break;
    }
    // Fixed-width: primitives, decimals, temporal, intervals, fixed-size binary, dictionary
    // indices (the dictionary itself goes out in a DictionaryBatch).
    FERRY_RETURN_NOT_OK(Validity(buffers, null_count, offset, length));
    const int64_t width =
        st == TypeId::kFixedSizeBinary ? v.fixed_size : v.layout.element_size_bits[1] / 8;
    // The kind of swap is looked up only when writing the other byte order.
    return Span(buffers[1] + offset * width, length * width, swap_ ? SwapOf(v, 1) : Swap::kNone);
  }

 private:
  // A run-end encoded slice: only the runs it touches, with run ends rebased to the slice (a
  // copy of those run ends; the values go out in place).
  Status RunEndEncoded(const ArrowSchema* s, const ArrayView* types, const ArrowArray* a,
                       int64_t offset, int64_t length, const Where& path, int depth) {
    const ArrowArray* ends = a->children[0];
    const ArrowArray* values = a->children[1];
    if (offset == 0 && length == a->length && ends->offset == 0) {
      FERRY_RETURN_NOT_OK(Node(s->children[0], Child(types, 0), ends, 0, ends->length,
                               Where{&path, s->children[0], 0}, depth + 1));
      return Node(s->children[1], Child(types, 1), values, values->offset, values->length,
                  Where{&path, s->children[1], 1}, depth + 1);
    }
    std::optional<SchemaView> parsed;
    if (types == nullptr) {
      FERRY_ASSIGN_OR_RAISE(SchemaView made, SchemaView::Make(s->children[0]));
      parsed.emplace(std::move(made));
    }
    const SchemaView& ev = types != nullptr ? types->child(0).type() : *parsed;
    const int width = ev.layout.element_size_bits[1] / 8;
    const auto* raw = static_cast<const uint8_t*>(ends->buffers[1]) + ends->offset * width;
    auto load = [&](int64_t k) { return LoadSigned(raw, width, k); };
    int64_t first = 0;
    int64_t count = 0;
    if (length > 0) {
      // First run ending after `offset`, then the first ending at or after the slice's end.
      int64_t lo = 0;
      int64_t hi = ends->length;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (load(mid) > offset)
          hi = mid;
        else
          lo = mid + 1;
      }
      first = lo;
      int64_t last = first;
      while (last < ends->length && load(last) < offset + length) ++last;
      if (last >= ends->length)
        return Status::Invalid(path.Render() + ": the run ends stop before the slice's end");
      count = last - first + 1;
    }
    out_.nodes.emplace_back(count, 0);
    FERRY_RETURN_NOT_OK(Span(nullptr, 0));
    HostBuffer& copy = Own();
    FERRY_RETURN_NOT_OK(copy.Resize(count * width));
    for (int64_t k = 0; k < count; ++k) {
      StoreSigned(copy.data(), width, k, std::min(load(first + k), offset + length) - offset);
    }
    out_.copied += copy.size();
    FERRY_RETURN_NOT_OK(Span(copy.data(), copy.size(), SwapOf(ev, 1)));
    return Node(s->children[1], Child(types, 1), values, values->offset + first, count,
                Where{&path, s->children[1], 1}, depth + 1);
  }

  static const ArrayView* Child(const ArrayView* types, int64_t i) {
    return types != nullptr ? &types->child(i) : nullptr;
  }

  Status Validity(const uint8_t* const* buffers, int64_t null_count, int64_t offset,
                  int64_t length) {
    if (null_count == 0 || buffers[0] == nullptr) return Span(nullptr, 0);
    return Bits(buffers[0], offset, length);
  }

  // A bitmap's visible bits: in place when they start on a byte, otherwise shifted into a copy.
  Status Bits(const uint8_t* bits, int64_t offset, int64_t length) {
    if (length == 0) return Span(nullptr, 0);
    const int64_t bytes = (length + 7) / 8;
    if (offset % 8 == 0) return Span(bits + offset / 8, bytes);
    HostBuffer& copy = Own();
    FERRY_RETURN_NOT_OK(copy.Resize(bytes));
    std::memset(copy.data(), 0, static_cast<size_t>(bytes));
    for (int64_t i = 0; i < length; ++i) {
      if ((bits[(offset + i) >> 3] >> ((offset + i) & 7)) & 1) {
        copy.data()[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
      }
    }
    out_.copied += bytes;
    return Span(copy.data(), bytes);
  }

  // Offsets of a slice: in place when they start at 0, otherwise rebased into a copy.
  Status Offsets(const uint8_t* raw, int width, int64_t offset, int64_t length, int64_t* first,
                 int64_t* last) {
    if (length == 0) {
      *first = *last = 0;
      return Span(kPadding, width);  // one zero offset (the same in either byte order)
    }
    auto load = [&](int64_t i) { return LoadSigned(raw, width, i); };
    *first = load(offset);
    *last = load(offset + length);
    if (*last < *first) return Status::Invalid("offsets decrease across the written range");
    const Swap kind = width == 4 ? Swap::kWidth4 : Swap::kWidth8;
    if (*first == 0) return Span(raw + offset * width, (length + 1) * width, kind);
    HostBuffer& copy = Own();
    FERRY_RETURN_NOT_OK(copy.Resize((length + 1) * width));
    for (int64_t i = 0; i <= length; ++i) {
      StoreSigned(copy.data(), width, i, load(offset + i) - *first);
    }
    out_.copied += copy.size();
    return Span(copy.data(), copy.size(), kind);
  }

  HostBuffer& Own() {
    out_.owned.emplace_back();
    return out_.owned.back();
  }

  // Record one body buffer (swapped into a copy when writing the other byte order); Finish lays
  // them out once compression has fixed their sizes.
  Status Span(const uint8_t* data, int64_t size, Swap kind = Swap::kNone) {
    if (swap_ && kind != Swap::kNone && size > 0) {
      HostBuffer& swapped = Own();
      FERRY_RETURN_NOT_OK(swapped.Resize(size));
      SwapBytes(kind, data, swapped.data(), size, /*to_native=*/false);
      out_.copied += size;
      data = swapped.data();
    }
    entries_.push_back(ByteSpan{data, size});
    return Status::OK();
  }

 public:
  // Compress (in parallel when the body is large), then assign offsets and padding.
  Status Finish() {
    if (codec_ != Codec::kNone) FERRY_RETURN_NOT_OK(CompressAll());
    out_.buffers.reserve(entries_.size());
    out_.buffer_data.reserve(entries_.size());
    out_.pieces.reserve(2 * entries_.size());
    for (const ByteSpan& e : entries_) {
      out_.buffers.emplace_back(out_.body_length, e.size);
      out_.buffer_data.push_back(e.size > 0 ? e.data : nullptr);
      if (e.size > 0) out_.pieces.push_back(ByteSpan{e.data, e.size});
      // The writer's alignment is 8 or 64: a mask, not a division per buffer.
      const int64_t padded = (e.size + alignment_ - 1) & ~(alignment_ - 1);
      if (padded > e.size) out_.pieces.push_back(ByteSpan{kPadding, padded - e.size});
      out_.body_length += padded;
    }
    return Status::OK();
  }

 private:
  Status CompressAll() {
    std::vector<HostBuffer> framed(entries_.size());
    std::vector<Status> results(entries_.size());
    int64_t total = 0;
    for (const ByteSpan& e : entries_) total += e.size;
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < entries_.size(); i = next++) {
        if (entries_[i].size > 0) {
          results[i] = Compress(codec_, entries_[i].data, entries_[i].size, level_, &framed[i]);
        }
      }
    };
    // Buffers compress independently: spread large bodies over the cores.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const auto threads = static_cast<unsigned>(
        std::min<int64_t>({cores, static_cast<int64_t>(entries_.size()), total >> 20}));
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) {
      pool.emplace_back(work);
      pthread_setname_np(pool.back().native_handle(), "ferry-compress");
    }
    work();
    for (std::thread& t : pool) t.join();
    for (size_t i = 0; i < entries_.size(); ++i) {
      FERRY_RETURN_NOT_OK(results[i]);
      if (entries_[i].size == 0) continue;
      out_.copied += framed[i].size();
      out_.owned.push_back(std::move(framed[i]));
      entries_[i] = ByteSpan{out_.owned.back().data(), out_.owned.back().size()};
    }
    return Status::OK();
  }

  AssembledBody& out_;
  std::vector<ByteSpan>& entries_;  // out_.entries
  int64_t alignment_;
  Codec codec_;
  int level_;
  bool swap_;
};

// Finish pads each buffer with a mask: the alignment must be a power of two.
Status CheckAlignment(int64_t alignment) {
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    return Status::Invalid("a body's alignment must be a power of two, not " +
                           std::to_string(alignment));
  }
  return Status::OK();
}

}  // namespace

void AssembledBody::Clear() {
  length = 0;
  nodes.clear();
  buffers.clear();
  variadic_counts.clear();
  pieces.clear();
  buffer_data.clear();
  owned.clear();
  body_length = 0;
  copied = 0;
  entries.clear();
}

Status AssembleBatchInto(const ArrowSchema* schema, const ArrowArray* root, int64_t alignment,
                         Codec codec, int level, bool swap_bytes, const ArrayView* types,
                         AssembledBody* out) {
  if (root == nullptr || root->release == nullptr) {
    return Status::Invalid("the batch is NULL or released");
  }
  FERRY_RETURN_NOT_OK(CheckAlignment(alignment));
  if (root->n_children != schema->n_children) {
    return Status::Invalid("the batch has " + std::to_string(root->n_children) +
                           " columns but the schema has " + std::to_string(schema->n_children));
  }
  if (root->null_count != 0 && root->n_buffers > 0 && root->buffers[0] != nullptr) {
    return Status::Invalid("the batch's top-level struct has nulls, which IPC cannot carry");
  }
  Assembler a(alignment, codec, level, swap_bytes, static_cast<size_t>(root->n_children) + 4, *out);
  for (int64_t i = 0; i < root->n_children; ++i) {
    const ArrowArray* c = root->children[i];
    if (c == nullptr || c->release == nullptr || c->length < root->offset + root->length) {
      return Status::Invalid("column " + std::to_string(i) +
                             " is NULL, released or shorter than the batch");
    }
    const Where column{nullptr, schema->children[i], i, "column"};
    FERRY_RETURN_NOT_OK(a.Node(schema->children[i], types != nullptr ? &types->child(i) : nullptr,
                               c, c->offset + root->offset, root->length, column, 1));
  }
  a.out().length = root->length;
  return a.Finish();
}

Result<AssembledBody> AssembleBatch(const ArrowSchema* schema, const ArrowArray* root,
                                    int64_t alignment, Codec codec, int level, bool swap_bytes,
                                    const ArrayView* types) {
  AssembledBody out;
  FERRY_RETURN_NOT_OK(
      AssembleBatchInto(schema, root, alignment, codec, level, swap_bytes, types, &out));
  return out;
}

Result<AssembledBody> AssembleArray(const ArrowSchema* schema, const ArrowArray* array,
                                    int64_t alignment, Codec codec, int level, bool swap_bytes) {
  if (array == nullptr || array->release == nullptr) {
    return Status::Invalid("the dictionary is NULL or released");
  }
  FERRY_RETURN_NOT_OK(CheckAlignment(alignment));
  AssembledBody out;
  Assembler a(alignment, codec, level, swap_bytes, 4, out);
  const Where dictionary{nullptr, nullptr, -1, "dictionary"};
  FERRY_RETURN_NOT_OK(a.Node(schema, nullptr, array, array->offset, array->length, dictionary, 1));
  out.length = array->length;
  FERRY_RETURN_NOT_OK(a.Finish());
  return out;
}

}  // namespace ferry::ipc::internal
