// Shared by the fuzz targets of array views: arbitrary ArrowArray trees from fuzz bytes. The bytes
// choose a schema, every length, offset and null count, and the content of every buffer; each
// buffer is allocated at exactly the size its layout implies (strings: up to their largest
// offset), so ASan reports any read outside what the declared structure allows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "ferry/format/array_view.hpp"
#include "ferry/format/schema.hpp"

namespace ferry::fuzz {

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Next() { return pos_ < size_ ? data_[pos_++] : 0; }
  int64_t Small(int64_t max) { return static_cast<int64_t>(Next()) % (max + 1); }
  void Fill(uint8_t* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = Next();
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Owns every node and buffer of a fuzzed tree.
struct Tree {
  std::vector<std::unique_ptr<ArrowArray>> nodes;
  std::vector<std::unique_ptr<uint8_t[]>> blocks;
  std::vector<std::unique_ptr<const void*[]>> buffer_lists;
  std::vector<std::unique_ptr<ArrowArray*[]>> child_lists;

  uint8_t* Block(int64_t n) {
    blocks.push_back(std::make_unique<uint8_t[]>(static_cast<size_t>(std::max<int64_t>(n, 1))));
    return blocks.back().get();
  }
};

inline void NoRelease(ArrowArray* a) { a->release = nullptr; }

inline bool IsView(ferry::TypeId t) {
  return t == ferry::TypeId::kBinaryView || t == ferry::TypeId::kStringView;
}

// Build the structure (lengths, counts, variadic sizes) with NULL buffers; contents come later.
inline ArrowArray* Shape(const ArrowSchema* schema, Bytes& in, Tree& tree, int depth) {
  auto view = ferry::SchemaView::Make(schema);
  if (!view.ok() || depth > 8) return nullptr;
  auto node = std::make_unique<ArrowArray>();
  ArrowArray* a = node.get();
  tree.nodes.push_back(std::move(node));
  a->length = in.Small(40);
  a->offset = in.Small(9);
  a->null_count = in.Small(a->length + 1) - 1;
  a->n_buffers = view->layout.n_fixed_buffers;
  if (IsView(view->storage_type)) a->n_buffers = 3 + in.Small(2);
  tree.buffer_lists.push_back(
      std::make_unique<const void*[]>(static_cast<size_t>(a->n_buffers + 1)));
  a->buffers = tree.buffer_lists.back().get();
  // A sentinel that is never dereferenced: sizes are computed as for present buffers.
  for (int64_t i = 0; i < a->n_buffers; ++i) a->buffers[i] = reinterpret_cast<const void*>(64);
  if (IsView(view->storage_type)) {
    const int64_t n_variadic = a->n_buffers - 3;
    auto* sizes = reinterpret_cast<int64_t*>(tree.Block(8 * std::max<int64_t>(n_variadic, 1)));
    for (int64_t i = 0; i < n_variadic; ++i) {
      sizes[i] = in.Small(80);
      a->buffers[2 + i] = tree.Block(sizes[i]);
      in.Fill(static_cast<uint8_t*>(const_cast<void*>(a->buffers[2 + i])), sizes[i]);
    }
    a->buffers[a->n_buffers - 1] = sizes;
  }
  a->n_children = schema->n_children;
  tree.child_lists.push_back(
      std::make_unique<ArrowArray*[]>(static_cast<size_t>(a->n_children + 1)));
  a->children = tree.child_lists.back().get();
  for (int64_t i = 0; i < a->n_children; ++i) {
    a->children[i] = Shape(schema->children[i], in, tree, depth + 1);
    if (a->children[i] == nullptr) return nullptr;
  }
  if (schema->dictionary != nullptr) {
    a->dictionary = Shape(schema->dictionary, in, tree, depth + 1);
    if (a->dictionary == nullptr) return nullptr;
  }
  a->release = &NoRelease;
  return a;
}

// Give every fixed buffer exactly the bytes the layout implies, filled from the fuzz input.
inline bool Fill(const ferry::ArrayView& view, ArrowArray* a, Bytes& in, Tree& tree) {
  const ferry::Layout& layout = view.type().layout;
  for (int32_t i = 0; i < layout.n_fixed_buffers; ++i) {
    const int64_t size = view.buffer(i).size;
    if (size == -1) continue;  // string data: sized from the offsets below
    if (layout.buffer_type[static_cast<size_t>(i)] == ferry::BufferType::kValidity &&
        in.Next() % 4 == 0) {
      a->buffers[i] = nullptr;  // no validity buffer at all
      continue;
    }
    if (size > (1 << 16)) return false;
    uint8_t* block = tree.Block(size);
    in.Fill(block, size);
    a->buffers[i] = block;
  }
  if (layout.n_fixed_buffers == 3 && layout.buffer_type[1] == ferry::BufferType::kDataOffset &&
      a->buffers[1] != nullptr) {
    const bool large = layout.element_size_bits[1] == 64;
    const int64_t n = a->offset + a->length + 1;
    int64_t max_offset = 0;
    for (int64_t k = 0; k < n; ++k) {
      int64_t o;
      if (large) {
        std::memcpy(&o, static_cast<const uint8_t*>(a->buffers[1]) + 8 * k, 8);
      } else {
        int32_t o32;
        std::memcpy(&o32, static_cast<const uint8_t*>(a->buffers[1]) + 4 * k, 4);
        o = o32;
      }
      max_offset = std::max(max_offset, o);
    }
    if (max_offset > (1 << 16)) return false;  // a lying offset: undetectable through the C ABI
    uint8_t* data = tree.Block(max_offset);
    in.Fill(data, max_offset);
    a->buffers[2] = data;
  } else if (layout.n_fixed_buffers == 3 &&
             layout.buffer_type[1] == ferry::BufferType::kDataOffset) {
    a->buffers[2] = tree.Block(0);
  }
  for (int64_t c = 0; c < view.n_children(); ++c) {
    if (!Fill(view.child(c), a->children[c], in, tree)) return false;
  }
  if (view.dictionary() != nullptr && !Fill(*view.dictionary(), a->dictionary, in, tree)) {
    return false;
  }
  return true;
}

// The next tree of `schema` from `in` (its memory `tree`'s) that passes every validation level,
// with `view`, made from `schema`, set on it; nullptr where the bytes make none.
inline ArrowArray* ValidTree(const ArrowSchema* schema, Bytes& in, Tree& tree,
                             ferry::ArrayView* view) {
  ArrowArray* root = Shape(schema, in, tree, 0);
  if (root == nullptr) return nullptr;
  // Buffers still hold the sentinel: minimal setup must not read them.
  if (!view->SetArrayMinimal(root).ok()) return nullptr;
  if (!Fill(*view, root, in, tree)) return nullptr;
  if (!view->SetArray(root).ok()) return nullptr;
  for (auto level : {ferry::ValidationLevel::kMinimal, ferry::ValidationLevel::kDefault,
                     ferry::ValidationLevel::kFull}) {
    if (!view->Validate(level).ok()) return nullptr;
  }
  return root;
}

// The fields every fuzz target of arrays draws from, one layout or more of each kind: a fuzz
// input's byte picks one by index, so new fields go at the end (earlier corpora keep their
// picks).
inline std::vector<ferry::Field> Schemas() {
  using ferry::Field;
  auto f = [](const char* format) { return Field::Make(format, "x"); };
  Field item = Field::Make("i", "item");
  Field entries = Field::Make("+s", "entries", {Field::Make("u", "key").WithFlags(0), f("l")});
  return {f("n"),
          f("b"),
          f("c"),
          f("S"),
          f("i"),
          f("L"),
          f("e"),
          f("g"),
          f("d:9,2,32"),
          f("d:38,5"),
          f("d:76,-2,256"),
          f("w:3"),
          f("z"),
          f("U"),
          f("vz"),
          f("vu"),
          f("tdD"),
          f("tsn:UTC"),
          f("tiD"),
          f("tin"),
          Field::Make("+l", "x", {item}),
          Field::Make("+vL", "x", {item}),
          Field::Make("+w:2", "x", {item}),
          Field::Make("+s", "x", {f("i"), Field::Make("u", "y")}),
          Field::Make("+m", "x", {entries.WithFlags(0)}),
          Field::Make("+us:1,4", "x", {f("i"), Field::Make("u", "y")}),
          Field::Make("+ud:0,9", "x", {f("g"), Field::Make("vu", "y")}),
          Field::Make("+r", "x", {Field::Make("s", "run_ends").WithFlags(0), f("u")}),
          Field::Dictionary("x", "c", f("u")),
          Field::Dictionary("x", "L", f("d:5,1")),
          f("u"),
          f("Z"),
          Field::Make("+L", "x", {Field::Make("u", "s")}),
          Field::Make("+vl", "x", {item}),
          Field::Dictionary("x", "I", f("vz"))};
}

// One field of Schemas(), picked by the input's next byte.
inline const ferry::Field& PickField(Bytes& in) {
  static const std::vector<ferry::Field> fields = Schemas();
  return fields[in.Next() % fields.size()];
}

}  // namespace ferry::fuzz
