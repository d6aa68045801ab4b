// Loading RecordBatch bodies into ArrowArrays, checking everything first.
#include "ipc/array_loader.hpp"

#include <algorithm>
#include <bit>
#include <list>

#include "ferry/core/keep_alive.hpp"
#include "ferry/format/schema_view.hpp"
#include "ipc/endian.hpp"
#include "ipc/load_errors.hpp"
#include "ipc/loaded_validation.hpp"

namespace ferry::ipc::internal {

namespace {

// Non-NULL storage for buffers of length 0 (an empty array's single zero offset included).
alignas(64) const uint8_t kZeros[64] = {};

// What a loaded batch keeps alive: the body and any decompressed or synthesized buffers. Lists:
// their elements stay put as more are added, and an empty one allocates nothing (a deque
// allocates when made, and most batches need neither).
struct BatchHolder {
  std::list<HostBuffer> decompressed;
  std::list<std::vector<int64_t>> variadic_sizes;
};

struct Slice {
  const uint8_t* data;
  int64_t size;
};

class Loader {
 public:
  // `sizes` receives the IPC length of every buffer, node by node (cleared first; its room is
  // reused).
  Loader(const StreamSchema& schema, const fb::RecordBatch* batch, const Body& body,
         const DictionaryLookup& dictionaries, int64_t decompress_limit, MessageLabel label,
         BufferSizes& sizes)
      : schema_(schema),
        batch_(batch),
        body_{body.data, body.size},
        dictionaries_(dictionaries),
        budget_(decompress_limit),
        label_(label),
        nodes_(body.owner),
        sizes_(sizes) {
    swap_ = schema.big_endian != (std::endian::native == std::endian::big);
    sizes_.sizes.clear();
    sizes_.starts.assign(1, 0);
    if (batch != nullptr && batch->nodes() != nullptr) {
      // One allocation for every node of the batch (bounded by the metadata's size).
      // One more for the batch's root, which the decoder makes (TakeNodes).
      nodes_.Reserve(batch->nodes()->size() + 1);
      sizes_.sizes.reserve(batch->buffers() ? batch->buffers()->size() : 0);
      sizes_.starts.reserve(batch->nodes()->size() + 1);
    }
  }

  Status Init() {
    if (batch_->length() < 0) return Fail(Path{}, "the batch length is negative");
    nodes_vector_ = batch_->nodes();
    buffers_vector_ = batch_->buffers();
    if (nodes_vector_ == nullptr) return Fail(Path{}, "the batch has no nodes vector");
    if (buffers_vector_ == nullptr) return Fail(Path{}, "the batch has no buffers vector");
    if (const auto* c = batch_->compression()) {
      if (c->method() != fb::BodyCompressionMethod::BUFFER) {
        return Fail(Path{}, "unknown body compression method");
      }
      if (c->codec() == fb::CompressionType::LZ4_FRAME) {
        codec_ = Codec::kLz4Frame;
      } else if (c->codec() == fb::CompressionType::ZSTD) {
        codec_ = Codec::kZstd;
      } else {
        return Fail(Path{},
                    "unknown compression codec " + std::to_string(static_cast<int>(c->codec())));
      }
    }
    return Status::OK();
  }

  Status Column(const ArrowSchema* s, ArrowArray* out) {
    return Node(s, out, 1, Path{nullptr, s, -1});
  }
  Status SkipColumn(const ArrowSchema* s) { return Skip(s, 1, Path{nullptr, s, -1}); }
  // How many of the batch's buffers the columns so far took.
  flatbuffers::uoffset_t buffers_read() const { return buffer_; }

  Status Finish() const {
    if (node_ != nodes_vector_->size()) {
      return Fail(Path{}, "the batch has " + std::to_string(nodes_vector_->size()) +
                              " field nodes but the schema uses " + std::to_string(node_));
    }
    if (buffer_ != buffers_vector_->size()) {
      return Fail(Path{}, "the batch has " + std::to_string(buffers_vector_->size()) +
                              " buffers but the schema uses " + std::to_string(buffer_));
    }
    const auto* counts = batch_->variadic_buffer_counts();
    if (counts != nullptr && variadic_ != counts->size()) {
      return Fail(Path{}, "the batch has " + std::to_string(counts->size()) +
                              " variadic buffer counts but the schema has " +
                              std::to_string(variadic_) + " view fields");
    }
    return Status::OK();
  }

