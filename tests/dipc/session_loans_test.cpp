// Batches a producer writes in the server's shared region (Server::region_allocator), on every
// transport and body type: lent to the client where they lie, with no copy, held until the
// client frees them, and released, with their region blocks, when it does or goes; a body the
// writer had to rewrite (compressed) is copied as any other.
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "dipc/server_client.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/schema.hpp"

namespace ferry::dipc {
namespace {

using namespace std::chrono_literals;

// Which of a producer's batches have been released, for waits on the server's threads. Each open
// of a dataset builds its batches anew, numbered from 0 (split, the metadata's session opens it
// too), so how many were built and released in all is counted as well.
struct LoanReleases {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<bool> released;
  size_t built = 0;
  size_t freed = 0;

  void Built() {
    std::lock_guard lock(mutex);
    ++built;
  }
  void Mark(size_t i) {
    {
      std::lock_guard lock(mutex);
      if (released.size() <= i) released.resize(i + 1);
      released[i] = true;
      ++freed;
    }
    changed.notify_all();
  }
  bool Released(size_t i) {
    std::lock_guard lock(mutex);
    return i < released.size() && released[i];
  }
  size_t Count() {
    std::lock_guard lock(mutex);
    return static_cast<size_t>(std::count(released.begin(), released.end(), true));
  }
  // Whether batches 0..n-1 (or those in `which`) were all released within 5 s.
  bool AwaitAll(const std::vector<size_t>& which) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 5s, [&] {
      return std::all_of(which.begin(), which.end(),
                         [&](size_t i) { return i < released.size() && released[i]; });
    });
  }
  // Whether every batch built, by any open of the dataset, was released within 5 s; call it once
  // the server is idle, when no session builds more.
  bool AwaitEvery() {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 5s, [&] { return freed == built; });
  }
};

UniqueSchema LoanSchema() {
  Field root = Field::Make("+s", "", {Field::Make("l", "x"), Field::Make("u", "s")});
  root.flags = 0;
  return root.Export().ValueOrDie();
}

// Row r of batch i: x = i * 1000 + r, s = "b<i>r<r>".
std::string LoanText(int64_t i, int64_t r) {
  return "b" + std::to_string(i) + "r" + std::to_string(r);
}

// Hands over `batches` batches of `rows` rows, each built with `allocator` when its turn comes,
// and marks each released in `releases` when its release runs.
class RegionProducer final : public DeviceArrayProducer {
 public:
  RegionProducer(std::shared_ptr<Allocator> allocator, int64_t batches, int64_t rows,
                 std::shared_ptr<LoanReleases> releases)
      : allocator_(std::move(allocator)),
        batches_(batches),
        rows_(rows),
        releases_(std::move(releases)),
        schema_(LoanSchema()) {}

  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema copy, CopySchema(schema_.get()));
    copy.move_to(out);
    return Status::OK();
  }

  Status GetNext(ArrowDeviceArray* out) override {
    if (next_ == batches_) return Status::OK();
    FERRY_ASSIGN_OR_RAISE(auto b, ArrayBuilder::Make(schema_.get(), allocator_.get()));
    for (int64_t r = 0; r < rows_; ++r) {
      FERRY_RETURN_NOT_OK(b->child(0)->AppendInt(next_ * 1000 + r));
      FERRY_RETURN_NOT_OK(b->child(1)->AppendBytes(LoanText(next_, r)));
      FERRY_RETURN_NOT_OK(b->FinishElement());
    }
    FERRY_ASSIGN_OR_RAISE(UniqueArray built, b->Finish());
    releases_->Built();
    // The batch as handed over: the built one, whose release also marks it released.
    auto* wrapped = new Wrapped{{}, releases_, static_cast<size_t>(next_)};
    built.move_to(&wrapped->inner);
    std::memset(out, 0, sizeof(*out));
    out->array = wrapped->inner;
    out->array.private_data = wrapped;
    out->array.release = [](ArrowArray* a) {
      auto* w = static_cast<Wrapped*>(a->private_data);
      w->inner.release(&w->inner);
      w->releases->Mark(w->index);
      delete w;
      a->release = nullptr;
    };
    out->device_id = -1;
    out->device_type = ARROW_DEVICE_CPU;
    ++next_;
    return Status::OK();
  }

 private:
  struct Wrapped {
    ArrowArray inner;
    std::shared_ptr<LoanReleases> releases;
    size_t index;
  };
  std::shared_ptr<Allocator> allocator_;
  int64_t batches_, rows_;
  std::shared_ptr<LoanReleases> releases_;
  UniqueSchema schema_;
  int64_t next_ = 0;
};

