// A planted data race, built only in the ThreadSanitizer tree: two threads write one plain int
// with nothing ordering the writes. scripts/test_tsan_gate.py runs it through the same gate as
// the suites (scripts/tsan_gate.sh) and fails unless the gate fails on it with a data race
// report naming PlantedWrite, so CI notices when ThreadSanitizer stops catching races.
#include <atomic>
#include <cstdio>
#include <thread>

namespace {

int planted = 0;  // written by both threads, unguarded

// The racing write; noinline so that both reports name it.
[[gnu::noinline]] void PlantedWrite(int value) { planted = value; }

// The threads take turns, kRounds writes each, through a relaxed counter, which orders nothing
// for ThreadSanitizer. One write each was missed in 13 runs of 300 (clang 14), even with both
// threads alive until both had written; 64 each were reported in 1,000 runs of 1,000, and
// ThreadSanitizer reports the pair of stacks once.
constexpr int kRounds = 64;
std::atomic<int> turn{0};

}  // namespace

int main() {
  std::thread other([] {
    for (int i = 0; i < kRounds; ++i) {
      while (turn.load(std::memory_order_relaxed) != 2 * i) std::this_thread::yield();
      PlantedWrite(1);
      turn.store(2 * i + 1, std::memory_order_relaxed);
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    while (turn.load(std::memory_order_relaxed) != 2 * i + 1) std::this_thread::yield();
    PlantedWrite(2);
    turn.store(2 * i + 2, std::memory_order_relaxed);
  }
  other.join();
  std::printf("planted race: wrote %d\n", planted);
  return 0;
}