  KeepAlive TakeNodes() { return std::move(nodes_); }
  // The batch's root: a struct of `length` rows, no validity bitmap, and `n_children` slots the
  // columns are loaded into.
  KeepAlive::Slots Root(ArrowArray* out, int64_t length, int64_t n_children) {
    const void* no_validity = nullptr;
    return nodes_.MakeNode(out, length, 0, 0, &no_validity, 1, n_children);
  }
  void set_preorder(const StreamSchema::Preorder* p) { preorder_ = p; }
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;
  int64_t decompressed() const { return decompressed_; }
  // Whether every node loaded so far passed the one-pass default check (LoadedNodePassesDefault).
  bool passes_default() const { return passes_default_; }
  // Make the one-pass check as nodes are loaded (it reads offsets: host bodies only).
  void CheckAsLoaded() { passes_default_ = true; }

 private:
  // What keeps the buffers made here, made (and kept by the nodes) on first use.
  BatchHolder& Holder() {
    if (holder_ == nullptr) {
      holder_ = std::make_shared<BatchHolder>();
      nodes_.Keep(holder_);
    }
    return *holder_;
  }

  Status Fail(const Path& path, const std::string& why) const {
    return LoadFailure(label_, path, why);
  }

  // The next body buffer, checked against the body. The checks every buffer passes come first
  // and alone; what an error or a compressed buffer needs is in functions of their own
  // (load_errors.hpp), whose strings would otherwise make every call's frame larger.
  Result<Slice> ReadBuffer(const Path& path, int64_t index_in_node) {
    const auto* buffers = buffers_vector_;
    if (buffer_ >= buffers->size()) [[unlikely]] {
      return MissingBuffer(label_, path, index_in_node, buffers->size());
    }
    const fb::Buffer* b = buffers->Get(buffer_);
    const int64_t offset = b->offset();
    const int64_t length = b->length();
    int64_t end = 0;
    if (offset < 0 || length < 0 || offset % 8 != 0 ||
        __builtin_add_overflow(offset, length, &end) || end > body_.size) [[unlikely]] {
      return BadBuffer(label_, path, index_in_node, buffer_, offset, length, body_.size);
    }
    ++buffer_;
    if (length == 0) return Slice{kZeros, 0};
    const uint8_t* p = body_.data + offset;
    if (codec_ == Codec::kNone) return Slice{p, length};
    return Decompressed(path, index_in_node, p, length);
  }

  // Body buffer `buffer_ - 1`, compressed at `p`, decompressed (or its raw bytes, when the
  // writer left them so).
  [[gnu::noinline]] Result<Slice> Decompressed(const Path& path, int64_t index_in_node,
                                               const uint8_t* p, int64_t length) {
    HostBuffer out;
    bool raw = false;
    const int64_t before = budget_;
    Status st = Decompress(codec_, p, length, &out, &raw, &budget_);
    if (!st.ok()) {
      return Fail(path, BufferName(index_in_node, buffer_ - 1) + ": " + st.message());
    }
    if (raw) return Slice{p + 8, length - 8};
    decompressed_ += before - budget_;
    Holder().decompressed.push_back(std::move(out));
    const HostBuffer& kept = Holder().decompressed.back();
    return Slice{kept.size() == 0 ? kZeros : kept.data(), kept.size()};
  }

  // A native-order copy of a buffer written in the other byte order.
  Result<Slice> Swapped(const Slice& b, Swap kind) {
    Holder().decompressed.emplace_back();
    HostBuffer& copy = Holder().decompressed.back();
    FERRY_RETURN_NOT_OK(copy.Resize(b.size));
    SwapBytes(kind, b.data, copy.data(), b.size, /*to_native=*/true);
    decompressed_ += b.size;
    return Slice{copy.data(), b.size};
  }

