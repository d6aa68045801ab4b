#!/usr/bin/env bash
# The ThreadSanitizer gate: ctest over build/tsan (scripts/build_tsan.sh), failing when a test
# fails or when any process it started, children included, reported anything that counts. Every
# process writes its reports to a file of its own under build/tsan/tsan-reports (TSAN_OPTIONS
# log_path) and exits as it would have without them, so a report from a child whose exit status
# no test reads still fails the gate; scripts/tsan_reports.py then prints each report that
# counts. Suppressions (third-party code only) are in scripts/tsan.supp.
#   scripts/tsan_gate.sh [ctest args...]   the suites; the planted race (label `planted`) is
#                                          left out
#   scripts/tsan_gate.sh --planted         the planted race alone, which must fail
#                                          (scripts/test_tsan_gate.py)
set -euo pipefail
cd "$(dirname "$0")/.."
tree=build/tsan
select=(-LE planted)
if [ "${1:-}" = "--planted" ]; then
  shift
  select=(-L planted)
fi
reports="$PWD/$tree/tsan-reports"
supp="$PWD/scripts/tsan.supp"
rm -rf "$reports"
mkdir -p "$reports"
# halt_on_error=0 and exitcode=0: a process goes on past a report and reports every race it sees;
# this script judges them. second_deadlock_stack: both stacks of a lock-order inversion.
# die_after_fork=0: a test forks a threaded process whose child starts a thread (the UCX buffer
# pool's fork test), which TSan supports but refuses by default. handle_segv=0: the death tests'
# children must die of their SIGSEGV, not exit through TSan's handler.
export TSAN_OPTIONS="suppressions=$supp log_path=$reports/tsan halt_on_error=0 exitcode=0 \
second_deadlock_stack=1 history_size=4 die_after_fork=0 handle_segv=0\
${TSAN_EXTRA_OPTIONS:+ $TSAN_EXTRA_OPTIONS}"
# As in the sanitizer stage: UCX's malloc and mmap hooks patch the running process, which no
# transport under test needs.
export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none
source scripts/known_crashes.sh
status=0
ctest --test-dir "$tree" --output-on-failure "${select[@]}" "$@" || status=$?
# A suite that crashed in a known third-party bug, and in no other way, runs once more and must
# then pass, as in scripts/test.sh; what the crashed run reported still counts below.
if ((status != 0)) && only_known_crashes "$tree"; then
  echo "tsan_gate: suite(s) crashed in a known third-party bug (above), not in ferry's code; running them once more"
  status=0
  ctest --test-dir "$tree" --output-on-failure "${select[@]}" "$@" --rerun-failed || status=$?
fi
shopt -s nullglob
files=("$reports"/tsan.*)
if ! python3 scripts/tsan_reports.py "$supp" "${files[@]}"; then
  echo "tsan_gate: ThreadSanitizer reported (above)" >&2
  exit 1
fi
if ((status != 0)); then
  echo "tsan_gate: ctest failed over $tree (exit $status), with no ThreadSanitizer report" >&2
  exit "$status"
fi
echo "tsan_gate: no ThreadSanitizer report"