std::shared_ptr<Dataset> ProducedInRegion(std::shared_ptr<Allocator> allocator, int64_t batches,
                                          int64_t rows, std::shared_ptr<LoanReleases> releases) {
  return Dataset::FromStreamFactory([=]() {
    return Result<UniqueDeviceArrayStream>(ExportDeviceArrayStream(
        std::make_unique<RegionProducer>(allocator, batches, rows, releases), ARROW_DEVICE_CPU));
  });
}

// Batch i's values, read from what the client handed over: the oracle is RegionProducer's rule.
void ExpectLoanBatch(const ArrowDeviceArray& got, int64_t i, int64_t rows) {
  const ArrowArray& a = got.array;
  ASSERT_EQ(a.length, rows);
  ASSERT_EQ(a.n_children, 2);
  const ArrowArray& x = *a.children[0];
  const ArrowArray& s = *a.children[1];
  const auto* xs = static_cast<const int64_t*>(x.buffers[1]) + x.offset;
  const auto* offsets = static_cast<const int32_t*>(s.buffers[1]) + s.offset;
  const auto* chars = static_cast<const char*>(s.buffers[2]);
  for (int64_t r = 0; r < rows; ++r) {
    ASSERT_EQ(xs[r], i * 1000 + r) << "batch " << i << " row " << r;
    ASSERT_EQ(std::string(chars + offsets[r], static_cast<size_t>(offsets[r + 1] - offsets[r])),
              LoanText(i, r))
        << "batch " << i << " row " << r;
  }
}

TEST_P(ServerClient, ABatchWrittenInTheRegionIsLentInPlace) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  std::shared_ptr<Allocator> region = server->region_allocator();
  if (shape_.body == BodyType::kPacked) {
    EXPECT_EQ(region, nullptr);  // packed bodies have no shared region to write into
    return;
  }
  ASSERT_NE(region, nullptr);
  auto releases = std::make_shared<LoanReleases>();
  constexpr int64_t kBatches = 3, kRows = 100;
  server->Add("t", ProducedInRegion(region, kBatches, kRows, releases));
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t"));
    UniqueSchema schema;
    ASSERT_EQ(s->get_schema(s.get(), schema.get()), 0);
    UniqueDeviceArray held;
    ASSERT_EQ(s->get_next(s.get(), held.get()), 0) << s->get_last_error(s.get());
    ExpectLoanBatch(*held.get(), 0, kRows);
    for (int64_t i = 1; i < kBatches; ++i) {
      UniqueDeviceArray b;
      ASSERT_EQ(s->get_next(s.get(), b.get()), 0) << s->get_last_error(s.get());
      ASSERT_TRUE(b.valid());
      ExpectLoanBatch(*b.get(), i, kRows);
    }
    UniqueDeviceArray end;
    ASSERT_EQ(s->get_next(s.get(), end.get()), 0);
    EXPECT_FALSE(end.valid());
    // The two released batches came back to their producer once the client freed them.
    ASSERT_TRUE(releases->AwaitAll({1, 2})) << releases->Count() << " released";
    if (shape_.transport == "shm" && !shape_.split) {
      // Read in place over shared memory: the held batch's memory is still lent, so its
      // producer still has it (over UCX the client reads a copy and frees at once; split, the
      // metadata's session reads the dataset too, and releases its own batch 0 at once).
      EXPECT_FALSE(releases->Released(0));
      EXPECT_GT(server->stats().bytes_in_flight, 0);
    }
  }
  ASSERT_TRUE(releases->AwaitAll({0, 1, 2}));
  ASSERT_TRUE(server->AwaitIdle(5s));
  ASSERT_TRUE(releases->AwaitEvery());
  const ServerStats stats = server->stats();
  EXPECT_EQ(stats.bodies_lent_in_place, kBatches);
  EXPECT_EQ(stats.batches_sent, kBatches);
  EXPECT_EQ(stats.addresses_freed + stats.addresses_reclaimed, stats.addresses_lent);
  EXPECT_EQ(stats.bytes_in_flight, 0);  // every block the producer took is back in the region
  EXPECT_EQ(stats.sessions_failed, 0) << server->last_error();
}