  // Check that buffer `i` holds `count` elements of `bits` bits, without overflowing on lying
  // lengths.
  Status Need(const Path& path, int64_t i, const Slice& s, int64_t count, int64_t bits,
              const char* what) const {
    int64_t total_bits = 0;
    if (__builtin_mul_overflow(count, bits, &total_bits) ||
        __builtin_add_overflow(total_bits, 7, &total_bits) || s.size < total_bits / 8)
        [[unlikely]] {
      return TooShort(label_, path, i, s.size, count, bits, what);
    }
    return Status::OK();
  }

  Result<const SchemaView*> ViewOf(const ArrowSchema* s, const Path& path) const {
    if (preorder_ != nullptr && node_ < preorder_->nodes.size() && preorder_->nodes[node_] == s) {
      return preorder_->views[node_];  // the common case: field node k is pre-order node k
    }
    return FindView(s, path);
  }

  [[gnu::noinline]] Result<const SchemaView*> FindView(const ArrowSchema* s,
                                                       const Path& path) const {
    if (auto it = schema_.views.find(s); it != schema_.views.end()) return &it->second;
    return Fail(path, "the schema node was never parsed");
  }

  // Step over a column's field nodes and buffers without reading or checking them (a column the
  // reader did not ask for); only that the batch lists them is checked, so that the columns
  // after it are found where they are.
  Status Skip(const ArrowSchema* s, int depth, const Path& path) {
    if (depth > kMaxDepth) return Fail(path, "nesting is deeper than 64");
    FERRY_ASSIGN_OR_RAISE(const SchemaView* v, ViewOf(s, path));
    const auto* nodes = nodes_vector_;
    if (node_ >= nodes->size()) {
      return Fail(
          path, "no field node is left (the batch has only " + std::to_string(nodes->size()) + ")");
    }
    ++node_;
    const TypeId st = v->storage_type;
    int64_t count = v->layout.n_fixed_buffers;
    if ((st == TypeId::kSparseUnion || st == TypeId::kDenseUnion) &&
        schema_.version < fb::MetadataVersion::V5) {
      ++count;
    }
    if (st == TypeId::kBinaryView || st == TypeId::kStringView) {
      const auto* counts = batch_->variadic_buffer_counts();
      if (counts == nullptr || variadic_ >= counts->size()) {
        return Fail(path, "the batch gives no variadic buffer count for this view field");
      }
      const int64_t variadic = counts->Get(variadic_++);
      if (variadic < 0) {
        return Fail(path, "the variadic buffer count " + std::to_string(variadic) + " is negative");
      }
      count += variadic;
    }
    const int64_t left = static_cast<int64_t>(buffers_vector_->size() - buffer_);
    if (count > left) {
      return Fail(path, "the field needs " + std::to_string(count) + " buffers but only " +
                            std::to_string(left) + " are left");
    }
    buffer_ += static_cast<flatbuffers::uoffset_t>(count);
    for (int64_t i = 0; i < s->n_children; ++i) {
      const ArrowSchema* c = s->children[i];
      FERRY_RETURN_NOT_OK(Skip(c, depth + 1, Path{&path, c, i}));
    }
    return Status::OK();
  }

