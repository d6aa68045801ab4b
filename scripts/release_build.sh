#!/usr/bin/env bash
# The Release build of ferry's own code (libferry, the ferry tool, the Ruby extension) with
# warnings as errors: optimizers warn about what lower levels do not see (GCC's -Wrestrict, for
# one). No tests are built here; the test builds are RelWithDebInfo and Debug (scripts/test.sh).
# CI runs it (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== Release build (warnings are errors): library, tool, Ruby extension"
cmake -S . -B build/release-werror -G Ninja -DCMAKE_BUILD_TYPE=Release -DFERRY_WERROR=ON \
  -DFERRY_BUILD_TESTS=OFF >/dev/null
cmake --build build/release-werror -j"$(nproc)"
echo "release_build: warning-free"
