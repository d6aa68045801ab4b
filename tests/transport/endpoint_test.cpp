// The UCX transport's endpoints (transport/ucx/endpoint.hpp), here their Completion: a look at
// an unfinished operation (a wait whose deadline is already past) naps for kLookNap, whatever
// the thread's timer slack, and a finished one answers at once. These tests read the real
// steady clock: what they check is how long the kernel lets a thread sleep, and a sleep never ends
// before its deadline, so only lower bounds are asserted (a loaded machine makes the naps longer,
// never shorter).
#if FERRY_WITH_UCX

#include "transport/ucx/endpoint.hpp"

#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <chrono>
#include <thread>

namespace ferry::transport::internal::ucx {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

// How long one look at an unfinished completion took on a thread of `slack_ns` timer slack.
SteadyClock::duration LookWithSlack(unsigned long slack_ns) {
  SteadyClock::duration took{};
  std::thread([&] {
    ASSERT_EQ(prctl(PR_SET_TIMERSLACK, slack_ns, 0, 0, 0), 0);
    Completion unfinished;
    const auto start = SteadyClock::now();
    EXPECT_FALSE(unfinished.Wait(start));
    took = SteadyClock::now() - start;
  }).join();
  return took;
}

// A thread with (almost) no timer slack, as a real-time thread has, still naps: a futex wait
// with a deadline already past would otherwise return at once, and a sender's "spin" would spin.
// (Under a larger slack the kernel may end a nap early, anywhere after kLookNap less the slack,
// when another timer fires: that case has no lower bound worth asserting.)
TEST(Completion, ALookNapsWithoutTimerSlack) { EXPECT_GE(LookWithSlack(1), kLookNap); }

// A finished completion answers a look without sleeping, with its status.
TEST(Completion, AFinishedCompletionAnswersALook) {
  Completion done;
  done.Done(UCS_ERR_CANCELED);
  EXPECT_TRUE(done.Wait(SteadyClock::now()));
  EXPECT_EQ(done.status(), UCS_ERR_CANCELED);
}

// An operation that finishes while a waiter sleeps wakes it, long before the deadline it gave.
TEST(Completion, FinishingWakesAWaiter) {
  Completion pending(2);
  std::thread finisher([&] {
    pending.Done(UCS_OK);
    pending.Done(UCS_OK);
  });
  EXPECT_TRUE(pending.Wait(SteadyClock::now() + 1h));
  finisher.join();
  EXPECT_EQ(pending.status(), UCS_OK);
}

}  // namespace
}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