  Status Node(const ArrowSchema* s, ArrowArray* out, int depth, const Path& path) {
    if (depth > kMaxDepth) return Fail(path, "nesting is deeper than 64");
    const size_t first_size = sizes_.sizes.size();
    FERRY_ASSIGN_OR_RAISE(const SchemaView* found, ViewOf(s, path));
    const SchemaView& v = *found;
    const auto* nodes = nodes_vector_;
    if (node_ >= nodes->size()) {
      return Fail(
          path, "no field node is left (the batch has only " + std::to_string(nodes->size()) + ")");
    }
    const fb::FieldNode* n = nodes->Get(node_++);
    const int64_t length = n->length();
    const int64_t null_count = n->null_count();
    if (length < 0 || length > (int64_t{1} << 62) || null_count < 0 || null_count > length)
        [[unlikely]] {
      return BadCounts(label_, path, length, null_count);
    }

    const TypeId st = v.storage_type;
    const bool is_union = st == TypeId::kSparseUnion || st == TypeId::kDenseUnion;
    if (is_union && schema_.version < fb::MetadataVersion::V5) {
      // V4 unions carry a validity buffer the C data interface has no place for.
      FERRY_ASSIGN_OR_RAISE(Slice ignored, ReadBuffer(path, -1));
      (void)ignored;
    }
    // Three fixed buffers at most; view types add variadic ones (then the vector is used).
    const void* fixed[3] = {};
    int64_t n_fixed = 0;
    std::vector<const void*> pointers;
    const Layout& layout = v.layout;
    for (int32_t i = 0; i < layout.n_fixed_buffers; ++i) {
      FERRY_ASSIGN_OR_RAISE(Slice b, ReadBuffer(path, i));
      sizes_.sizes.push_back(b.size);
      const auto bits = layout.element_size_bits[static_cast<size_t>(i)];
      switch (layout.buffer_type[static_cast<size_t>(i)]) {
        case BufferType::kValidity:
          if (null_count == 0) {
            fixed[n_fixed++] = nullptr;  // all valid: the bitmap may be absent or short
            sizes_.sizes.back() = 0;
            continue;
          }
          FERRY_RETURN_NOT_OK(Need(path, i, b, length, 1, "validity bitmap"));
          break;
        case BufferType::kDataOffset:
        case BufferType::kListOffset:
          if (st == TypeId::kListView || st == TypeId::kLargeListView) {
            FERRY_RETURN_NOT_OK(Need(path, i, b, length, bits, "offsets"));
          } else if (length > 0) {
            FERRY_RETURN_NOT_OK(Need(path, i, b, length + 1, bits, "offsets"));
          }
          break;
        case BufferType::kData:
          if (st == TypeId::kFixedSizeBinary) {
            FERRY_RETURN_NOT_OK(Need(path, i, b, length, int64_t{v.fixed_size} * 8, "values"));
          } else if (bits > 0) {
            FERRY_RETURN_NOT_OK(Need(path, i, b, length, bits, "values"));
          }
          break;
        case BufferType::kTypeId:
        case BufferType::kUnionOffset:
        case BufferType::kListSize:
        case BufferType::kView:
          FERRY_RETURN_NOT_OK(Need(path, i, b, length, bits, "values"));
          break;
        default:
          break;
      }
      if (swap_ && b.size > 0) {
        const Swap kind = SwapOf(v, i);
        if (kind != Swap::kNone) {
          FERRY_ASSIGN_OR_RAISE(b, Swapped(b, kind));
        }
      }
      fixed[n_fixed++] = b.data;
    }
    const bool is_view = st == TypeId::kBinaryView || st == TypeId::kStringView;
    if (is_view) {
      pointers.assign(fixed, fixed + n_fixed);
      const auto* counts = batch_->variadic_buffer_counts();
      if (counts == nullptr || variadic_ >= counts->size()) {
        return Fail(path, "the batch gives no variadic buffer count for this view field");
      }
      const int64_t count = counts->Get(variadic_++);
      const int64_t left = static_cast<int64_t>(buffers_vector_->size() - buffer_);
      if (count < 0 || count > left) {
        return Fail(path, "the variadic buffer count " + std::to_string(count) + " is outside 0.." +
                              std::to_string(left) + " (buffers left)");
      }
      Holder().variadic_sizes.emplace_back();
      std::vector<int64_t>& lengths = Holder().variadic_sizes.back();
      for (int64_t k = 0; k < count; ++k) {
        FERRY_ASSIGN_OR_RAISE(Slice b, ReadBuffer(path, 2 + k));
        sizes_.sizes.push_back(b.size);
        pointers.push_back(b.data);
        lengths.push_back(b.size);
      }
      sizes_.sizes.push_back(count * 8);
      pointers.push_back(lengths.empty() ? static_cast<const void*>(kZeros) : lengths.data());
    }

    sizes_.starts.push_back(static_cast<uint32_t>(sizes_.sizes.size()));
    const int64_t n_children = s->n_children;
    const KeepAlive::Slots slots =
        is_view ? nodes_.MakeNode(out, length, null_count, 0, pointers.data(),
                                  static_cast<int64_t>(pointers.size()), n_children)
                : nodes_.MakeNode(out, length, null_count, 0, fixed, n_fixed, n_children);
    for (int64_t i = 0; i < n_children; ++i) {
      const ArrowSchema* c = s->children[i];
      const Path child_path{&path, c, i};
      FERRY_RETURN_NOT_OK(Node(c, &slots.children[i], depth + 1, child_path));
    }
    if (passes_default_) {
      // Checked here, while the node is in cache, so that a batch that passes needs no second
      // walk; one that does not goes to the view, which names what is wrong.
      passes_default_ = s->dictionary == nullptr &&
                        LoadedNodePassesDefault(v, out, sizes_.sizes.data() + first_size);
    }
    if (s->dictionary != nullptr) {
      auto it = schema_.id_of.find(s);
      if (it == schema_.id_of.end()) return Fail(path, "the field has no dictionary id");
      Result<DictionaryRef> dict = dictionaries_(it->second);
      if (!dict.ok()) return Fail(path, dict.status().message());
      KeepAlive(dict->keep).Mirror(*dict->array, slots.dictionary);
      out->dictionary = slots.dictionary;
    }
    return Status::OK();
  }

