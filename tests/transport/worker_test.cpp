// The UCX worker's descriptor guards (src/transport/ucx/worker.hpp): where UCX replays a missed
// event by descriptor number (before 1.17), rounds of progress run together and a registration
// excludes them; elsewhere both guards are empty locks.
#if FERRY_WITH_UCX

#include "transport/ucx/worker.hpp"

#include <gtest/gtest.h>

namespace ferry::transport {
namespace {

using internal::ucx::DescriptorLock;
using internal::ucx::RegisterGuard;
using internal::ucx::ReplayGuard;

// The oracle: UCX's own version, against the release that fixed the replay (openucx/ucx#9942).
bool ReplaysByNumber() {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  return major == 1 && minor < 17;
}

TEST(DescriptorGuards, AreLocksExactlyWhereUcxReplaysByNumber) {
  EXPECT_EQ(ReplayGuard().owns_lock(), ReplaysByNumber());
  EXPECT_EQ(RegisterGuard().owns_lock(), ReplaysByNumber());
}

TEST(DescriptorGuards, RoundsOfProgressRunTogetherAndARegistrationExcludesThem) {
  DescriptorLock lock;
  ASSERT_TRUE(lock.try_lock_shared());
  EXPECT_TRUE(lock.try_lock_shared());  // a second worker's round beside the first
  EXPECT_FALSE(lock.try_lock());        // a connect waits for both
  lock.unlock_shared();
  EXPECT_FALSE(lock.try_lock());
  lock.unlock_shared();
  ASSERT_TRUE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock_shared());  // no round while a descriptor is being registered
  EXPECT_FALSE(lock.try_lock());
  lock.unlock();
  EXPECT_TRUE(lock.try_lock_shared());
  lock.unlock_shared();
}

TEST(DescriptorGuards, TheProcessWideGuardsExcludeEachOther) {
  if (!ReplaysByNumber()) {
    // Nothing to exclude: a registration beside a round of progress takes no lock at all.
    auto replaying = ReplayGuard();
    EXPECT_FALSE(RegisterGuard().owns_lock());
    return;
  }
  auto replaying = ReplayGuard();
  ASSERT_TRUE(replaying.owns_lock());
  EXPECT_FALSE(replaying.mutex()->try_lock());
  replaying.unlock();
  ASSERT_TRUE(replaying.mutex()->try_lock());
  replaying.mutex()->unlock();
}

}  // namespace
}  // namespace ferry::transport

#endif  // FERRY_WITH_UCX
