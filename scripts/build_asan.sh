#!/usr/bin/env bash
# Configure and build build/asan: clang with AddressSanitizer and UBSan, the test suites and the
# libFuzzer targets in one tree (scripts/trees.sh). scripts/test.sh --sanitize runs its suites,
# scripts/fuzz.sh its fuzzers; whichever runs first builds it, the other finds it built. It holds
# build/asan.lock while it builds, so two callers (CI runs both at once) never build the tree together.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/trees.sh
mkdir -p build
exec 8>build/asan.lock
flock 8
cmake -S . -B build/asan -G Ninja "${FERRY_ASAN_DEFS[@]}" >/dev/null
cmake --build build/asan -j"$(nproc)"