  const StreamSchema& schema_;
  const fb::RecordBatch* batch_;
  // The batch's two vectors, looked up once (Init): each lookup reads the table's vtable.
  const flatbuffers::Vector<const fb::FieldNode*>* nodes_vector_ = nullptr;
  const flatbuffers::Vector<const fb::Buffer*>* buffers_vector_ = nullptr;
  ByteSpan body_;  // the bytes of the body, which nodes_ keeps alive
  const DictionaryLookup& dictionaries_;
  int64_t budget_;
  MessageLabel label_;
  KeepAlive nodes_;  // every node of the batch, keeping the body and holder_ alive
  std::shared_ptr<BatchHolder> holder_;  // made when a buffer is made here (Holder)
  const StreamSchema::Preorder* preorder_ = nullptr;
  Codec codec_ = Codec::kNone;
  bool swap_ = false;
  flatbuffers::uoffset_t node_ = 0;
  flatbuffers::uoffset_t buffer_ = 0;
  flatbuffers::uoffset_t variadic_ = 0;
  BufferSizes& sizes_;
  int64_t decompressed_ = 0;
  bool passes_default_ = false;  // set by CheckAsLoaded
};

}  // namespace

namespace {

void UsePreorder(Loader& loader, std::span<const ArrowSchema* const> columns,
                 const StreamSchema& schema) {
  if (!columns.empty() && !schema.preorder.nodes.empty() &&
      schema.preorder.nodes[0] == columns[0]) {
    loader.set_preorder(&schema.preorder);
  } else if (columns.size() == 1) {
    for (const auto& [id, p] : schema.dictionary_preorder) {
      if (!p.nodes.empty() && p.nodes[0] == columns[0]) loader.set_preorder(&p);
    }
  }
}

}  // namespace

Result<std::vector<bool>> BuffersOfColumns(std::span<const ArrowSchema* const> columns,
                                           const StreamSchema& schema, const fb::RecordBatch* batch,
                                           const std::vector<bool>& selected,
                                           const MessageLabel& label) {
  if (batch == nullptr) return Status::Invalid(label.str() + ": the message has no record batch");
  const DictionaryLookup none;  // never called: no buffer is read
  BufferSizes sizes;
  Loader loader(schema, batch, Body{}, none, 0, label, sizes);
  FERRY_RETURN_NOT_OK(loader.Init());
  UsePreorder(loader, columns, schema);
  std::vector<bool> needed(batch->buffers()->size(), false);
  for (size_t c = 0; c < columns.size(); ++c) {
    const flatbuffers::uoffset_t first = loader.buffers_read();
    FERRY_RETURN_NOT_OK(loader.SkipColumn(columns[c]));
    if (selected.empty() || selected[c]) {
      for (auto k = first; k < loader.buffers_read(); ++k) needed[k] = true;
    }
  }
  FERRY_RETURN_NOT_OK(loader.Finish());
  return needed;
}

namespace {

// LoadColumns and LoadBatch: the columns go to `root`'s children where it is given (made here,
// so that no column is moved after it is loaded), else to out->columns.
Status Load(std::span<const ArrowSchema* const> columns, const StreamSchema& schema,
            const fb::RecordBatch* batch, const Body& body, const DictionaryLookup& dictionaries,
            int64_t decompress_limit, const MessageLabel& label, const std::vector<bool>& selected,
            bool one_pass, ArrowArray* root, LoadedColumns* out) {
  out->Reset();
  if (batch == nullptr) return Status::Invalid(label.str() + ": the message has no record batch");
  const Body* use = &body;  // not copied: each copy of its owner is an atomic count
  Body aligned;
  int64_t realigned = 0;
  if (reinterpret_cast<uintptr_t>(body.data) % 8 != 0) {
    // Arrays must not hand out misaligned buffers (a legacy 4-byte prefix can shift a body):
    // this is the one case where an uncompressed body is copied.
    FERRY_ASSIGN_OR_RAISE(aligned, SharedBytes::Copy(body));
    realigned = body.size;
    use = &aligned;
  }
  Loader loader(schema, batch, *use, dictionaries, decompress_limit, label, out->buffer_sizes);
  FERRY_RETURN_NOT_OK(loader.Init());
  UsePreorder(loader, columns, schema);
  if (one_pass) loader.CheckAsLoaded();
  KeepAlive::Slots slots{};
  if (root != nullptr) {
    const auto n = selected.empty()
                       ? columns.size()
                       : static_cast<size_t>(std::count(selected.begin(), selected.end(), true));
    slots = loader.Root(root, batch->length(), static_cast<int64_t>(n));
  } else {
    out->columns.reserve(columns.size());
  }
  size_t made = 0;
  for (size_t c = 0; c < columns.size(); ++c) {
    const ArrowSchema* column = columns[c];
    if (!selected.empty() && !selected[c]) {
      FERRY_RETURN_NOT_OK(loader.SkipColumn(column));
      continue;
    }
    ArrowArray* array = nullptr;
    if (root != nullptr) {
      array = &slots.children[made++];
    } else {
      array = out->columns.emplace_back().get();
    }
    FERRY_RETURN_NOT_OK(loader.Column(column, array));
    if (array->length != batch->length()) {
      return Status::Invalid(label.str() + ": column \"" + (column->name ? column->name : "") +
                             "\" has " + std::to_string(array->length) +
                             " rows but the batch has " + std::to_string(batch->length()));
    }
  }
  FERRY_RETURN_NOT_OK(loader.Finish());
  out->nodes = loader.TakeNodes();
  out->decompressed_bytes = loader.decompressed() + realigned;
  // A root made here, or the one the caller makes, has the batch's length, which every column
  // was checked to have.
  out->passes_default = loader.passes_default() && batch->length() <= kOnePassMaxLength;
  return Status::OK();
}

}  // namespace

Status LoadColumns(std::span<const ArrowSchema* const> columns, const StreamSchema& schema,
                   const fb::RecordBatch* batch, const Body& body,
                   const DictionaryLookup& dictionaries, int64_t decompress_limit,
                   const MessageLabel& label, const std::vector<bool>& selected, bool one_pass,
                   LoadedColumns* out) {
  return Load(columns, schema, batch, body, dictionaries, decompress_limit, label, selected,
              one_pass, nullptr, out);
}

Status LoadBatch(std::span<const ArrowSchema* const> columns, const StreamSchema& schema,
                 const fb::RecordBatch* batch, const Body& body,
                 const DictionaryLookup& dictionaries, int64_t decompress_limit,
                 const MessageLabel& label, const std::vector<bool>& selected, bool one_pass,
                 UniqueArray* root, LoadedColumns* out) {
  root->reset();
  Status st = Load(columns, schema, batch, body, dictionaries, decompress_limit, label, selected,
                   one_pass, root->get(), out);
  if (!st.ok()) root->reset();  // with the columns loaded so far
  return st;
}

}  // namespace ferry::ipc::internal
