// DeviceArrayView::Copy and CopyAsync: visible-slice copies of a whole tree into one allocation,
// reading only the sizes they need, one batched read per level.
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/device_array_view_nodes.hpp"
#include "device/device_support.hpp"
#include "ferry/core/keep_alive.hpp"
#include "ferry/device/device_array.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/format/bits.hpp"

namespace ferry {

using internal::HasOffsets;
using internal::OffsetWidth;
using internal::Read;
using internal::ReadValues;

namespace {

enum class Op : uint8_t { kCopy, kShiftBits, kRebase, kZeroOffset, kHost };

// One destination buffer: where it comes from and how it is transformed on the way.
struct Piece {
  int node = 0;
  int buffer = 0;
  Op op = Op::kCopy;
  const uint8_t* src = nullptr;
  int64_t src_bytes = 0;  // bytes read from src
  int64_t dst_bytes = 0;
  int64_t dst_pos = 0;           // in the block (kHost: in the host arena)
  int64_t arg = 0;               // bit shift, or offset base
  int64_t nbits = 0;             // kShiftBits: bits to keep
  int width = 0;                 // kRebase/kZeroOffset: offset width
  const uint8_t* raw = nullptr;  // host copy of the source bytes for transforms
};

struct Node {
  const ArrayView* v = nullptr;
  int64_t start = 0;  // physical element range in v's coordinates
  int64_t len = 0;
  int64_t dst_offset = 0;
  int64_t first = 0, last = 0;
  bool own_range = false;
  std::vector<int> children;
  int dictionary = -1;

  static Node Of(const ArrayView* view, int64_t start, int64_t len) {
    Node n;
    n.v = view;
    n.start = start;
    n.len = len;
    return n;
  }
};

// Owns the copied tree: the device block, the shape of the tree and small host buffers. The
// exported nodes (a KeepAlive's) keep it alive, so children can be moved out and released later.
struct Owner {
  Device* device = nullptr;
  void* block = nullptr;
  int64_t block_size = 0;
  std::vector<ArrowArray> arrays;
  std::vector<std::vector<const void*>> buffers;
  std::vector<std::vector<ArrowArray*>> children;
  std::vector<uint8_t> host;  // variadic sizes and staged transforms (kept until release)

