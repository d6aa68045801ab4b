#!/usr/bin/env bash
# ferry's GPU check, run from the bundle that scripts/gpu-bundle.sh wrote (this script's
# directory). It needs the NVIDIA driver (libcuda.so.1, or FERRY_CUDA_DRIVER: the dry run points
# it at the stand-in), python3 with pytest, pyarrow, numpy, nanobind and CMake, and nothing else
# of ferry's dependencies: the bundle carries them.
#
#   bash run.sh            # results under $OUT (default: ./out)
#
# Steps: every CUDA gtest case (device, memview, dipc), the CUDA pytest modules (the binding is
# built first for this python3), `ferry serve --device cuda:0` and `ferry get --device cuda:0`
# across two processes, then the copy figures beside cuMemcpy and the CUDA IPC landing time
# beside a device-to-device copy of the same bytes. A failed or skipped test fails the run (exit
# 1); the figures are in $OUT/figures.md.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/out}
mkdir -p "$out"
py=${PYTHON:-python3}
export FERRY_REQUIRE_DEVICES=CUDA0,CUDA_HOST0,CUDA_MANAGED0
export FERRY_LIBRARY="$here/lib/libferry.so.0" FERRY_CLI="$here/bin/ferry"
export PYTHONUNBUFFERED=1
failed=0
start=$SECONDS
log() { echo "== [+$((SECONDS - start))s] $*" | tee -a "$out/summary.txt"; }
fail() { failed=1; log "FAILED: $*"; }

log "ferry GPU check: $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -n); driver ${FERRY_CUDA_DRIVER:-libcuda.so.1}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total \
  --format=csv,noheader | sed 's/^/   GPU: /' | tee -a "$out/summary.txt"

# -- The C++ suites: their CUDA cases (CudaPeer and the CUDA1 cases need a second GPU; the
# CudaStandin cases test the stand-in itself).
skip='CudaPeer.*:*CUDA1*'
[ -z "${FERRY_CUDA_DRIVER:-}" ] && skip="$skip:CudaStandin.*"
for suite in device memview dipc; do
  timeout 300 "$here/bin/ferry_${suite}_tests" \
    --gtest_filter="*CUDA*:*Cuda*:ForeignProducer.*:*BatchesLandOnEveryDevice*:-$skip" \
    --gtest_output="xml:$out/$suite.xml" >"$out/$suite.log" 2>&1
  rc=$?
  line=$("$py" "$here/summary.py" gtest "$out/$suite.xml" 2>&1) || fail "$suite: $line"
  log "gtest $suite: $line (exit $rc)"
  [ $rc -eq 0 ] || fail "$suite exited $rc (see $suite.log)"
done

# -- The Python binding for this interpreter, then the CUDA pytest modules.
pyroot="$out/pyroot"
rm -rf "$pyroot" "$out/pybuild"
mkdir -p "$pyroot"
cp -r "$here/python/ferry" "$pyroot/"
# FERRY_BUNDLE_LAUNCHER: a compiler launcher (the dry run's ccache), or nothing.
if cmake -S "$here/python" -B "$out/pybuild" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     ${FERRY_BUNDLE_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER="$FERRY_BUNDLE_LAUNCHER"} \
     -DFERRY_BUNDLE="$here" -DPython_EXECUTABLE="$(command -v "$py")" >"$out/binding.log" 2>&1 &&
   cmake --build "$out/pybuild" -j"$(nproc)" >>"$out/binding.log" 2>&1; then
  cp "$out"/pybuild/_ferry*.so "$pyroot/ferry/"
  log "binding built for $("$py" -c 'import sys; print(sys.version.split()[0])')"
  # DLPack's exchange API with torch CUDA tensors, where this python3 has a torch that sees the
  # GPU (the bundle does not carry torch, and torch cannot use the stand-in).
  torch_cases=()
  "$py" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null &&
    torch_cases=(test_dlpack_exchange.py)
  (cd "$here/python/tests" && PYTHONPATH="$pyroot:$here/python/tests" timeout 300 "$py" -m pytest -q \
     -p no:cacheprovider --junitxml="$out/pytest.xml" test_cuda.py test_dipc_cuda_ipc.py \
     "test_device.py" "${torch_cases[@]}" -k "cuda or CUDA" >"$out/pytest.log" 2>&1)
  rc=$?
  line=$("$py" "$here/summary.py" junit "$out/pytest.xml" 2>&1) || fail "pytest: $line"
  log "pytest: $line (exit $rc)"
  [ $rc -eq 0 ] || fail "pytest exited $rc (see pytest.log)"
else
  fail "the binding did not build (see binding.log)"
fi

# -- CUDA IPC across two processes with the CLI: a mixed table, then 1 GiB for the figure.
PYTHONPATH="$pyroot" "$py" "$here/summary.py" ipc "$here/bin/ferry" "$out" >"$out/ipc.log" 2>&1 ||
  fail "CUDA IPC serve/get (see ipc.log)"
log "CUDA IPC serve/get: $(tail -1 "$out/ipc.log")"

# -- Figures, each beside the driver's own copy in the same run. A dry run (FERRY_BENCH_SMOKE=1, on
# the stand-in driver, whose figures mean nothing) times each case as briefly as it can.
smoke=()
[ -n "${FERRY_BENCH_SMOKE:-}" ] && smoke=(--benchmark_min_time=0.001)
timeout 240 "$here/bin/ferry_device_bench" ${smoke[@]+"${smoke[@]}"} \
  --benchmark_filter='Pinned|Pageable|DeviceToDevice|Sizes|Table' --benchmark_format=json \
  >"$out/bench.json" 2>"$out/bench.log" || fail "bench/device (see bench.log)"
"$py" "$here/summary.py" bench "$out/bench.json" "$out/ipc.log" >"$out/figures.md" 2>&1 ||
  fail "the figures (see figures.md)"
cat "$out/figures.md"
if [ $failed -eq 0 ]; then log "GPU check passed"; else log "GPU check FAILED"; fi
exit $failed
