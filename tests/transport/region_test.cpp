// Listener::RegisterRegion: memory the server already has (a mapped file) lent to clients as a
// region without a copy. Over shared memory the client maps the very file (its mapping names the
// file in /proc/self/maps); over UCX it gets the bytes with RMA. Both bring back the file's
// bytes; bad lent memory is refused by name.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "ferry/transport/transport.hpp"
#include "ferry/transport/ucx.hpp"
#include "support/test_util.hpp"

namespace ferry::transport {
namespace {

using namespace std::chrono_literals;

// A temporary file of `size` bytes (byte i is a hash of i), mapped read-only.
struct MappedFile {
  std::string path;
  int fd = -1;
  const uint8_t* data = nullptr;
  int64_t size = 0;
  std::shared_ptr<const void> owner;

  static MappedFile Make(int64_t size) {
    MappedFile f;
    char name[] = "/tmp/ferry-lent-XXXXXX";
    f.fd = mkstemp(name);
    f.path = name;
    f.size = size;
    std::vector<uint8_t> bytes(static_cast<size_t>(size));
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
    if (f.fd < 0 || write(f.fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
      return f;
    }
    void* map = mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, f.fd, 0);
    if (map == MAP_FAILED) return f;
    f.data = static_cast<const uint8_t*>(map);
    const int fd = f.fd;
    const std::string path = f.path;
    f.owner = std::shared_ptr<const void>(map, [fd, size, path](const void* p) {
      munmap(const_cast<void*>(p), static_cast<size_t>(size));
      close(fd);
      unlink(path.c_str());
    });
    return f;
  }
};

// The path of the mapping that holds `address` in this process, or "".
std::string MappingOf(const void* address) { return ferry::testing::MapsEntryOf(address).path; }

// Memory to lend: `size` bytes at `data` that `fd` maps, kept by `owner`.
LendableBytes Lent(const uint8_t* data, int64_t size, int fd, std::shared_ptr<const void> owner) {
  LendableBytes out;
  out.data = data;
  out.size = size;
  out.fd = fd;
  out.owner = std::move(owner);
  return out;
}

class LentRegion : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "ucx" && !UcxAvailable()) GTEST_SKIP() << "this build has no UCX transport";
    file_ = MappedFile::Make(kFileBytes);
    ASSERT_NE(file_.data, nullptr) << "could not write and map a temporary file";
    ASSERT_OK_AND_ASSIGN(listener_, Listen(GetParam(), GetParam() == "ucx" ? "127.0.0.1:0" : ""));
    ASSERT_OK_AND_ASSIGN(
        region_, listener_->RegisterRegion(Lent(file_.data, file_.size, file_.fd, file_.owner)));
    ConnectOptions options;
    options.limits.timeout = 5s;
    options.connect_timeout = ferry::testing::kUcxWireUp;
    options.remote_handle = region_->remote_handle();
    ASSERT_OK_AND_ASSIGN(client_, Connect(GetParam(), listener_->address(), options));
    ASSERT_OK_AND_ASSIGN(server_, listener_->Accept(5s));
    ASSERT_OK(server_->ShareRegion(region_));
    // Pairs travel after the region on one ordered connection, as in the protocol: once this
    // message is in, the client knows the region.
    const std::string go = "go";
    const ByteSpan piece{go.data(), 2};
    ASSERT_OK(server_->Send(std::span(&piece, 1)));
    ASSERT_OK_AND_ASSIGN(SharedBytes got, client_->Receive(5s));
    ASSERT_EQ(got.size, 2);
  }

  static constexpr int64_t kFileBytes = (4 << 20) + 4096 + 123;
  MappedFile file_;
  std::unique_ptr<Listener> listener_;
  std::shared_ptr<Region> region_;
  std::unique_ptr<Connection> client_, server_;
};

