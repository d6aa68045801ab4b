// KeepAlive: ArrowArray nodes allocated in blocks, each holding one reference to its arena.
#include "ferry/core/keep_alive.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#include "ferry/core/sanitizers.hpp"

namespace ferry {

namespace {

// Under AddressSanitizer every arena is the heap's own, so that a use after its release is
// caught, not hidden by a recycled block.
constexpr int kKeptArenas = FERRY_ASAN ? 0 : 32;

// The memory of arenas released on this thread, kept for the next arena made here. A stream
// makes and lets go of an arena for every batch, and an arena (about 1.5 KB) is larger than the
// blocks glibc's per-thread cache serves at once: its heap path cost a reader of small batches
// about 550 instructions a batch. A reader that lets its batches go a group at a time (`ferry
// get --to` writes 16 at once) releases that many together: 32 keep a group's. At most 32 arenas
// (about 48 KB) a thread; freed when the thread ends.
struct ArenaCache {
  void* blocks[kKeptArenas > 0 ? kKeptArenas : 1] = {};
  int count = 0;
  ~ArenaCache();
};
// Trivially destructible, so still readable while the thread's other destructors run.
thread_local bool arena_cache_gone = false;
thread_local ArenaCache arena_cache;

ArenaCache::~ArenaCache() {
  for (int i = 0; i < count; ++i) ::operator delete(blocks[i]);
  count = 0;
  arena_cache_gone = true;
}

void* TakeArenaMemory(size_t size) {
  if (kKeptArenas > 0 && !arena_cache_gone && arena_cache.count > 0) {
    return arena_cache.blocks[--arena_cache.count];
  }
  return ::operator new(size);
}

void PutArenaMemory(void* block) noexcept {
  if (kKeptArenas > 0 && !arena_cache_gone && arena_cache.count < kKeptArenas) {
    arena_cache.blocks[arena_cache.count++] = block;
    return;
  }
  ::operator delete(block);
}

}  // namespace

class KeepAlive::Arena {
 public:
  explicit Arena(std::shared_ptr<const void> keep) : keep_(std::move(keep)) {}

  // Arenas are all one size: their memory is recycled on the thread that released the last.
  static void* operator new(size_t size) { return TakeArenaMemory(size); }
  static void operator delete(void* block) noexcept { PutArenaMemory(block); }

  void Reserve(size_t n) {
    const Block& block = Current();
    if (block.used + n <= block.capacity) return;
    const size_t capacity = std::max<size_t>(n, 16);
    more_.push_back(Block{std::allocator<Node>().allocate(capacity), capacity, 0});
  }

  void Keep(std::shared_ptr<const void> also) { also_.push_back(std::move(also)); }

  Slots MakeNode(ArrowArray* out, int64_t length, int64_t null_count, int64_t offset,
                 const void* const* buffers, int64_t n_buffers, int64_t n_children) {
    Reserve(1);
    Block& block = Current();
    Node& node = *new (&block.nodes[block.used++]) Node();
    node.arena = this;
    const void** slots = node.inline_buffers;
    if (n_buffers > kInlineBuffers) {
      node.many_buffers.assign(buffers, buffers + n_buffers);
      slots = node.many_buffers.data();
    } else {
      for (int64_t i = 0; i < n_buffers; ++i) slots[i] = buffers[i];
    }
    if (n_children > 0) {
      const auto n = static_cast<size_t>(n_children);
      if (n <= kInlineChildren - children_used_) {
        // A batch's root and a few nested types fit in the arena's own allocation.
        node.children = reinterpret_cast<ArrowArray*>(inline_children_) + children_used_;
        node.child_ptrs = inline_child_ptrs_ + children_used_;
        children_used_ += n;
      } else {
        // The children and the array of pointers to them that C reads, in one allocation.
        node.child_block =
            std::make_unique_for_overwrite<std::byte[]>(n * (sizeof(ArrowArray) + sizeof(void*)));
        node.children = reinterpret_cast<ArrowArray*>(node.child_block.get());
        node.child_ptrs =
            reinterpret_cast<ArrowArray**>(node.child_block.get() + n * sizeof(ArrowArray));
      }
      for (size_t i = 0; i < n; ++i) node.child_ptrs[i] = new (&node.children[i]) ArrowArray{};
    }
    node.n_children = n_children;
    ++made_;  // counted into refs_ when the maker lets go (kMaker)
    // Every field written once (zeroing the struct first wrote it twice).
    *out = ArrowArray{.length = length,
                      .null_count = null_count,
                      .offset = offset,
                      .n_buffers = n_buffers,
                      .n_children = n_children,
                      .buffers = n_buffers == 0 ? nullptr : slots,
                      .children = n_children == 0 ? nullptr : node.child_ptrs,
                      .dictionary = nullptr,
                      .release = &Arena::Release,
                      .private_data = &node};
    return Slots{node.children, &node.dictionary};
  }

  // Drop `n` references: nodes released.
  void Unref(int64_t n) noexcept {
    if (refs_.fetch_sub(n, std::memory_order_acq_rel) == n) delete this;
  }

  // Drop the maker's reference, which stood for every node not made yet: what remains is one
  // reference per node made and not yet released.
  void UnrefMaker() noexcept { Unref(kMaker - made_); }

