#!/usr/bin/env bash
# Set up what is missing, build ferry with warnings as errors, and run every test suite: the C++
# and C suites and the Ruby suite (ctest), the Python and command-line suites (pytest, against pyarrow; a skip that
# names no missing hardware fails), the Flight suites against pyarrow.flight.
# With --sanitize (CI uses it) the C++ and C suites run a second time under AddressSanitizer and
# UBSan, built with clang in the tree that also holds the libFuzzer targets (scripts/build_asan.sh),
# and a third time under ThreadSanitizer (scripts/build_tsan.sh, scripts/tsan_gate.sh), after a
# self-test proving that gate fails on a planted race (scripts/test_tsan_gate.py).
# The build trees' flags are in scripts/trees.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=0
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=1 ;;
    -h|--help) echo "usage: scripts/test.sh [--sanitize]"; exit 0 ;;
    *) echo "test.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

# Each section's header says when it starts, in seconds since this script began, after a line
# with the CPU seconds the section before used (scripts/cpu_use.sh); where
# FERRY_STAGE_LOG names a file, the header is appended to it too (CI starts its later stages on one).
source scripts/cpu_use.sh
stage() {
  # What the stage before used: its own processes (the sanitizer builds count where they are
  # waited for) and the machine (the CI lanes too, once they run).
  cpu_use
  if [[ ${stage_started:-0} == 1 ]]; then echo "   the stage before: $cpu_use_line"; fi
  stage_started=1
  echo "== [+${SECONDS}s] $*"
  if [[ -n ${FERRY_STAGE_LOG:-} ]]; then echo "$*" >>"$FERRY_STAGE_LOG"; fi
}

# tree_ctest TREE ARGS...: ctest over build/TREE, where a suite that crashed in a known
# third-party bug (scripts/known_crashes.sh), and in no other way, runs once more and must then
# pass.
source scripts/known_crashes.sh
tree_ctest() {
  local tree=$1
  shift
  ctest --test-dir "build/$tree" --output-on-failure "$@" && return 0
  only_known_crashes "build/$tree" || return 1
  echo "test.sh: suite(s) crashed in a known third-party bug (above), not in ferry's code; running them once more"
  ctest --test-dir "build/$tree" --output-on-failure "$@" --rerun-failed
}

bash scripts/setup.sh
source scripts/trees.sh
jobs=$(nproc)
# setup.sh installs PoCL, so the OpenCL conformance runs here rather than skipping; the CUDA suites
# run on the stand-in driver (tests/support/cuda_standin), so no CUDA case may skip either.
export FERRY_REQUIRE_DEVICES="${FERRY_REQUIRE_DEVICES:-GUARDED,OPENCL0,CUDA0,CUDA_HOST0,CUDA_MANAGED0}"
standin="$PWD/build/test/tests/support/cuda_standin/libferry_cuda_standin.so"

stage "build (Release with line tables; warnings are errors)"
cmake -S . -B build/test -G Ninja "${FERRY_RELEASE_DEFS[@]}" >/dev/null
cmake --build build/test -j"$jobs"

# The sanitizer trees build in the background at the lowest priority while the suites below run:
# they wait on processes, timeouts and servers for much of their time, and the builds take only
# what they leave idle. Each runs in a session of its own, so that an early exit stops the
# compilers with it; with the kernel's autogroup scheduling a session is weighed apart from the
# others whatever its processes' nice values, so the session's own weight is set lowest too.
# The ThreadSanitizer tree builds after the ASan tree, whose suites run first: the ASan build
# holds a lock (build/sanitizer-builds.lock, inherited by every process it starts) that the TSan
# build waits on, so the two never split the idle CPU between them.
asan_pid=""
tsan_pid=""
asan_log=build/asan-build.log
tsan_log=build/tsan-build.log
if ((sanitize)); then
  exec 9>build/sanitizer-builds.lock
  flock 9
  setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 bash scripts/build_asan.sh' \
    >"$asan_log" 2>&1 &
  asan_pid=$!
  exec 9>&-
  setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null
                  exec flock build/sanitizer-builds.lock nice -n 19 bash scripts/build_tsan.sh' \
    >"$tsan_log" 2>&1 &
  tsan_pid=$!
