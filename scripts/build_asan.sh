#!/usr/bin/env bash
# Configure and build build/asan: clang with AddressSanitizer and UBSan, the test suites and the
# libFuzzer targets in one tree (scripts/trees.sh). scripts/test.sh --sanitize runs its suites,
# scripts/fuzz.sh its fuzzers; whichever runs first builds it, the other finds it built.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/trees.sh
cmake -S . -B build/asan -G Ninja "${FERRY_ASAN_DEFS[@]}" >/dev/null
cmake --build build/asan -j"$(nproc)"
