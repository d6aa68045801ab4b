// What reading a batch costs the reading thread in allocations: a client reading kept batches
// from a shared-memory server, and releasing each on the reading thread, allocates nothing a
// batch once the stream runs, counted by a replaced operator new. The arena of the batch's nodes
// and the owner that returns the loan live as long as the batch, which the caller may release on
// any thread: their memory is recycled (the owner's by its stream, the arena's by the thread
// that released the last one). Vectors, queues and maps that could be reused must not come back
// per batch. Not built under ASan or TSan, whose own operator new must stay in place.
#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"
#include "support/counted_new.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

#if FERRY_COUNT_ALLOCATIONS
namespace ferry::dipc {
namespace {

using Json = nlohmann::json;
using ferry::testing::allocations;

TEST(ClientSession, AKeptBatchCostsTheReadingThreadNoAllocation) {
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
  // Now and then one (the inbox's queue growing, a free_data message), never one a batch.
  EXPECT_LE(counted, (kBatches - kWarm) / 10)
      << counted << " allocations for " << (kBatches - kWarm) << " batches";
  const int64_t before = allocations;
  auto probe = std::make_unique<int64_t>(counted);
  EXPECT_EQ(allocations, before + 1) << "the count saw nothing: is operator new replaced?";
}

}  // namespace
}  // namespace ferry::dipc
#endif