fi
# stop_builds: ends the background builds still running, on an early exit.
stop_builds() {
  local pid
  for pid in $asan_pid $tsan_pid; do kill -- -"$pid" 2>/dev/null || true; done
}
trap stop_builds EXIT
# promote PID: the background build PID (a session's leader) is now what the suites wait on, so it
# takes its share of the CPU at the normal priority, ahead of CI's lanes, which stay at the lowest
# (from an empty ccache the ASan tree was still building when its stage came). The processes it
# starts later inherit the priority from its ninja.
promote() {
  echo 0 >"/proc/$1/autogroup" 2>/dev/null || true
  local pids
  pids=$(ps -s "$1" -o pid= 2>/dev/null || true)
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086  # one word a process
    renice -n 0 -p $pids >/dev/null 2>&1 || true
  fi
}

stage "C++ and C suites"
tree_ctest test --timeout 900 -j"$jobs"

# The pytest suites run four tests at a time (pytest-xdist): many wait on servers and processes;
# python/ and cli/ took 19 s that way, flight 13 s against 45. The docs' blocks run two at a time
# (below), and interop one at a time: under four at a time the independent peer's own self-test once
# ended a server before the client's last frees reached it (a race of the peer's, not ferry's).
# Those run by pytest-xdist go through pytest_suite (scripts/known_crashes.sh) with --capture=sys:
# pytest then captures what Python writes but leaves file descriptor 2 be, so the message a
# library's C code writes as it aborts the worker (UCX's assertion) reaches the log it reads.
stage "Python binding (pip install ./python)"
.venv/bin/python -m pip install -q --no-build-isolation "${FERRY_RELEASE_PIP[@]}" ./python

.venv/bin/python scripts/test_pytest_strict_skips.py
.venv/bin/python scripts/test_known_crashes.py
stage "Python, command-line and docs suites (pytest; a skip that names no missing hardware fails)"
FERRY_CUDA_DRIVER="$standin" FERRY_CUDA_STANDIN_DELAY_US=200 \
FERRY_LIBRARY="$PWD/build/test/libferry.so" FERRY_CLI="$PWD/build/test/tools/ferry/ferry" \
FERRY_BENCH_TREE="$PWD/build/test" \
  PYTHONPATH="$PWD/scripts" pytest_suite .venv/bin/python -m pytest -q --capture=sys --timeout=300 -p pytest_strict_skips -n 4 python/tests tests/cli tests/support
# The docs' blocks two at a time, the benchmarks at their smallest (which load both cores
# themselves) one after another on one worker (tests/docs/test_docs.py groups them), every other
# block on whichever worker is free: 227 s one at a time, 104-123 s so.
FERRY_CUDA_DRIVER="$standin" FERRY_CUDA_STANDIN_DELAY_US=200 \
FERRY_LIBRARY="$PWD/build/test/libferry.so" FERRY_CLI="$PWD/build/test/tools/ferry/ferry" \
FERRY_BENCH_TREE="$PWD/build/test" \
  PYTHONPATH="$PWD/scripts" pytest_suite .venv/bin/python -m pytest -q --capture=sys --timeout=300 -p pytest_strict_skips --durations=15 \
  -n 2 --dist loadgroup tests/docs

stage "Interop: ferry against the independent Dissociated IPC peer (tests/interop)"
FERRY_CLI="$PWD/build/test/tools/ferry/ferry" FERRY_DIPC_PEER="$PWD/build/test/tests/interop/dipc_peer" \
  PYTHONPATH="$PWD/scripts" .venv/bin/python -m pytest -q --timeout=300 -p pytest_strict_skips tests/interop

stage "Flight: pyarrow.flight against ferry's server, ferry's client against pyarrow's, discovery to the fast path (tests/flight)"
FERRY_CLI="$PWD/build/test/tools/ferry/ferry" FERRY_DIPC_PEER="$PWD/build/test/tests/interop/dipc_peer" \
  PYTHONPATH="$PWD/scripts" pytest_suite .venv/bin/python -m pytest -q --capture=sys --timeout=300 -p pytest_strict_skips -n 4 tests/flight \
  --ignore=tests/flight/test_large_batches.py

# Alone: its 2.5 GiB batch is read three times and written once, up to 8 GB resident at its peak.
stage "Flight: a batch over 2 GiB through DoGet and DoPut (tests/flight/test_large_batches.py)"
FERRY_CLI="$PWD/build/test/tools/ferry/ferry" \
  PYTHONPATH="$PWD/scripts" .venv/bin/python -m pytest -q --timeout=600 -p pytest_strict_skips -s \
  tests/flight/test_large_batches.py

