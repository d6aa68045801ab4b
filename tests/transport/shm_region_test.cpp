// Region::Seal over shared memory: a created segment, once written, is sealed against writes
// before it is shared, and stays as it was. The oracle is the kernel: the memfd's seals
// (F_GET_SEALS), a writable mapping it refuses, the server's own mapping's permissions in
// /proc/self/maps, and the bytes a client fetches.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "ferry/transport/transport.hpp"
#include "support/test_util.hpp"
#include "transport/shm_common.hpp"

namespace ferry::transport {
namespace {

using namespace std::chrono_literals;
using internal::shm::ShmRegion;

// The permissions ("r--s", "rw-s") of the mapping that holds `address` in this process.
std::string PermissionsOf(const void* address) {
  return ferry::testing::MapsEntryOf(address).permissions;
}

uint8_t ByteAt(int64_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 11); }

class ShmRegionSeal : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(listener_, Listen("shm", ""));
    ASSERT_OK_AND_ASSIGN(region_, listener_->CreateRegion(kBytes));
    for (int64_t i = 0; i < kBytes; ++i) region_->data()[i] = ByteAt(i);
    shm_ = dynamic_cast<ShmRegion*>(region_.get());
    ASSERT_NE(shm_, nullptr);
  }

  // A client of listener_, the region shared with it; `*server` is the server's end.
  void Share(std::unique_ptr<Connection>* client, std::unique_ptr<Connection>* server) {
    ConnectOptions options;
    options.limits.timeout = 5s;
    ASSERT_OK_AND_ASSIGN(*client, Connect("shm", listener_->address(), options));
    ASSERT_OK_AND_ASSIGN(*server, listener_->Accept(5s));
    ASSERT_OK((*server)->ShareRegion(region_));
    const std::string go = "go";
    const ByteSpan piece{go.data(), 2};
    ASSERT_OK((*server)->Send(std::span(&piece, 1)));
    ASSERT_OK_AND_ASSIGN(SharedBytes got, (*client)->Receive(5s));
    ASSERT_EQ(got.size, 2);
  }

  static constexpr int64_t kBytes = (3 << 20) + 777;
  std::unique_ptr<Listener> listener_;
  std::shared_ptr<Region> region_;
  ShmRegion* shm_ = nullptr;
};

TEST_F(ShmRegionSeal, ASealedSegmentKeepsItsBytesAndRefusesEveryWrite) {
  EXPECT_EQ(PermissionsOf(region_->data()), "rw-s");
  ASSERT_OK(region_->Seal());
  const int seals = fcntl(shm_->fd(), F_GET_SEALS);
  ASSERT_GE(seals, 0) << std::strerror(errno);
  EXPECT_NE(seals & F_SEAL_WRITE, 0);
  EXPECT_NE(seals & F_SEAL_SEAL, 0);
  EXPECT_NE(seals & F_SEAL_SHRINK, 0);
  // The server's own mapping is read-only now, and holds what was written.
  EXPECT_EQ(PermissionsOf(region_->data()), "r--s");
  for (int64_t i : {int64_t{0}, int64_t{4095}, kBytes / 2, kBytes - 1}) {
    EXPECT_EQ(region_->data()[i], ByteAt(i)) << i;
  }
  // The kernel refuses a new writable mapping and a write(2) alike.
  void* w = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, shm_->fd(), 0);
  EXPECT_EQ(w, MAP_FAILED);
  if (w != MAP_FAILED) munmap(w, 4096);
  const uint8_t b = 1;
  EXPECT_EQ(pwrite(shm_->fd(), &b, 1, 0), -1);
  EXPECT_EQ(errno, EPERM);
  // A second Seal is a no-op.
  ASSERT_OK(region_->Seal());
  // A client fetches the same bytes in place.
  std::unique_ptr<Connection> client, server;
  ASSERT_NO_FATAL_FAILURE(Share(&client, &server));
  const BufferRef refs[] = {{region_->WireAddress(0), 4096},
                            {region_->WireAddress(kBytes - 777), 777}};
  FetchedBody body;
  ASSERT_OK(client->Fetch(refs, 5s, &body));
  ASSERT_TRUE(body.borrowed);
  for (size_t k = 0; k < 2; ++k) {
    const int64_t from = k == 0 ? 0 : kBytes - 777;
    const uint8_t* got = body.bytes.data + body.buffers[k].address;
    for (uint64_t i = 0; i < body.buffers[k].length; ++i) {
      ASSERT_EQ(got[i], ByteAt(from + static_cast<int64_t>(i))) << k << " " << i;
    }
  }
}

// A live segment: shared unsealed, its seals are closed then (no one adds one, a client
// included), the server still writes it, and a later Seal is refused by name.
TEST_F(ShmRegionSeal, ASegmentSharedUnsealedStaysWritableAndCannotBeSealedLater) {
  std::unique_ptr<Connection> client, server;
  ASSERT_NO_FATAL_FAILURE(Share(&client, &server));
  const int seals = fcntl(shm_->fd(), F_GET_SEALS);
  ASSERT_GE(seals, 0) << std::strerror(errno);
  EXPECT_NE(seals & F_SEAL_SEAL, 0);
  EXPECT_EQ(seals & F_SEAL_WRITE, 0);
  EXPECT_EQ(fcntl(shm_->fd(), F_ADD_SEALS, F_SEAL_WRITE), -1);
  region_->data()[100] = 42;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "shared already", region_->Seal());
  EXPECT_EQ(PermissionsOf(region_->data()), "rw-s");
  // Sharing it again (a second client) is fine.
  std::unique_ptr<Connection> client2, server2;
  ASSERT_NO_FATAL_FAILURE(Share(&client2, &server2));
  const BufferRef ref{region_->WireAddress(64), 64};
  FetchedBody body;
  ASSERT_OK(client2->Fetch({&ref, 1}, 5s, &body));
  EXPECT_EQ(body.bytes.data[body.buffers[0].address + 36], 42);
}

TEST(ShmRegionSealLent, ALentFileIsNotTheServersToSeal) {
  ASSERT_OK_AND_ASSIGN(auto listener, Listen("shm", ""));
  char name[] = "/tmp/ferry-seal-XXXXXX";
  const int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  unlink(name);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  void* map = mmap(nullptr, 8192, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto owner = std::shared_ptr<const void>(map, [fd](const void* p) {
    munmap(const_cast<void*>(p), 8192);
    close(fd);
  });
  LendableBytes lent;
  lent.data = static_cast<const uint8_t*>(map);
  lent.size = 8192;
  lent.fd = fd;
  lent.owner = owner;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Region> region, listener->RegisterRegion(std::move(lent)));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "lent file", region->Seal());
}

}  // namespace
}  // namespace ferry::transport
