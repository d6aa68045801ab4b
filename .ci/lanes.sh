#!/usr/bin/env bash
# CI's two lanes (.ci/run starts them): the packages lane and the checks lane at once, each a
# sequence of stages stopping at the first that fails. Fails when either lane fails.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cpu_use.sh
# step CMD...: runs one stage and says how long it took, so a slow stage shows in the log; its
# status is the stage's. (Called on the left of ||, where errexit does not apply: the status is
# returned, not left to set -e.)
step() {
  local start=$SECONDS rc=0
  "$@" || rc=$?
  cpu_use
  echo "== ci: '$*' took $((SECONDS - start)) s (lanes so far: ${SECONDS} s; $cpu_use_line)"
  return "$rc"
}
# lane NAME STAGE...: each STAGE (a command line) as a step, in order, stopping at the first that
# fails; the lane's output goes to build/ci-lane-NAME.log, each section header of its scripts
# ("== ...") with the lanes' seconds so far, and its exit status is the lane's.
lane() {
  local name=$1
  shift
  (
    for stage in "$@"; do
      # shellcheck disable=SC2086  # a stage is a command line, split into its words
      step $stage || exit 1
    done
  ) 2>&1 | while IFS= read -r line; do
    if [[ $line == "== "* && $line != "== ci: "* ]]; then line="$line [lanes +${SECONDS}s]"; fi
    printf '%s\n' "$line"
  done >"build/ci-lane-$name.log"
}
lane packages "bash scripts/test_without_apt.sh build/test" &
packages_pid=$!
rc=0
# Ten seconds a fuzz target, two at a time: nine targets in about 55 s.
lane checks "bash scripts/test_install.sh build/test" "bash scripts/test_gpu_bundle.sh build/test" \
  "bash scripts/lint.sh build/test" "bash scripts/fuzz.sh 10" \
  "bash scripts/test_packaging.sh --from-source" "bash scripts/demo.sh" "bash scripts/test_deb.sh" ||
  rc=1
wait "$packages_pid" || rc=1
echo "== ci: both lanes took ${SECONDS} s"
exit "$rc"