 private:
  static constexpr int64_t kInlineBuffers = 3;
  // A batch of a few columns fits in the arena's own allocation: its nodes, and the children
  // of its root (or of the few nodes that have children).
  static constexpr size_t kInlineNodes = 4;
  static constexpr size_t kInlineChildren = 8;

  struct Node {
    // Made for every array of every batch: only what is read before MakeNode writes it is
    // set here (value-initialising the whole node zeroed its 200 bytes first).
    Node() noexcept { dictionary.release = nullptr; }
    Arena* arena = nullptr;
    const void* inline_buffers[kInlineBuffers];  // the first n_buffers are written
    std::vector<const void*> many_buffers;       // view types: more than three
    std::unique_ptr<std::byte[]> child_block;    // children, then child_ptrs
    ArrowArray* children = nullptr;
    ArrowArray** child_ptrs = nullptr;
    int64_t n_children = 0;
    ArrowArray dictionary;  // unused until its release is set
  };
  struct Block {
    Node* nodes;
    size_t capacity;
    size_t used;
  };

  Block& Current() { return more_.empty() ? first_ : more_.back(); }

  ~Arena() {
    for (size_t i = 0; i < first_.used; ++i) first_.nodes[i].~Node();
    for (Block& b : more_) {
      for (size_t i = 0; i < b.used; ++i) b.nodes[i].~Node();
      std::allocator<Node>().deallocate(b.nodes, b.capacity);
    }
  }

  static void Release(ArrowArray* array) {
    auto* node = static_cast<Node*>(array->private_data);
    const int64_t released = 1 + ReleaseOwn(*node);
    array->release = nullptr;
    node->arena->Unref(released);
  }

  // Release what `node` still holds (its children and dictionary that the consumer did not move
  // out): those of its own arena without counting each, so that a batch's release drops its
  // arena's count once. How many of its arena's nodes were released.
  static int64_t ReleaseOwn(Node& node) {
    int64_t released = 0;
    const auto release = [&](ArrowArray& a) {
      if (a.release == nullptr) return;  // moved out by the consumer
      auto* inner = static_cast<Node*>(a.private_data);
      if (a.release == &Arena::Release && inner->arena == node.arena) {
        released += 1 + ReleaseOwn(*inner);
        a.release = nullptr;
      } else {
        a.release(&a);
      }
    };
    for (int64_t i = 0; i < node.n_children; ++i) release(node.children[i]);
    release(node.dictionary);
    return released;
  }

  // The maker's reference counts as kMaker until it goes, and each node released takes one, so
  // that making a node touches no atomic: an atomic add per node stalled the maker until the
  // node's stores were out, costly when a consumer on another core last held that memory.
  static constexpr int64_t kMaker = int64_t{1} << 62;
  std::atomic<int64_t> refs_{kMaker};
  int64_t made_ = 0;  // nodes made: the maker's alone
  std::shared_ptr<const void> keep_;
  std::vector<std::shared_ptr<const void>> also_;  // Keep's owners (most arenas have none)
  alignas(Node) unsigned char inline_nodes_[kInlineNodes * sizeof(Node)];
  Block first_{reinterpret_cast<Node*>(inline_nodes_), kInlineNodes, 0};
  alignas(ArrowArray) unsigned char inline_children_[kInlineChildren * sizeof(ArrowArray)];
  ArrowArray* inline_child_ptrs_[kInlineChildren];
  size_t children_used_ = 0;
  std::vector<Block> more_;  // raw storage; nodes are constructed as they are handed out
};

KeepAlive::KeepAlive(std::shared_ptr<const void> keep) : arena_(new Arena(std::move(keep))) {}

KeepAlive::~KeepAlive() {
  if (arena_ != nullptr) arena_->UnrefMaker();
}

KeepAlive::KeepAlive(KeepAlive&& other) noexcept : arena_(other.arena_) { other.arena_ = nullptr; }

KeepAlive& KeepAlive::operator=(KeepAlive&& other) noexcept {
  if (this != &other) {
    if (arena_ != nullptr) arena_->UnrefMaker();
    arena_ = other.arena_;
    other.arena_ = nullptr;
  }
  return *this;
}

void KeepAlive::Reserve(size_t n) { arena_->Reserve(n); }

void KeepAlive::Keep(std::shared_ptr<const void> also) { arena_->Keep(std::move(also)); }

KeepAlive::Slots KeepAlive::MakeNode(ArrowArray* out, int64_t length, int64_t null_count,
                                     int64_t offset, const void* const* buffers, int64_t n_buffers,
                                     int64_t n_children) {
  return arena_->MakeNode(out, length, null_count, offset, buffers, n_buffers, n_children);
}

void KeepAlive::Mirror(const ArrowArray& shape, ArrowArray* out) {
  const Slots slots = MakeNode(out, shape.length, shape.null_count, shape.offset, shape.buffers,
                               shape.n_buffers, shape.n_children);
  for (int64_t i = 0; i < shape.n_children; ++i) Mirror(*shape.children[i], &slots.children[i]);
  if (shape.dictionary != nullptr) {
    Mirror(*shape.dictionary, slots.dictionary);
    out->dictionary = slots.dictionary;
  }
}

}  // namespace ferry