  ~Owner() {
    if (block != nullptr) device->Free(block, block_size);
  }
};

// `data + offset`, or nullptr for a missing buffer (never arithmetic on a null pointer).
const uint8_t* At(const uint8_t* data, int64_t offset) {
  return data == nullptr ? nullptr : data + offset;
}

constexpr int64_t Align64(int64_t n) { return (n + 63) / 64 * 64; }

void ShiftBits(const uint8_t* raw, int64_t shift, int64_t nbits, uint8_t* out) {
  const int64_t nbytes = (nbits + 7) / 8;
  const int64_t raw_bytes = (shift + nbits + 7) / 8;
  for (int64_t i = 0; i < nbytes; ++i) {
    unsigned v = raw[i] >> shift;
    if (i + 1 < raw_bytes) v |= static_cast<unsigned>(raw[i + 1]) << (8 - shift);
    out[i] = static_cast<uint8_t>(v);
  }
  if (nbits % 8 != 0) out[nbytes - 1] &= static_cast<uint8_t>((1u << (nbits % 8)) - 1);
}

template <typename T>
void Rebase(const uint8_t* raw, int64_t n, T base, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    v = static_cast<T>(v - base);
    std::memcpy(out + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
  }
}

}  // namespace

Result<UniqueDeviceArray> DeviceArrayView::Copy(Device& dst) const {
  if (device_ == nullptr) return Status::Invalid("device array view has no array (call SetArray)");
  FERRY_ASSIGN_OR_RAISE(void* stream, InternalStreamFor(*device_, dst));
  FERRY_ASSIGN_OR_RAISE(UniqueDeviceArray out, CopyAsync(dst, stream));
  // A device result is ordered by its event; the stream-less call promises completion.
  if (out->sync_event != nullptr) {
    FERRY_RETURN_NOT_OK(dst.SynchronizeEvent(out->sync_event, nullptr));
    round_trips_ += 1;
  }
  return out;
}

Result<UniqueDeviceArray> DeviceArrayView::CopyAsync(Device& dst, void* stream) const {
  if (device_ == nullptr || array_ == nullptr) {
    return Status::Invalid("device array view has no array (call SetArray)");
  }
  if (array_->array.release == nullptr) return Status::Invalid("the viewed array was released");
  Device& src = *device_;
  FERRY_RETURN_NOT_OK(internal::NeedStream(src, dst, stream, "CopyAsync"));
  round_trips_ = 0;
  // Every read below must follow the producer's work.
  FERRY_RETURN_NOT_OK(WaitSourceEvent(stream, src.host_accessible()));

  // 1. Element ranges, level by level: a child's range depends on its parent's offsets.
  std::vector<Node> nodes;
  nodes.reserve(16);
  nodes.push_back(Node::Of(&view_, view_.offset(), view_.length()));
  std::vector<int> level{0};
  while (!level.empty()) {
    std::vector<Read> reads;
    for (int id : level) {
      Node& n = nodes[static_cast<size_t>(id)];
      const ArrayView& v = *n.v;
      n.own_range = n.start == v.offset() && n.len == v.length();
      if (!HasOffsets(v) || n.len == 0 || v.buffer(1).data == nullptr) continue;
      auto cached = offsets_.find(&v);
      if (n.own_range && cached != offsets_.end()) {
        n.first = cached->second.first;
        n.last = cached->second.second;
        continue;
      }
      const int w = OffsetWidth(v);
      reads.push_back({v.buffer(1).data + n.start * w, w, &n.first});
      reads.push_back({v.buffer(1).data + (n.start + n.len) * w, w, &n.last});
    }
    FERRY_RETURN_NOT_OK(ReadValues(src, reads, stream, &round_trips_));
    std::vector<int> next;
    for (int id : level) {
      // Copy what is needed: `nodes` may grow below.
      const ArrayView& v = *nodes[static_cast<size_t>(id)].v;
      const int64_t start = nodes[static_cast<size_t>(id)].start;
      const int64_t len = nodes[static_cast<size_t>(id)].len;
      const int64_t first = nodes[static_cast<size_t>(id)].first;
      const int64_t last = nodes[static_cast<size_t>(id)].last;
      if (first < 0 || last < first) {
        return Status::Invalid("field \"" + std::string(v.name()) + "\": offsets run from " +
                               std::to_string(first) + " to " + std::to_string(last));
      }
      const TypeId t = v.type().storage_type;
      if (t == TypeId::kRunEndEncoded) nodes[static_cast<size_t>(id)].dst_offset = start;
      for (int64_t c = 0; c < v.n_children(); ++c) {
        const ArrayView& cv = v.child(c);
        Node child = Node::Of(&cv, cv.offset(), cv.length());
        switch (t) {
          case TypeId::kStruct:
          case TypeId::kSparseUnion:
            child.start = cv.offset() + start;
            child.len = len;
            break;
          case TypeId::kList:
          case TypeId::kLargeList:
          case TypeId::kMap:
            if (last > cv.length()) {
              return Status::Invalid("field \"" + std::string(v.name()) + "\": last offset " +
                                     std::to_string(last) + " > child length " +
                                     std::to_string(cv.length()));
            }
            child.start = cv.offset() + first;
            child.len = last - first;
            break;
          case TypeId::kFixedSizeList:
            child.start = cv.offset() + start * v.type().fixed_size;
            child.len = len * v.type().fixed_size;
            break;
          default:  // dense union, list view, run-end encoded: children stay whole
            break;
        }
        if (child.start + child.len > cv.offset() + cv.length()) {
          return Status::Invalid("field \"" + std::string(v.name()) + "\": child " +
                                 std::to_string(c) + " is shorter than its parent needs");
        }
        nodes[static_cast<size_t>(id)].children.push_back(static_cast<int>(nodes.size()));
        next.push_back(static_cast<int>(nodes.size()));
        nodes.push_back(child);
      }
      if (v.dictionary() != nullptr) {
        const ArrayView& d = *v.dictionary();
        nodes[static_cast<size_t>(id)].dictionary = static_cast<int>(nodes.size());
        next.push_back(static_cast<int>(nodes.size()));
        nodes.push_back(Node::Of(&d, d.offset(), d.length()));
      }
    }
    level = std::move(next);
  }

  // 2. Destination layout: every buffer of every node in one block.
  std::vector<Piece> pieces;
  int64_t block_size = 0;
  int64_t host_size = 0;
  for (size_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    const ArrayView& v = *n.v;
    const Layout& l = v.type().layout;
    for (int64_t b = 0; b < v.n_buffers(); ++b) {
      Piece p;
      p.node = static_cast<int>(id);
      p.buffer = static_cast<int>(b);
      const uint8_t* data = v.buffer(b).data;
      const BufferType bt = v.buffer_type(b);
      const int bits = b < l.n_fixed_buffers ? l.element_size_bits[static_cast<size_t>(b)] : 0;
      const bool bitmap = bt == BufferType::kValidity || (bt == BufferType::kData && bits == 1);
      const bool is_list_view = v.type().storage_type == TypeId::kListView ||
                                v.type().storage_type == TypeId::kLargeListView;
      if (bitmap) {
        if ((data == nullptr || n.len == 0) && bt == BufferType::kValidity) continue;
        p.dst_bytes = (n.len + 7) / 8;
        if (n.start % 8 == 0) {
          p.src = At(data, n.start / 8);
          p.src_bytes = p.dst_bytes;
        } else {
          p.op = Op::kShiftBits;
          p.src = At(data, n.start / 8);
          p.arg = n.start % 8;
          p.nbits = n.len;
          p.src_bytes = (p.arg + n.len + 7) / 8;
        }
      } else if ((bt == BufferType::kDataOffset || bt == BufferType::kListOffset) &&
                 !is_list_view) {
        p.width = bits / 8;
        p.dst_bytes = (n.len + 1) * p.width;
        if (data == nullptr || n.len == 0) {
          p.op = Op::kZeroOffset;
        } else if (n.first == 0) {
          p.src = At(data, n.start * p.width);
          p.src_bytes = p.dst_bytes;
        } else {
          p.op = Op::kRebase;
          p.src = At(data, n.start * p.width);
          p.src_bytes = p.dst_bytes;
          p.arg = n.first;
        }
      } else if (bt == BufferType::kData && bits == 0) {  // string/binary bytes
        p.src = At(data, n.first);
        p.src_bytes = p.dst_bytes = n.last - n.first;
      } else if (bt == BufferType::kTypeId || bt == BufferType::kUnionOffset ||
                 bt == BufferType::kData || bt == BufferType::kView ||
                 bt == BufferType::kListSize || bt == BufferType::kListOffset) {
        const int64_t w = (bt == BufferType::kTypeId) ? 1 : bits / 8;
        p.src = At(data, n.start * w);
        p.src_bytes = p.dst_bytes = n.len * w;
      } else if (bt == BufferType::kVariadicData) {
        p.src = data;
        p.src_bytes = p.dst_bytes = v.buffer(b).size;
      } else if (bt == BufferType::kVariadicSize) {
        // Host-resident by convention, on every device.
        p.op = Op::kHost;
        p.src = data;
        p.src_bytes = p.dst_bytes = v.buffer(b).size;
        p.dst_pos = host_size;
        host_size += Align64(p.dst_bytes);
        pieces.push_back(p);
        continue;
      } else {
        continue;
      }
      if (p.src == nullptr && p.op != Op::kZeroOffset && p.dst_bytes > 0) {
        return Status::Invalid("field \"" + std::string(v.name()) + "\": buffer " +
                               std::to_string(b) + " is NULL but " + std::to_string(p.dst_bytes) +
                               " bytes are needed");
      }
      p.dst_pos = block_size;
      block_size += Align64(p.dst_bytes);
      pieces.push_back(p);
    }
  }

  // 3. Allocate once; build the host structs.
  auto owner = std::make_unique<Owner>();
  owner->device = &dst;
  if (block_size > 0) {
    FERRY_ASSIGN_OR_RAISE(owner->block, dst.Allocate(block_size, stream));
    owner->block_size = block_size;
  }
  auto* block = static_cast<uint8_t*>(owner->block);

  // 4. Transforms need the source bytes on the host: stage them with one round trip.
  int64_t raw_size = 0;
  for (const Piece& p : pieces) {
    if ((p.op == Op::kShiftBits || p.op == Op::kRebase) && !src.host_accessible()) {
      raw_size += Align64(p.src_bytes);
    }
  }
  const bool dst_host = dst.host_accessible();
  int64_t temp_size = 0;
  if (!dst_host) {
    for (const Piece& p : pieces) {
      if (p.op == Op::kShiftBits || p.op == Op::kRebase || p.op == Op::kZeroOffset) {
        temp_size += Align64(p.dst_bytes);
      }
    }
  }
  owner->host.assign(static_cast<size_t>(host_size + raw_size + temp_size), 0);
  uint8_t* host = owner->host.data();
  // Host memory to a device with a staging pool (CUDA): the whole tree is packed into pinned
  // memory in the destination's layout and moved with one copy.
  internal::StagingBuffer pack;
  if (src.host_accessible() && !dst_host && block_size > 0) {
    Result<internal::StagingBuffer> staging = internal::AcquireStaging(dst, block_size);
    if (staging.ok()) pack = *staging;
  }
  int64_t raw_pos = host_size;
  bool staged = false;
  bool pending = false;  // device work queued since the last wait
  // Device sources are gathered on the device first, so one copy brings them all to the host.
  void* gather = nullptr;
  if (raw_size > 0) {
    FERRY_ASSIGN_OR_RAISE(gather, src.Allocate(raw_size, stream));
  }
  // Freed after the wait below, or in stream order if a copy fails before it.
  std::unique_ptr<void, std::function<void(void*)>> gather_owner(
      gather, [&src, raw_size](void* g) { src.Free(g, raw_size); });
  for (Piece& p : pieces) {
    if (p.op == Op::kShiftBits || p.op == Op::kRebase) {
      if (src.host_accessible()) {
        p.raw = p.src;
      } else {
        auto* to = static_cast<uint8_t*>(gather) + (raw_pos - host_size);
        FERRY_RETURN_NOT_OK(CopyBytes(src, p.src, src, to, p.src_bytes, stream));
        p.raw = host + raw_pos;
        raw_pos += Align64(p.src_bytes);
        staged = true;
      }
    } else if (p.op == Op::kCopy && p.dst_bytes > 0 && pack.data != nullptr) {
      std::memcpy(pack.data + p.dst_pos, p.src, static_cast<size_t>(p.dst_bytes));
    } else if (p.op == Op::kCopy && p.dst_bytes > 0) {
      FERRY_RETURN_NOT_OK(CopyBytes(src, p.src, dst, block + p.dst_pos, p.dst_bytes, stream));
      pending = true;
    } else if (p.op == Op::kHost && p.dst_bytes > 0) {
      std::memcpy(host + p.dst_pos, p.src, static_cast<size_t>(p.dst_bytes));
    }
  }
  if (staged) {
    FERRY_RETURN_NOT_OK(CopyBytes(src, gather, *CpuDevice(), host + host_size, raw_size, stream));
    FERRY_RETURN_NOT_OK(src.SynchronizeEvent(nullptr, stream));
    round_trips_ += 1;
    pending = false;
  }
  int64_t temp_pos = host_size + raw_size;
  for (Piece& p : pieces) {
    if (p.op != Op::kShiftBits && p.op != Op::kRebase && p.op != Op::kZeroOffset) continue;
    uint8_t* out = dst_host               ? block + p.dst_pos
                   : pack.data != nullptr ? pack.data + p.dst_pos
                                          : host + temp_pos;
    if (p.op == Op::kShiftBits) {
      ShiftBits(p.raw, p.arg, p.nbits, out);
    } else if (p.op == Op::kRebase) {
      if (p.width == 4) {
        Rebase<int32_t>(p.raw, p.dst_bytes / 4, static_cast<int32_t>(p.arg), out);
      } else {
        Rebase<int64_t>(p.raw, p.dst_bytes / 8, p.arg, out);
      }
    } else {
      std::memset(out, 0, static_cast<size_t>(p.dst_bytes));
    }
    if (!dst_host && pack.data == nullptr) {
      FERRY_RETURN_NOT_OK(
          CopyBytes(*CpuDevice(), out, dst, block + p.dst_pos, p.dst_bytes, stream));
      temp_pos += Align64(p.dst_bytes);
      pending = true;
    }
  }
  if (pack.data != nullptr) {
    Status st = CopyBytes(*CpuDevice(), pack.data, dst, block, block_size, stream);
    Status released = internal::ReleaseStaging(dst, pack, st.ok() ? stream : nullptr);
    FERRY_RETURN_NOT_OK(st);
    FERRY_RETURN_NOT_OK(released);
    pending = true;
  }

  // A CPU result must be complete before the host sees it (CPU arrays carry no event).
  const bool must_finish = dst.device_type() == ARROW_DEVICE_CPU && stream != nullptr;
  if (must_finish && pending) {
    FERRY_RETURN_NOT_OK(internal::SynchronizeStream(src, dst, stream));
    round_trips_ += 1;
  }

  // 5. The ArrowArray tree.
  owner->arrays.resize(nodes.size());
  owner->buffers.resize(nodes.size());
  owner->children.resize(nodes.size());
  for (size_t id = 0; id < nodes.size(); ++id) {
    owner->buffers[id].assign(static_cast<size_t>(nodes[id].v->n_buffers()), nullptr);
  }
  for (const Piece& p : pieces) {
    const void* where = p.op == Op::kHost ? static_cast<const void*>(host + p.dst_pos)
                                          : static_cast<const void*>(block + p.dst_pos);
    if (p.op == Op::kHost && p.dst_bytes == 0) where = nullptr;
    owner->buffers[static_cast<size_t>(p.node)][static_cast<size_t>(p.buffer)] = where;
  }
  for (size_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    const ArrayView& v = *n.v;
    ArrowArray& a = owner->arrays[id];
    a.length = n.len;
    a.offset = n.dst_offset;
    a.n_buffers = v.n_buffers();
    a.buffers = owner->buffers[id].empty() ? nullptr : owner->buffers[id].data();
    for (int c : n.children) owner->children[id].push_back(&owner->arrays[static_cast<size_t>(c)]);
    a.n_children = static_cast<int64_t>(n.children.size());
    a.children = owner->children[id].empty() ? nullptr : owner->children[id].data();
    a.dictionary = n.dictionary >= 0 ? &owner->arrays[static_cast<size_t>(n.dictionary)] : nullptr;
    // Null count: the producer's where the range is its own; counted where the result is on
    // the CPU and complete; unknown (-1) otherwise.
    const bool has_validity = v.n_buffers() > 0 && v.buffer_type(0) == BufferType::kValidity;
    if (v.type().storage_type == TypeId::kNull) {
      a.null_count = n.len;
    } else if (!has_validity || v.buffer(0).data == nullptr) {
      a.null_count = 0;
    } else if (n.own_range && v.null_count() >= 0) {
      a.null_count = v.null_count();
    } else if (must_finish || (dst.device_type() == ARROW_DEVICE_CPU && stream == nullptr)) {
      a.null_count = n.len - CountSetBits(static_cast<const uint8_t*>(a.buffers[0]), 0, n.len);
    } else {
      a.null_count = -1;
    }
  }
  ArrowArray root{};
  const ArrowArray& shape = owner->arrays[0];
  KeepAlive(std::shared_ptr<const Owner>(std::move(owner))).Mirror(shape, &root);

  UniqueDeviceArray out;
  Status st = dst.InitArray(out.get(), &root, nullptr, must_finish ? nullptr : stream);
  if (!st.ok()) {
    root.release(&root);
    return st;
  }
  return out;
}

}  // namespace ferry
