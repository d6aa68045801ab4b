#!/usr/bin/env bash
# Run each libFuzzer target (ASan + UBSan, from build/asan: scripts/build_asan.sh builds it when
# it is missing) for a bounded time over its seed corpus, two targets at a time: a fuzzer is one
# process on one core. Crashes are saved as fuzz/crash-*; once fixed, keep them in the target's
# corpus as regression seeds.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
bash scripts/build_asan.sh
jobs=2
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# target_name TARGET: build/asan/fuzz/ferry_ipc_file_fuzz gives ipc_file (its corpus's name).
target_name() { basename "$1" | sed -E 's/^ferry_//; s/_fuzz$//'; }

# fuzz_one TARGET: runs one target over a copy of its corpus; its log goes to $logs/NAME.log and
# its exit status to $logs/NAME.status.
fuzz_one() {
  local target=$1 name work
  name=$(target_name "$target")
  work=$(mktemp -d)
  [ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name"/. "$work"/
  # Extra seed directories, read in place (libFuzzer writes only to the first directory).
  local extra=()
  if [[ $name == ipc_* ]]; then
    for d in ../shared/testdata/arrow-testing/ipc-integration/cpp-21.0.0 \
             ../shared/testdata/arrow-testing/ipc-malformed; do
      [ -d "$d" ] && extra+=("$d")
    done
  fi
  local rc=0
  "$target" -max_total_time="$seconds" -rss_limit_mb=2048 -artifact_prefix=fuzz/ \
    -print_final_stats=1 "$work" "${extra[@]}" >"$logs/$name.log" 2>&1 || rc=$?
  echo "$rc" >"$logs/$name.status"
  rm -rf "$work"
}

targets=(build/asan/fuzz/ferry_*_fuzz)
running=0
for target in "${targets[@]}"; do
  fuzz_one "$target" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

status=0
for target in "${targets[@]}"; do
  name=$(target_name "$target")
  rc=$(cat "$logs/$name.status")
  echo "== fuzz $name for ${seconds}s: exit $rc"
  if [ "$rc" = 0 ]; then tail -n 12 "$logs/$name.log"; else tail -n 80 "$logs/$name.log"; status=1; fi
done
exit $status
