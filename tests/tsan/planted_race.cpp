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

// Relaxed flags keep the other thread alive until both writes are made, without ordering them:
// when the other thread had written and finished first, ThreadSanitizer missed the race in about
// one run of six, and this gate's own test failed.
std::atomic<bool> written{false};
std::atomic<bool> done{false};

}  // namespace

int main() {
  std::thread other([] {
    PlantedWrite(1);
    written.store(true, std::memory_order_relaxed);
    while (!done.load(std::memory_order_relaxed)) std::this_thread::yield();
  });
  while (!written.load(std::memory_order_relaxed)) std::this_thread::yield();
  PlantedWrite(2);
  done.store(true, std::memory_order_relaxed);
  other.join();
  std::printf("planted race: wrote %d\n", planted);
  return 0;
}