// A body the writer rewrites (compressed) no longer lies in the region: it is copied there as
// any other, and the producer's batch is released once written.
TEST_P(ServerClient, ACompressedBatchFromTheRegionIsCopied) {
  if (shape_.body != BodyType::kBufferList) return;  // packed: no region (the test above)
  ServerOptions options;
  options.write.compression = ipc::Compression::kLz4Frame;
  auto server = StartServer(options);
  ASSERT_TRUE(server);
  auto releases = std::make_shared<LoanReleases>();
  server->Add("t", ProducedInRegion(server->region_allocator(), 2, 50, releases));
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t"));
    UniqueSchema schema;
    ASSERT_EQ(s->get_schema(s.get(), schema.get()), 0);
    for (int64_t i = 0; i < 2; ++i) {
      UniqueDeviceArray b;
      ASSERT_EQ(s->get_next(s.get(), b.get()), 0) << s->get_last_error(s.get());
      ExpectLoanBatch(*b.get(), i, 50);
    }
    // Read to the end: a client that closes before it would fail its session.
    UniqueDeviceArray end;
    ASSERT_EQ(s->get_next(s.get(), end.get()), 0) << s->get_last_error(s.get());
    EXPECT_FALSE(end.valid());
  }
  ASSERT_TRUE(releases->AwaitAll({0, 1}));
  ASSERT_TRUE(server->AwaitIdle(5s));
  ASSERT_TRUE(releases->AwaitEvery());
  EXPECT_EQ(server->stats().bodies_lent_in_place, 0);
  EXPECT_EQ(server->stats().batches_sent, 2);
  EXPECT_EQ(server->stats().bytes_in_flight, 0);
  EXPECT_EQ(server->stats().sessions_failed, 0) << server->last_error();
}

// A client that leaves before the end loses the server nothing: every batch handed over, read
// or sent ahead, goes back to its producer and its blocks to the region.
TEST_P(ServerClient, AClientLeavingEarlyReturnsEveryLoan) {
  if (shape_.body != BodyType::kBufferList) return;  // packed: no region (the first test)
  auto server = StartServer();
  ASSERT_TRUE(server);
  auto releases = std::make_shared<LoanReleases>();
  server->Add("t", ProducedInRegion(server->region_allocator(), 20, 100, releases));
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t"));
    UniqueSchema schema;
    ASSERT_EQ(s->get_schema(s.get(), schema.get()), 0);
    UniqueDeviceArray first;
    ASSERT_EQ(s->get_next(s.get(), first.get()), 0) << s->get_last_error(s.get());
    ExpectLoanBatch(*first.get(), 0, 100);
  }  // batch and stream dropped after one batch of twenty
  ASSERT_TRUE(server->AwaitIdle(5s));
  const ServerStats stats = server->stats();
  ASSERT_GE(stats.batches_sent, 1);
  std::vector<size_t> sent(static_cast<size_t>(stats.batches_sent));
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = i;
  ASSERT_TRUE(releases->AwaitAll(sent)) << releases->Count() << " of " << sent.size();
  ASSERT_TRUE(releases->AwaitEvery());
  EXPECT_EQ(stats.bodies_lent_in_place, stats.batches_sent);
  EXPECT_EQ(server->stats().bytes_in_flight, 0);
}

// What cannot fit the region is refused at once, naming where it was asked for; what fits is
// taken from the region and given back.
TEST_P(ServerClient, TheRegionAllocatorTakesAndGivesBackRegionBlocks) {
  if (shape_.body != BodyType::kBufferList) return;  // packed: no region (the first test)
  ServerOptions options;
  options.region_bytes = int64_t{1} << 20;
  auto server = StartServer(options);
  ASSERT_TRUE(server);
  std::shared_ptr<Allocator> region = server->region_allocator();
  ASSERT_NE(region, nullptr);
  Result<uint8_t*> too_big = region->Allocate(int64_t{2} << 20);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("2097152 bytes in the server's shared region"),
            std::string::npos)
      << too_big.status().message();
  ASSERT_OK_AND_ASSIGN(uint8_t * block, region->Allocate(1000));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 64, 0u);
  EXPECT_GE(server->stats().bytes_in_flight, 1000);
  region->Free(block, 1000);
  EXPECT_EQ(server->stats().bytes_in_flight, 0);
}

}  // namespace
}  // namespace ferry::dipc
