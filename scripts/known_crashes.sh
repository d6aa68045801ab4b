# shellcheck shell=bash
# Sourced by scripts/test.sh and scripts/tsan_gate.sh: which crashes are known third-party bugs,
# after which a ctest suite, or a pytest test whose worker crashed, runs once more and must then
# pass. The known crashes: clang 14's LeakSanitizer faulting in its own tracer while it stops the
# world at a suite's exit ("Tracer caught signal 11", about one run of the dipc shard in a
# hundred here, under load), and UCX 1.13's async layer asserting that a missed event's handler
# belongs to the worker polling it (async.c, `handler->async == async`): an event missed while a
# worker was busy, whose handler was removed and whose descriptor number another worker's handler
# took before the first polled (openucx/ucx#9942, fixed in UCX 1.17). ferry's descriptor lock
# (src/transport/ucx/worker.hpp, ReplayGuard) keeps its own connects, accepts and workers out of
# that window; a UCX listener's accept, on UCX's own thread, stays outside it
# (docs/reliability.md). A failed test, a sanitizer finding or any other crash is never one of
# them.

# only_known_crashes TREE: true when every suite that failed in ctest's last run over TREE (a
# directory) crashed in one of the known bugs and in no other way.
only_known_crashes() {
  local logs=$1/Testing/Temporary
  local failed known
  failed=$(grep -c . "$logs/LastTestsFailed.log" 2>/dev/null || echo 0)
  known=$(grep -cE "LeakSanitizer has encountered a fatal error|async\.c:[0-9]+ +Assertion \`handler->async == async' failed" \
          "$logs/LastTest.log" || true)
  ((failed > 0 && known >= failed)) &&
    ! grep -qE "ERROR: (AddressSanitizer|LeakSanitizer: detected|ThreadSanitizer)|runtime error:|^\[  FAILED  \] .*\([0-9]+ ms\)|check failed" \
        "$logs/LastTest.log"
}

# only_known_pytest_crashes LOG: true when every test that failed in the pytest run whose output is
# LOG (a file) failed because its pytest-xdist worker crashed, each crash in one of the known bugs
# above, and nothing else failed or errored.
only_known_pytest_crashes() {
  local log=$1
  local failed errored crashed known
  failed=$(grep -cE "^FAILED " "$log" || true)
  errored=$(grep -cE "^ERROR " "$log" || true)
  crashed=$(grep -cE "^FAILED .* - worker '[^']+' crashed while running" "$log" || true)
  known=$(grep -cE "async\.c:[0-9]+ +Assertion \`handler->async == async' failed" "$log" || true)
  ((failed > 0 && errored == 0 && crashed == failed && known >= crashed))
}

# pytest_suite COMMAND...: a pytest-xdist run (COMMAND is its whole command line) whose tests that
# crashed their worker in one of the known bugs, and failed in no other way, run once more (pytest
# --last-failed) and must then pass.
pytest_suite() {
  local log status
  log=$(mktemp)
  { "$@" 2>&1; echo $? > "$log.rc"; } | tee "$log"
  status=$(cat "$log.rc")
  rm -f "$log.rc"
  if ((status == 0)) || ! only_known_pytest_crashes "$log"; then
    rm -f "$log"
    return "$status"
  fi
  rm -f "$log"
  echo "pytest_suite: test(s) crashed in a known third-party bug (above), not in ferry's code; running them once more"
  "$@" --last-failed --last-failed-no-failures none
}
