// The exporter registry: counts, idempotent release, base lookups, tags and threads.
#include "ferry/memview/registry.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "support/test_util.hpp"

namespace ferry::memview {
namespace {

struct Blob {
  std::vector<int32_t> values;
};
struct SpecialBlob : Blob {};

Exporter BlobExporter(int* releases) {
  Exporter e;
  e.get = [](const void* object, int32_t, MemoryView* out) -> Status {
    const auto* blob = static_cast<const Blob*>(object);
    FERRY_ASSIGN_OR_RAISE(
        *out, MakeContiguousView(
                  nullptr, reinterpret_cast<uint8_t*>(const_cast<int32_t*>(blob->values.data())),
                  static_cast<int64_t>(blob->values.size() * 4), "l",
                  {static_cast<int64_t>(blob->values.size())}, true));
    return Status::OK();
  };
  e.release = [releases](MemoryView*) { ++*releases; };
  return e;
}

TEST(ExporterRegistry, NestedGetsThenReleasesKeepCount) {
  ExporterRegistry registry;
  int releases = 0;
  registry.Register<Blob>(BlobExporter(&releases));
  Blob blob{{1, 2, 3}};
  std::vector<MemoryView> views;
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK_AND_ASSIGN(MemoryView v, registry.Get(blob, kFormat | kStrides));
    EXPECT_EQ(v.shape[0], 3);
    views.push_back(std::move(v));
    EXPECT_EQ(registry.ExportCount(&blob), i + 1);
  }
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK(registry.Release(&views[static_cast<size_t>(i)]));
    EXPECT_EQ(registry.ExportCount(&blob), 9 - i);
  }
  EXPECT_EQ(releases, 10);
  ASSERT_OK(registry.Release(&views[0]));  // a second release is a no-op
  EXPECT_EQ(releases, 10);
  EXPECT_EQ(registry.ExportCount(&blob), 0);
  MemoryView stranger;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "not handed out by this registry",
                     registry.Release(&stranger));
}

TEST(ExporterRegistry, ReleaseFromAnotherThread) {
  ExporterRegistry registry;
  int releases = 0;
  registry.Register<Blob>(BlobExporter(&releases));
  Blob blob{{7}};
  ASSERT_OK_AND_ASSIGN(MemoryView v, registry.Get(blob, kFormat));
  Status from_thread;
  std::thread t([&] { from_thread = registry.Release(&v); });
  t.join();
  ASSERT_OK(from_thread);
  EXPECT_EQ(releases, 1);
  EXPECT_EQ(registry.ExportCount(&blob), 0);
}

TEST(ExporterRegistry, BasesTagsAndMissingExporters) {
  ExporterRegistry registry;
  int releases = 0;
  SpecialBlob special;
  special.values = {4, 5};
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "no memory view exporter is registered",
                     registry.Get(special, kSimple));
  registry.Register<Blob>(BlobExporter(&releases));
  registry.DeclareBase<SpecialBlob, Blob>();
  EXPECT_TRUE(registry.Available(std::type_index(typeid(SpecialBlob)), &special));
  ASSERT_OK_AND_ASSIGN(MemoryView v, registry.Get(special, kFormat));
  EXPECT_EQ(v.shape[0], 2);
  ASSERT_OK(registry.Release(&v));
  registry.RegisterTag("blob", BlobExporter(&releases));
  ASSERT_OK_AND_ASSIGN(MemoryView t, registry.GetByTag("blob", &special, kSimple));
  EXPECT_TRUE(t.format.empty());  // FORMAT not requested: unsigned bytes
  ASSERT_OK(registry.Release(&t));
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "tag \"nope\"",
                     registry.GetByTag("nope", &special, kSimple));
  // A request the exporter's view cannot meet fails, and what get allocated is released.
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "WRITABLE was requested",
                     registry.Get(special, kWritable));
  EXPECT_EQ(releases, 3);
  EXPECT_EQ(registry.ExportCount(&special), 0);
}

}  // namespace
}  // namespace ferry::memview