TEST_P(LentRegion, ClientsReadTheFilesBytesInPlace) {
  EXPECT_EQ(region_->data(), file_.data);
  EXPECT_EQ(region_->size(), file_.size);
  // Buffers at the start, in the middle (unaligned lengths) and at the very end of the file.
  const std::vector<std::pair<int64_t, int64_t>> spans = {
      {0, 64}, {4096, 100'000}, {1 << 20, 3 << 20}, {kFileBytes - 123, 123}};
  std::vector<BufferRef> refs;
  for (auto [offset, length] : spans) {
    refs.push_back({region_->WireAddress(offset), static_cast<uint64_t>(length)});
  }
  FetchedBody body;
  ASSERT_OK(client_->Fetch(refs, 5s, &body));
  ASSERT_EQ(body.buffers.size(), spans.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    const auto [offset, length] = spans[i];
    ASSERT_EQ(body.buffers[i].length, static_cast<uint64_t>(length));
    const uint8_t* got = body.bytes.data + body.buffers[i].address;
    EXPECT_EQ(std::memcmp(got, file_.data + offset, static_cast<size_t>(length)), 0) << i;
    if (GetParam() == "shm") {
      // No copy anywhere: the client's bytes are a mapping of the file itself.
      EXPECT_EQ(MappingOf(got), file_.path) << "buffer " << i;
    }
  }
  if (GetParam() == "shm") {
    EXPECT_TRUE(body.borrowed);
  }
  // The same FetchedBody again, as a client reuses it batch after batch: it holds the new
  // fetch's buffers only.
  const BufferRef one{region_->WireAddress(kFileBytes - 123), 123};
  ASSERT_OK(client_->Fetch({&one, 1}, 5s, &body));
  ASSERT_EQ(body.buffers.size(), 1u);
  ASSERT_EQ(body.buffers[0].length, 123u);
  EXPECT_EQ(
      std::memcmp(body.bytes.data + body.buffers[0].address, file_.data + kFileBytes - 123, 123),
      0);
}

// StartFetch then Wait brings what Fetch brings, on both transports (shared memory maps at once
// and says it does not fetch in the background; UCX posts its gets and says it does).
TEST_P(LentRegion, AFetchStartedAheadBringsTheSameBytes) {
  EXPECT_EQ(client_->fetches_in_background(), GetParam() == "ucx");
  const BufferRef refs[] = {{region_->WireAddress(4096), 100'000},
                            {region_->WireAddress(kFileBytes - 123), 123}};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<FetchInFlight> ahead, client_->StartFetch(refs, 5s));
  ASSERT_OK_AND_ASSIGN(FetchedBody body, ahead->Wait(5s));
  ASSERT_EQ(body.buffers.size(), 2u);
  EXPECT_EQ(std::memcmp(body.bytes.data + body.buffers[0].address, file_.data + 4096, 100'000), 0);
  EXPECT_EQ(
      std::memcmp(body.bytes.data + body.buffers[1].address, file_.data + kFileBytes - 123, 123),
      0);
}

// Shared memory knows each segment's size; UCX's remote key carries none, so there the server's
// registration is what bounds a get (and this case runs on shared memory only).
class LentRegionBounds : public LentRegion {};

TEST_P(LentRegionBounds, AReferencePastTheFileIsRefused) {
  const BufferRef past{region_->WireAddress(kFileBytes - 8), 16};
  FetchedBody body;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "lies outside segment",
                     client_->Fetch(std::span(&past, 1), 5s, &body));
}

INSTANTIATE_TEST_SUITE_P(Transports, LentRegion, ::testing::Values("shm", "ucx"),
                         [](const auto& param_info) { return param_info.param; });
INSTANTIATE_TEST_SUITE_P(Shm, LentRegionBounds, ::testing::Values("shm"),
                         [](const auto& param_info) { return param_info.param; });

TEST(LentRegionShm, MemoryWithoutAFileOrOwnerIsRefusedByName) {
  ASSERT_OK_AND_ASSIGN(auto listener, Listen("shm", ""));
  MappedFile file = MappedFile::Make(8192);
  ASSERT_NE(file.data, nullptr);
  // No descriptor: shared memory has nothing to pass to clients.
  Result<std::shared_ptr<Region>> r =
      listener->RegisterRegion(Lent(file.data, file.size, -1, file.owner));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("descriptor"), std::string::npos) << r.status().message();
  // A descriptor that is not a regular file (a pipe), or a file shorter than the memory.
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  r = listener->RegisterRegion(Lent(file.data, file.size, pipe_fds[0], file.owner));
  EXPECT_FALSE(r.ok());
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  r = listener->RegisterRegion(Lent(file.data, file.size * 2, file.fd, file.owner));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("regular file of at least"), std::string::npos);
  // No owner: nothing would keep the mapping alive while clients read it.
  r = listener->RegisterRegion(Lent(file.data, file.size, file.fd, nullptr));
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace ferry::transport
