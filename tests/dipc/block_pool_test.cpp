// The memory of each lent batch's hold: a block handed back is the next one handed out (the same
// address), no more than `keep` are kept, a block of another size is not kept, and through
// allocate_shared an object's memory serves the next object while the pool outlives its owner.
#include "dipc/block_pool.hpp"

#include <memory>
#include <thread>
#include <vector>

#include "support/test_util.hpp"

namespace ferry::dipc::internal {
namespace {

TEST(BlockPool, ABlockHandedBackIsTheNextHandedOut) {
  BlockPool pool(4);
  void* first = pool.Take(48);
  pool.Put(first, 48);
  EXPECT_EQ(pool.kept(), 1u);
  EXPECT_EQ(pool.Take(48), first);
  EXPECT_EQ(pool.kept(), 0u);
  pool.Put(first, 48);
}

TEST(BlockPool, KeepsNoMoreThanItsLimit) {
  BlockPool pool(2);
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(pool.Take(32));
  for (void* b : blocks) pool.Put(b, 32);
  EXPECT_EQ(pool.kept(), 2u);
  // The last two handed back are kept, the last first.
  EXPECT_EQ(pool.Take(32), blocks[1]);
  EXPECT_EQ(pool.Take(32), blocks[0]);
  EXPECT_EQ(pool.kept(), 0u);
  pool.Put(blocks[0], 32);
  pool.Put(blocks[1], 32);
}

TEST(BlockPool, KeepsOnlyTheSizeOfItsFirstBlockBack) {
  BlockPool pool(4);
  void* small = pool.Take(16);
  void* large = pool.Take(64);
  pool.Put(small, 16);
  pool.Put(large, 64);  // freed: the pool is of 16-byte blocks
  EXPECT_EQ(pool.kept(), 1u);
  void* other = pool.Take(64);  // not the kept 16 bytes
  EXPECT_NE(other, small);
  EXPECT_EQ(pool.kept(), 1u);
  pool.Put(other, 64);
}

struct Counted {
  explicit Counted(int* alive) : alive(alive) { ++*alive; }
  ~Counted() { --*alive; }
  int* alive;
};

TEST(PoolAllocator, AnObjectsMemoryServesTheNextAndThePoolOutlivesItsOwner) {
  int alive = 0;
  auto pool = std::make_shared<BlockPool>(8);
  std::shared_ptr<Counted> first =
      std::allocate_shared<Counted>(PoolAllocator<Counted>(pool), &alive);
  const void* memory = first.get();
  first.reset();
  EXPECT_EQ(alive, 0);
  EXPECT_EQ(pool->kept(), 1u);
  std::shared_ptr<Counted> second =
      std::allocate_shared<Counted>(PoolAllocator<Counted>(pool), &alive);
  EXPECT_EQ(second.get(), memory);  // the same control block and object, reused
  EXPECT_EQ(pool->kept(), 0u);
  // The owner lets go of the pool first: the object's allocator keeps it until the object goes.
  std::weak_ptr<BlockPool> watch = pool;
  pool.reset();
  EXPECT_FALSE(watch.expired());
  second.reset();
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(alive, 0);
}

TEST(PoolAllocator, ObjectsMadeOnOneThreadAndLetGoOnAnotherComeBack) {
  int alive = 0;
  auto pool = std::make_shared<BlockPool>(1024);
  std::vector<std::shared_ptr<Counted>> made;
  for (int i = 0; i < 1000; ++i)
    made.push_back(std::allocate_shared<Counted>(PoolAllocator<Counted>(pool), &alive));
  std::thread other([&made] { made.clear(); });
  other.join();
  EXPECT_EQ(alive, 0);
  EXPECT_EQ(pool->kept(), 1000u);
}

}  // namespace
}  // namespace ferry::dipc::internal