# The Dask suite again on the oldest Dask scripts/setup.sh allows (the stage above ran it on the
# newest), in .venv-dask-oldest with ferry's package from .venv alone on its path.
dask_oldest=$(sed -n 's/^DASK_OLDEST=//p' scripts/setup.sh)
stage "Dask: the Dask suite on the oldest Dask allowed, $dask_oldest (tests/flight/test_dask.py)"
rm -rf build/dask-oldest && mkdir -p build/dask-oldest
ln -s "$(.venv/bin/python -c 'import ferry, os; print(os.path.dirname(ferry.__file__))')" build/dask-oldest/ferry
.venv-dask-oldest/bin/python -c "import dask, distributed; assert dask.__version__ == distributed.__version__ == '$dask_oldest', dask.__version__"
FERRY_CLI="$PWD/build/test/tools/ferry/ferry" PYTHONPATH="$PWD/build/dask-oldest:$PWD/scripts" \
  .venv-dask-oldest/bin/python -m pytest -q --timeout=300 -p pytest_strict_skips tests/flight/test_dask.py

stage "Cluster: two server hosts, a client host, Dask workers and a two-node Ray cluster in network namespaces (tests/cluster)"
FERRY_CLI="$PWD/build/test/tools/ferry/ferry" \
  PYTHONPATH="$PWD/scripts" .venv/bin/python -m pytest -q --timeout=300 -p pytest_strict_skips tests/cluster

stage "Transport, dipc and flight suites again with UCX limited to TCP (UCX_TLS=tcp,self)"
UCX_TLS=tcp,self tree_ctest test -R '^(transport|dipc|flight)$' --timeout 900

stage "Faults: the fault matrix (on Debian's UCX and PyPI's), a link going down, and a soak (tests/faults)"
# Eight cells at a time (pytest-xdist) on this project's 2 cores: a cell spends most of its time
# waiting on its processes (a timeout to expire, a server to fall idle); the 533 cells took 167 s
# at eight (149 s of CPU) against 310 s at four. Detection is event-driven and the idle check reads
# the server's own CPU, so the cells beside it cost little; each cell keeps its bound plus the
# suite's slack for a loaded machine (worst at eight: 1.017 s for a kill's 1 s bound, slack 0.5 s).
rm -f "$PWD/build/test/faults.jsonl"
FERRY_CLI="$PWD/build/test/tools/ferry/ferry" FERRY_FAULT_REPORT="$PWD/build/test/faults.jsonl" \
  PYTHONPATH="$PWD/scripts" pytest_suite .venv/bin/python -m pytest -q --capture=sys --timeout=300 -p pytest_strict_skips -n 8 --durations=10 tests/faults


if ((sanitize)); then
  stage "C++ and C suites under ASan + UBSan"
  promote "$asan_pid"
  if ! wait "$asan_pid"; then
    cat "$asan_log" >&2
    echo "test.sh: the sanitizer tree did not build (the log above)" >&2
    exit 1
  fi
  asan_pid=""
  # UCX patches malloc and mmap in the running process (its memory hooks, for registration
  # caches); LeakSanitizer's stop-the-world tracer can then fault at exit. The transports under
  # test (TCP, shared memory, CMA) need no registration cache, so the hooks are turned off here.
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none
  tree_ctest asan --timeout 1200 -j"$jobs" -E '^memview$'
  # The memview suite loads and unloads libraries (PoCL compiles and loads kernels at run time);
  # one leaves a stale dynamic-TLS entry whose bogus range LeakSanitizer's tracer faults on at
  # exit. Leaks are still checked there, with thread-local storage not taken as roots.
  LSAN_OPTIONS=use_tls=0 tree_ctest asan --timeout 1200 -R '^memview$'

  stage "C++ and C suites under ThreadSanitizer"
  promote "$tsan_pid"
  if ! wait "$tsan_pid"; then
    cat "$tsan_log" >&2
    echo "test.sh: the ThreadSanitizer tree did not build (the log above)" >&2
    exit 1
  fi
  tsan_pid=""
  # First the gate's own test: it must fail on the planted race, or no result of it means much.
  python3 scripts/test_tsan_gate.py
  # Every suite that starts a thread, and the rest with them (they take seconds): any report from
  # any process fails the stage (scripts/tsan_gate.sh says which count).
  bash scripts/tsan_gate.sh --timeout 1200 -j"$jobs"
fi
stage "all suites passed"
