#!/usr/bin/env bash
# The C++ and C suites under the sanitizers, their trees built first: build/asan
# (scripts/build_asan.sh; clang's AddressSanitizer and UBSan, with the libFuzzer targets) and
# build/tsan (scripts/build_tsan.sh). The suites run under ASan and UBSan, then the
# ThreadSanitizer gate is proved to fail on its planted race (scripts/test_tsan_gate.py) and runs
# every suite (scripts/tsan_gate.sh). scripts/test.sh --sanitize starts it in the background at
# the lowest priority, with --after FILE: the trees build at once, on whatever CPU the other
# suites leave idle, and the suites wait until FILE exists (test.sh creates it when its remaining
# stages mostly wait on processes), so that the two never contend for long.
# Each build's output goes to build/<tree>-build.log and is printed only when it fails.
# Usage: scripts/test_sanitized.sh [--after FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
after=""
case "${1:-}" in
  --after) after=$2 ;;
  -h|--help) sed -n '2,11p' "$0" | cut -c3-; exit 0 ;;
  "") ;;
  *) echo "test_sanitized.sh: unknown argument $1" >&2; exit 2 ;;
esac
source scripts/tree_ctest.sh
jobs=$(nproc)

# build NAME: scripts/build_NAME.sh, its output kept in build/NAME-build.log.
build() {
  if ! bash "scripts/build_$1.sh" >"build/$1-build.log" 2>&1; then
    cat "build/$1-build.log" >&2
    echo "test_sanitized.sh: build/$1 did not build (the log above)" >&2
    exit 1
  fi
}
build asan
build tsan
if [ -n "$after" ]; then
  # Bounded: two hours, the longest any CI run may take.
  for ((i = 0; i < 7200; i++)); do
    [ -e "$after" ] && break
    sleep 1
  done
  [ -e "$after" ] || { echo "test_sanitized.sh: $after never appeared" >&2; exit 1; }
fi

echo "== [+${SECONDS}s] C++ and C suites under ASan + UBSan"
# UCX patches malloc and mmap in the running process (its memory hooks, for registration
# caches); LeakSanitizer's stop-the-world tracer can then fault at exit. The transports under
# test (TCP, shared memory, CMA) need no registration cache, so the hooks are turned off here.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none
tree_ctest asan --timeout 1200 -j"$jobs" -E '^memview$'
# The memview suite loads and unloads libraries (PoCL compiles and loads kernels at run time);
# one leaves a stale dynamic-TLS entry whose bogus range LeakSanitizer's tracer faults on at
# exit. Leaks are still checked there, with thread-local storage not taken as roots.
LSAN_OPTIONS=use_tls=0 tree_ctest asan --timeout 1200 -R '^memview$'

echo "== [+${SECONDS}s] C++ and C suites under ThreadSanitizer"
# First the gate's own test: it must fail on the planted race, or no result of it means much.
python3 scripts/test_tsan_gate.py
# Every suite that starts a thread, and the rest with them (they take seconds): any report from
# any process fails the stage (scripts/tsan_gate.sh says which count).
bash scripts/tsan_gate.sh --timeout 1200 -j"$jobs"
echo "== [+${SECONDS}s] the sanitized suites passed"
