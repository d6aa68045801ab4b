// A planted data race, built only in the ThreadSanitizer tree: two threads write one plain int
// with nothing ordering the writes. scripts/test_tsan_gate.py runs it through the same gate as
// the suites (scripts/tsan_gate.sh) and fails unless the gate fails on it with a data race
// report naming PlantedWrite, so CI notices when ThreadSanitizer stops catching races.
#include <cstdio>
#include <thread>

namespace {

int planted = 0;  // written by both threads, unguarded

// The racing write; noinline so that both reports name it.
[[gnu::noinline]] void PlantedWrite(int value) { planted = value; }

}  // namespace

int main() {
  std::thread other([] { PlantedWrite(1); });
  PlantedWrite(2);
  other.join();
  std::printf("planted race: wrote %d\n", planted);
  return 0;
}
