#!/usr/bin/env bash
# Configure and build build/tsan: clang with ThreadSanitizer, the test suites only
# (scripts/trees.sh). scripts/test.sh --sanitize builds it in the background and runs its suites.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/trees.sh
cmake -S . -B build/tsan -G Ninja "${FERRY_TSAN_DEFS[@]}" >/dev/null
cmake --build build/tsan -j"$(nproc)" "$@"
