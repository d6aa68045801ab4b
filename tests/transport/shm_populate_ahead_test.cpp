// PopulateAhead: a shared-memory client's page tables filled ahead of its reads of a segment
// sealed against writes that maps in 4 KiB pages, and only of such a segment. The oracle is the
// kernel's own page table, read through /proc/self/pagemap (bit 63 of a page's entry: the page is
// present), and the bytes read back.
#include "transport/shm_populate_ahead.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "support/test_util.hpp"
#include "transport/shm_common.hpp"
#include "transport/shm_segments.hpp"

namespace ferry::transport::internal::shm {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kSegment = 32 * kMiB;

// Whether the page holding `p` is mapped in this process's page table.
bool Present(const void* p) {
  const int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  uint64_t entry = 0;
  const auto page = reinterpret_cast<uintptr_t>(p) / 4096;
  const ssize_t n = pread(fd, &entry, sizeof(entry), static_cast<off_t>(page * sizeof(entry)));
  close(fd);
  return n == sizeof(entry) && (entry >> 63) != 0;
}

// The pages of [from, to) of `base` that are not present.
int64_t Missing(const uint8_t* base, uint64_t from, uint64_t to) {
  int64_t missing = 0;
  for (uint64_t at = from; at < to; at += 4096) missing += Present(base + at) ? 0 : 1;
  return missing;
}

// A server's segment: a memfd of kSegment bytes sealed against shrinking, each page written with
// its index through the server's own mapping (so its pages exist), its descriptor for the client.
// `kept`: sealed against writes too, as Region::Seal seals a kept dataset's.
int MakeSegment(bool kept) {
  const int fd = memfd_create("ferry_populate_ahead_test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(kSegment)) != 0) return -1;
  void* p = mmap(nullptr, kSegment, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return -1;
  for (uint64_t at = 0; at < kSegment; at += 4096) {
    const uint64_t page = at / 4096;
    std::memcpy(static_cast<uint8_t*>(p) + at, &page, sizeof(page));
  }
  munmap(p, kSegment);
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | (kept ? F_SEAL_WRITE : 0)) != 0) return -1;
  return fd;
}

TEST(PopulateAhead, MapsThePagesAfterEachReadUpToItsWindow) {
  const int fd = MakeSegment(true);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  Segments segments;
  ASSERT_OK(segments.Map(3, kSegment, false, fd));
  // A client's fetch of one buffer ending at 1 MiB: the 8 MiB after it are mapped for it.
  const uint64_t index = uint64_t{3} << kShmOffsetBits;
  const BufferRef first[] = {BufferRef{index | (kMiB - 4096), 4096}};
  FetchedBody body;
  ASSERT_OK(segments.Fetch(first, &body));
  ASSERT_TRUE(body.borrowed);
  const uint8_t* base = body.bytes.data;
  const uint64_t window = PopulateAhead::kWindow;
  if (ShmemHugePagesGiven(ShmemHugePages())) {
    // The segment maps in 2 MiB pages here: its reads fault little, and nothing maps ahead.
    EXPECT_EQ(segments.asked_ahead(), 0u);
    return;
  }
  EXPECT_EQ(segments.asked_ahead(), kMiB + window);
  EXPECT_EQ(ferry::testing::ThreadIdsNamed("ferry-shm-ahead").size(), 1u);
  EXPECT_TRUE(testing::Within(std::chrono::seconds(10),
                              [&] { return Missing(base, kMiB, kMiB + window) == 0; }))
      << Missing(base, kMiB, kMiB + window) << " pages of the window were not mapped";
  // Nothing was mapped past the window, nor before the read (its own page, it faults in).
  EXPECT_EQ(Missing(base, kMiB + window + kMiB, kSegment),
            static_cast<int64_t>((kSegment - kMiB - window - kMiB) / 4096));
  EXPECT_FALSE(Present(base));
  // Reads past half the window move it on, each ending anywhere in a page (the steps still
  // start on one).
  uint64_t last_end = kMiB;
  for (uint64_t end : {7 * kMiB - 36, 13 * kMiB + 100, 19 * kMiB + 777}) {
    const BufferRef later[] = {BufferRef{index | (end - 4096 - 64), 4096},
                               BufferRef{index | (end - 64), 64}};
    ASSERT_OK(segments.Fetch(later, &body));
    EXPECT_TRUE(testing::Within(std::chrono::seconds(10),
                                [&] { return Missing(base, kMiB, end + window - 4096) == 0; }))
        << Missing(base, kMiB, end + window - 4096) << " pages up to " << end + window
        << " were not mapped";
    EXPECT_FALSE(Present(base + end + window + kMiB));
    last_end = end;
  }
  // What the pages hold is the server's: each page its index.
  for (uint64_t at : {kMiB, 5 * kMiB, (last_end + window - 8192) & ~uint64_t{4095}}) {
    uint64_t page = 0;
    std::memcpy(&page, base + at, sizeof(page));
    EXPECT_EQ(page, at / 4096);
  }
}

// A segment its server may still write (a live region) is left to the reads: a page mapped ahead
// would be one the server has not written yet.
TEST(PopulateAhead, ASegmentNotSealedAgainstWritesIsLeftToItsReads) {
  const int fd = MakeSegment(false);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  Segments segments;
  ASSERT_OK(segments.Map(5, kSegment, false, fd));
  const uint64_t index = uint64_t{5} << kShmOffsetBits;
  FetchedBody body;
  for (uint64_t end : {kMiB, 9 * kMiB, 17 * kMiB}) {
    const BufferRef refs[] = {BufferRef{index | (end - 4096), 4096}};
    ASSERT_OK(segments.Fetch(refs, &body));
    ASSERT_TRUE(body.borrowed);
  }
  EXPECT_EQ(segments.asked_ahead(), 0u);
  EXPECT_TRUE(ferry::testing::ThreadIdsNamed("ferry-shm-ahead").empty());
  // Nothing past the reads was mapped (no thread was started that could map it later).
  EXPECT_EQ(Missing(body.bytes.data, 17 * kMiB, kSegment),
            static_cast<int64_t>((kSegment - 17 * kMiB) / 4096));
  uint64_t page = 0;
  std::memcpy(&page, body.bytes.data + 9 * kMiB - 4096, sizeof(page));
  EXPECT_EQ(page, (9 * kMiB - 4096) / 4096);
}

TEST(PopulateAhead, StopsAtTheSegmentsEndAndWithItsOwner) {
  const int fd = MakeSegment(true);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  Result<Mapping> pages = Mapping::OfFile(fd, static_cast<int64_t>(kSegment),
                                          {.access = MapAccess::kRead, .shared = true}, "a test");
  close(fd);
  ASSERT_OK(pages.status());
  auto segment = std::make_shared<const Mapping>(std::move(*pages));
  {
    PopulateAhead ahead;
    ahead.Note(segment, kSegment - kMiB);
    EXPECT_TRUE(
        testing::Within(std::chrono::seconds(10), [&] { return ahead.mapped() == kSegment; }))
        << "mapped " << ahead.mapped() << " of " << kSegment;
    EXPECT_EQ(Missing(segment->data(), kSegment - kMiB, kSegment), 0);
  }  // its thread stops here; the segment is still the test's
  EXPECT_EQ(segment.use_count(), 1);
}

}  // namespace
}  // namespace ferry::transport::internal::shm
