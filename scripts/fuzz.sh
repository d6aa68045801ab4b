#!/usr/bin/env bash
# Build the libFuzzer targets with clang (ASan + UBSan) and run each for a bounded time over its
# seed corpus. Crashes are saved as fuzz/crash-*; once fixed, keep them in the target's corpus as
# regression seeds.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DFERRY_BUILD_FUZZ=ON -DFERRY_BUILD_TESTS=OFF -DFERRY_BUILD_TOOLS=OFF \
  -DFERRY_SANITIZE=address,undefined >/dev/null
cmake --build build/fuzz -j"$(nproc)"
status=0
for target in build/fuzz/fuzz/ferry_*_fuzz; do
  name=$(basename "$target" | sed -E 's/^ferry_//; s/_fuzz$//')
  corpus="fuzz/corpus/$name"
  work=$(mktemp -d)
  [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
  # Extra seed directories, read in place (libFuzzer writes only to the first directory).
  extra=()
  if [[ $name == ipc_* ]]; then
    for d in ../shared/testdata/arrow-testing/ipc-integration/cpp-21.0.0 \
             ../shared/testdata/arrow-testing/ipc-malformed; do
      [ -d "$d" ] && extra+=("$d")
    done
  fi
  echo "== fuzz $name for ${seconds}s"
  if ! "$target" -max_total_time="$seconds" -rss_limit_mb=2048 -artifact_prefix=fuzz/ \
       -print_final_stats=1 "$work" "${extra[@]}" 2>&1 | tail -n 12; then
    status=1
  fi
  rm -rf "$work"
done
exit $status
