// What reading a batch costs the reading thread in allocations: a client reading kept batches
// from a shared-memory server allocates twice a batch on its own thread (the arena of the
// batch's nodes, and the owner that returns the loan: both live as long as the batch, which the
// caller may release on any thread), counted by a replaced operator new. Vectors, queues and maps
// that could be reused must not come back per batch. Not built under ASan or TSan, whose own
// operator new must stay in place.
#include <cstdlib>
#include <new>

#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FERRY_COUNT_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FERRY_COUNT_ALLOCATIONS 0
#endif
#endif
#ifndef FERRY_COUNT_ALLOCATIONS
#define FERRY_COUNT_ALLOCATIONS 1
#endif

#if FERRY_COUNT_ALLOCATIONS
namespace {
thread_local int64_t allocations = 0;
}  // namespace

// The suite's operator new, for every thread: it counts, per thread, then allocates as the
// library's would. new[] and the nothrow forms come here through the standard library's own.
void* operator new(std::size_t size) {
  ++allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// GCC, inlining these into this file's callers, takes the pair for a mismatch.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace ferry::dipc {
namespace {

using Json = nlohmann::json;

TEST(ClientSession, AKeptBatchCostsTheReadingThreadTwoAllocations) {
  constexpr int kBatches = 240, kWarm = 40, kRows = 100;
  const Field root =
      testing::BatchField({Field::Make("l", "x").WithFlags(0), Field::Make("g", "f").WithFlags(0),
                           Field::Make("u", "s").WithFlags(0)});
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches;
  for (int b = 0; b < kBatches; ++b) {
    Json rows = Json::array();
    for (int i = 0; i < kRows; ++i) {
      rows.push_back(Json{{"x", b * kRows + i}, {"f", i * 0.5}, {"s", "v" + std::to_string(i)}});
    }
    ASSERT_OK_AND_ASSIGN(Array a, testing::ArrayFromJson(root, rows.dump()));
    batches.push_back(testing::ToCpuDeviceArray(std::move(a), &schema));
  }
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Dataset> dataset,
                       Dataset::FromBatches(std::move(schema), std::move(batches)));
  ServerOptions so;
  so.transport = "shm";
  so.body_type = BodyType::kBufferList;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(so));
  ASSERT_OK(server->Keep("t", dataset));

  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(server->uri("t"), "t", {}));
  int64_t counted = 0, first = 0;
  for (int b = 0; b < kBatches; ++b) {
    if (b == kWarm) first = allocations;
    ArrowDeviceArray batch{};
    ASSERT_EQ(s->get_next(s.get(), &batch), 0) << s->get_last_error(s.get());
    ASSERT_NE(batch.array.release, nullptr) << "the stream ended at batch " << b;
    // The batch is the server's: its first x is where the batch starts.
    const auto* x = static_cast<const int64_t*>(batch.array.children[0]->buffers[1]);
    EXPECT_EQ(x[batch.array.children[0]->offset], int64_t{b} * kRows);
    batch.array.release(&batch.array);
  }
  counted = allocations - first;
  s.reset();
  const double per_batch = static_cast<double>(counted) / (kBatches - kWarm);
  // Two a batch, and now and then one more (the inbox's queue growing, a free_data message).
  EXPECT_LE(per_batch, 2.5) << counted << " allocations for " << (kBatches - kWarm) << " batches";
  EXPECT_GE(per_batch, 1.0) << "the count saw nothing: is operator new replaced?";
}

}  // namespace
}  // namespace ferry::dipc
#endif
