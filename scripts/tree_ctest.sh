# shellcheck shell=bash
# tree_ctest TREE ARGS...: ctest over build/TREE, where a suite that crashed in third-party code
# with a known bug, and in no other way, runs once more and must then pass. Sourced by
# scripts/test.sh and scripts/test_sanitized.sh. The known crashes: clang 14's LeakSanitizer
# faulting in its own tracer while it stops the world at a suite's exit ("Tracer caught signal
# 11", about one run of the dipc shard in a hundred here, under load), and UCX 1.13's async layer
# asserting that a missed event's handler belongs to the worker polling it (async.c,
# `handler->async == async`): an event missed while a worker held its lock, whose handler was
# removed and whose descriptor number another worker's handler took before the first polled
# (openucx/ucx#9942, fixed in UCX 1.17; seen once in several hundred flight suites under load). A
# failed test, a sanitizer finding or any other crash fails at once.
tree_ctest() {
  local tree=$1
  shift
  local logs=build/$tree/Testing/Temporary
  ctest --test-dir "build/$tree" --output-on-failure "$@" && return 0
  local failed known
  failed=$(grep -c . "$logs/LastTestsFailed.log" 2>/dev/null || echo 0)
  known=$(grep -cE "LeakSanitizer has encountered a fatal error|async\.c:[0-9]+ +Assertion \`handler->async == async' failed" \
          "$logs/LastTest.log" || true)
  if ((failed == 0 || known < failed)) ||
     grep -qE "ERROR: (AddressSanitizer|LeakSanitizer: detected|ThreadSanitizer)|runtime error:|^\[  FAILED  \] .*\([0-9]+ ms\)|check failed" \
       "$logs/LastTest.log"; then
    return 1
  fi
  echo "tree_ctest: $failed suite(s) crashed in a known third-party bug (above), not in ferry's code; running them once more"
  ctest --test-dir "build/$tree" --output-on-failure "$@" --rerun-failed
}
