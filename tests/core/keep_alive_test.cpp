// KeepAlive: the owner lives exactly as long as the last exported node, whichever it is, and a
// moved-out child outlives its parent; an arena's memory serves the next one made on the thread
// that released it (counted by the suite's replaced operator new).
#include "ferry/core/keep_alive.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "ferry/abi/unique.hpp"
#include "support/counted_new.hpp"

namespace ferry {
namespace {

// The owner's lifetime, observable through a weak pointer.
struct Watched {
  std::vector<int32_t> values{1, 2, 3, 4};
};

TEST(KeepAlive, TheOwnerGoesWithTheLastNodeNotTheMaker) {
  auto owner = std::make_shared<Watched>();
  std::weak_ptr<Watched> watch = owner;
  const void* buffers[2] = {nullptr, owner->values.data()};
  UniqueArray array;
  {
    KeepAlive nodes(std::move(owner));
    nodes.MakeNode(array.get(), 4, 0, 0, buffers, 2, 0);
  }  // the maker is gone; the node still holds the owner
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(array->length, 4);
  EXPECT_EQ(array->n_buffers, 2);
  EXPECT_EQ(static_cast<const int32_t*>(array->buffers[1])[3], 4);
  array.reset();
  EXPECT_TRUE(watch.expired());
}

// Nodes are counted into the arena's references only when the maker goes (making one touches no
// atomic): every node released while the maker lives leaves the owner to the maker, in either
// order of the last two, and a maker assigned over lets go of its arena the same way.
TEST(KeepAlive, TheOwnerGoesWithTheMakerWhenEveryNodeWentBefore) {
  auto owner = std::make_shared<Watched>();
  std::weak_ptr<Watched> watch = owner;
  const void* buffers[2] = {nullptr, owner->values.data()};
  {
    KeepAlive nodes(std::move(owner));
    for (int i = 0; i < 3; ++i) {
      UniqueArray array;
      nodes.MakeNode(array.get(), 4, 0, 0, buffers, 2, 0);
    }  // each released at once
    EXPECT_FALSE(watch.expired()) << "the owner went while its maker still makes nodes";
    UniqueArray kept;
    nodes.MakeNode(kept.get(), 4, 0, 0, buffers, 2, 0);
    kept.reset();
    EXPECT_FALSE(watch.expired());
  }
  EXPECT_TRUE(watch.expired());

  auto second = std::make_shared<Watched>();
  std::weak_ptr<Watched> second_watch = second;
  UniqueArray outlives;
  KeepAlive maker(std::move(second));
  maker.MakeNode(outlives.get(), 4, 0, 0, buffers, 2, 0);
  maker = KeepAlive();  // the arena's maker reference goes; the node still holds the owner
  EXPECT_FALSE(second_watch.expired());
  outlives.reset();
  EXPECT_TRUE(second_watch.expired());
}

TEST(KeepAlive, AMovedOutChildOutlivesItsParent) {
  auto owner = std::make_shared<Watched>();
  std::weak_ptr<Watched> watch = owner;
  const void* none[1] = {nullptr};
  const void* leaf[2] = {nullptr, owner->values.data()};
  UniqueArray parent;
  {
    KeepAlive nodes(std::move(owner));
    nodes.Reserve(3);
    const KeepAlive::Slots slots = nodes.MakeNode(parent.get(), 4, 0, 0, none, 1, 2);
    nodes.MakeNode(&slots.children[0], 4, 0, 0, leaf, 2, 0);
    nodes.MakeNode(&slots.children[1], 2, 0, 2, leaf, 2, 0);
  }
  ASSERT_EQ(parent->n_children, 2);
  UniqueArray child(parent->children[1]);  // moved out: the parent's slot is now released
  EXPECT_EQ(parent->children[1]->release, nullptr);
  parent.reset();  // releases child 0 only
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(child->offset, 2);
  EXPECT_EQ(static_cast<const int32_t*>(child->buffers[1])[child->offset], 3);
  child.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(KeepAlive, MirrorCopiesShapeAndPointersNotBytes) {
  auto owner = std::make_shared<Watched>();
  std::weak_ptr<Watched> watch = owner;
  // A dictionary-encoded column inside a struct, as a caller-built shape.
  const void* dict_buffers[2] = {nullptr, owner->values.data()};
  ArrowArray dictionary{};
  dictionary.length = 4;
  dictionary.n_buffers = 2;
  dictionary.buffers = dict_buffers;
  static const int8_t kIndices[3] = {3, 0, 1};
  const void* index_buffers[2] = {nullptr, kIndices};
  ArrowArray indices{};
  indices.length = 3;
  indices.null_count = 0;
  indices.n_buffers = 2;
  indices.buffers = index_buffers;
  indices.dictionary = &dictionary;
  ArrowArray* children[1] = {&indices};
  const void* struct_buffers[1] = {nullptr};
  ArrowArray shape{};
  shape.length = 3;
  shape.n_buffers = 1;
  shape.buffers = struct_buffers;
  shape.n_children = 1;
  shape.children = children;

  UniqueArray out;
  KeepAlive(std::move(owner)).Mirror(shape, out.get());
  ASSERT_EQ(out->n_children, 1);
  const ArrowArray& col = *out->children[0];
  EXPECT_EQ(col.length, 3);
  EXPECT_EQ(col.buffers[1], kIndices);  // the same bytes, not a copy
  ASSERT_NE(col.dictionary, nullptr);
  EXPECT_EQ(col.dictionary->length, 4);
  EXPECT_EQ(static_cast<const int32_t*>(col.dictionary->buffers[1])[kIndices[0]], 4);
  EXPECT_NE(col.dictionary->release, nullptr);
  out.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(KeepAlive, ViewTypesKeepEveryBuffer) {
  std::vector<const void*> many(7);
  for (size_t i = 0; i < many.size(); ++i) many[i] = &many[i];
  UniqueArray out;
  KeepAlive().MakeNode(out.get(), 1, 0, 0, many.data(), static_cast<int64_t>(many.size()), 0);
  ASSERT_EQ(out->n_buffers, 7);
  for (size_t i = 0; i < many.size(); ++i) EXPECT_EQ(out->buffers[i], &many[i]);
}

TEST(KeepAlive, AForeignChildMovedInIsReleasedWithTheNode) {
  static int released = 0;
  released = 0;
  ArrowArray foreign{};
  foreign.length = 1;
  foreign.release = [](ArrowArray* a) {
    ++released;
    a->release = nullptr;
  };
  const void* none[1] = {nullptr};
  UniqueArray out;
  {
    KeepAlive nodes;
    const KeepAlive::Slots slots = nodes.MakeNode(out.get(), 1, 0, 0, none, 1, 1);
    slots.children[0] = foreign;  // moved in
  }
  EXPECT_EQ(released, 0);
  out.reset();
  EXPECT_EQ(released, 1);
}

// A node released with its parent is counted against its own arena, not its parent's: a node of
// another KeepAlive moved into a slot goes with the parent, and each owner exactly once.
TEST(KeepAlive, ANodeOfAnotherArenaMovedInGoesWithTheParent) {
  auto first = std::make_shared<Watched>();
  auto second = std::make_shared<Watched>();
  std::weak_ptr<Watched> watch_first = first;
  std::weak_ptr<Watched> watch_second = second;
  const void* none[1] = {nullptr};
  const void* leaf[2] = {nullptr, second->values.data()};
  UniqueArray parent;
  UniqueArray sibling;
  {
    KeepAlive nodes(std::move(first));
    const KeepAlive::Slots slots = nodes.MakeNode(parent.get(), 4, 0, 0, none, 1, 2);
    const KeepAlive::Slots inner = nodes.MakeNode(&slots.children[0], 4, 0, 0, none, 1, 1);
    nodes.MakeNode(&inner.children[0], 4, 0, 0, none, 1, 0);  // a grandchild
    KeepAlive others(std::move(second));
    others.MakeNode(&slots.children[1], 4, 0, 0, leaf, 2, 0);  // the other arena's, moved in
    others.MakeNode(sibling.get(), 4, 0, 0, leaf, 2, 0);       // and one it keeps outside
  }
  parent.reset();
  EXPECT_TRUE(watch_first.expired());    // the parent, its child and grandchild: all of its arena
  EXPECT_FALSE(watch_second.expired());  // the sibling still holds the other arena
  EXPECT_EQ(static_cast<const int32_t*>(sibling->buffers[1])[2], 3);
  sibling.reset();
  EXPECT_TRUE(watch_second.expired());
}

TEST(KeepAlive, AnOwnerKeptLaterGoesWithTheLastNodeToo) {
  auto owner = std::make_shared<Watched>();
  auto later = std::make_shared<Watched>();
  std::weak_ptr<Watched> watch_owner = owner;
  std::weak_ptr<Watched> watch_later = later;
  const void* buffers[2] = {nullptr, later->values.data()};
  UniqueArray array;
  {
    KeepAlive nodes(std::move(owner));
    nodes.MakeNode(array.get(), 4, 0, 0, buffers, 2, 0);
    nodes.Keep(std::move(later));  // after the node was made, as a decompressed buffer is
  }
  ASSERT_FALSE(watch_later.expired());
  EXPECT_EQ(static_cast<const int32_t*>(array->buffers[1])[2], 3);
  array.reset();
  EXPECT_TRUE(watch_owner.expired());
  EXPECT_TRUE(watch_later.expired());
}

// Past the nodes that come with the KeepAlive, and past a reserved block, every node still
// reads back what it was given, and its children array is contiguous as C reads it.
TEST(KeepAlive, ManyNodesAndChildrenReadBackWhatTheyWereGiven) {
  auto owner = std::make_shared<Watched>();
  std::weak_ptr<Watched> watch = owner;
  constexpr int64_t kChildren = 40;
  const void* none[1] = {nullptr};
  const void* leaf[2] = {nullptr, owner->values.data()};
  UniqueArray root;
  {
    KeepAlive nodes(std::move(owner));
    nodes.Reserve(2);  // fewer than will be made: the rest come in further blocks
    const KeepAlive::Slots slots = nodes.MakeNode(root.get(), 4, 0, 0, none, 1, kChildren);
    for (int64_t i = 0; i < kChildren; ++i) {
      nodes.MakeNode(&slots.children[i], i, 0, i % 3, leaf, 2, 0);
    }
  }
  ASSERT_EQ(root->n_children, kChildren);
  for (int64_t i = 0; i < kChildren; ++i) {
    const ArrowArray* child = root->children[i];
    ASSERT_NE(child, nullptr);
    EXPECT_EQ(child->length, i);
    EXPECT_EQ(child->offset, i % 3);
    EXPECT_EQ(child->buffers[1], leaf[1]);
    ASSERT_NE(child->release, nullptr);
  }
  ASSERT_FALSE(watch.expired());
  root.reset();
  EXPECT_TRUE(watch.expired());
}

#if FERRY_COUNT_ALLOCATIONS
// A node made and released, as a stream's batch is: its arena, and its owner (one allocation).
void OneBatch() {
  UniqueArray node;
  {
    KeepAlive nodes(std::make_shared<int>(7));
    (void)nodes.MakeNode(node.get(), 1, 0, 0, nullptr, 0, 0);
  }
}

TEST(KeepAlive, AnArenaReleasedOnAThreadServesTheNextOneMadeThere) {
  OneBatch();  // this thread now keeps one arena's memory
  int64_t before = testing::allocations;
  OneBatch();
  EXPECT_EQ(testing::allocations - before, 1) << "only the owner's make_shared";
  // Made here and released on another thread: that thread keeps the memory (and frees it as it
  // ends), so the next arena made here comes from the heap again. More of them than this thread
  // keeps, so that none of the arenas earlier tests released here is left to serve the next.
  std::vector<UniqueArray> nodes_elsewhere(8);
  for (UniqueArray& node : nodes_elsewhere) {
    KeepAlive nodes(std::make_shared<int>(7));
    (void)nodes.MakeNode(node.get(), 1, 0, 0, nullptr, 0, 0);
  }
  std::thread([&nodes_elsewhere] { nodes_elsewhere.clear(); }).join();
  before = testing::allocations;
  OneBatch();
  EXPECT_EQ(testing::allocations - before, 2) << "the arena's memory stayed with the thread "
                                                 "that released it";
  before = testing::allocations;
  OneBatch();  // released here just now: kept here
  EXPECT_EQ(testing::allocations - before, 1);
}
#endif

}  // namespace
}  // namespace ferry
