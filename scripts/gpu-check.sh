#!/usr/bin/env bash
# Run every CUDA suite and the CUDA benchmarks against the REAL driver (libcuda.so.1, with
# FERRY_CUDA_DRIVER unset) from an already-built build directory, and print a one-screen summary:
# tests passed/failed/skipped per suite, host round trips, and copy bandwidth against the driver's
# own cuMemcpy (pinned and pageable). Needs no network and no package manager: build first, e.g.
#   cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DFERRY_BUILD_BENCH=ON \
#         -DFERRY_BUILD_PYTHON=ON && ninja -C build/gpu
# then carry build/gpu (and this checkout) to the GPU machine and run
#   bash scripts/gpu-check.sh build/gpu
# Full logs land in BUILD/gpu-check/. Exit status: 0 when no test failed.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: scripts/gpu-check.sh BUILD_DIR (a built ferry build directory)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
out="$build/gpu-check"
mkdir -p "$out"
unset FERRY_CUDA_DRIVER FERRY_CUDA_STANDIN_DELAY_US
export FERRY_REQUIRE_DEVICES=CUDA0,CUDA_HOST0,CUDA_MANAGED0
[ -d ../shared ] && export FERRY_SHARED_DIR="$PWD/../shared"
py=$(command -v python3 || true)

echo "== ferry gpu-check: $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/   GPU: /'
else
  echo "   nvidia-smi not found (the suites still try libcuda.so.1)"
fi

# -- The C++ suites: every CUDA case (no skip allowed: FERRY_REQUIRE_DEVICES names the devices).
failed=0
summary() {  # gtest XML -> "passed failed skipped"
  "$py" - "$1" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
run = skipped = failed = 0
for case in root.iter("testcase"):
    if case.get("status") == "notrun":
        continue
    if case.find("skipped") is not None:
        skipped += 1
    elif case.find("failure") is not None:
        failed += 1
    else:
        run += 1
print(run, failed, skipped)
EOF
}
echo "== C++ suites (CUDA cases only; logs in $out)"
printf '   %-10s %8s %8s %8s\n' suite passed failed skipped
for suite in device memview ipc dipc; do
  bin="$build/tests/ferry_${suite}_tests"
  if [ ! -x "$bin" ]; then
    printf '   %-10s not built\n' "$suite"
    failed=1
    continue
  fi
  "$bin" --gtest_filter='*CUDA*:*Cuda*:ForeignProducer.*:*BatchesLandOnEveryDevice*' \
    --gtest_output="xml:$out/$suite.xml" >"$out/$suite.log" 2>&1
  rc=$?
  if [ -n "$py" ] && [ -f "$out/$suite.xml" ]; then
    read -r p f s < <(summary "$out/$suite.xml")
    printf '   %-10s %8s %8s %8s\n' "$suite" "$p" "$f" "$s"
    [ "$f" != 0 ] && failed=1
  else
    printf '   %-10s exit %s (see %s)\n' "$suite" "$rc" "$out/$suite.log"
  fi
  [ $rc -ne 0 ] && failed=1
  grep -h "^\[  FAILED  \] [A-Z]" "$out/$suite.log" | sort -u | head -5 | sed 's/^/     /'
done

# -- The Python suite's CUDA tests, where the binding was built and pytest is importable.
pyroot=""
so=$(ls "$build"/python/_ferry*.so 2>/dev/null | head -1)
if [ -n "$so" ] && [ -n "$py" ] && "$py" -c "import pytest, pyarrow, numpy" 2>/dev/null; then
  pyroot="$out/pyroot"
  mkdir -p "$pyroot/ferry"
  ln -sf "$PWD"/python/ferry/* "$pyroot/ferry/"
  ln -sf "$so" "$pyroot/ferry/"
  PYTHONPATH="$pyroot" FERRY_LIBRARY="$build/libferry.so" "$py" -m pytest -q -p no:cacheprovider \
    python/tests/test_cuda.py python/tests/test_device.py -k "cuda or CUDA" \
    >"$out/python.log" 2>&1
  [ $? -ne 0 ] && failed=1
  echo "== Python (test_cuda.py, test_device.py CUDA cases): $(tail -1 "$out/python.log")"
else
  echo "== Python: not run (needs $build/python/_ferry*.so, built with -DFERRY_BUILD_PYTHON=ON, and pytest, pyarrow, numpy)"
fi

# -- bench/device: round trips and bandwidth against cuMemcpy.
bench="$build/bench/ferry_device_bench"
if [ ! -x "$bench" ]; then
  echo "== bench/device: not built (configure with -DFERRY_BUILD_BENCH=ON)"
elif [ -z "$py" ]; then
  echo "== bench/device: python3 is needed to summarise; raw output in $out/bench.json"
  "$bench" --benchmark_filter='CUDA|Cuda|Pinned|Pageable|Sizes|Table' --benchmark_format=json \
    >"$out/bench.json" 2>"$out/bench.log"
else
  "$bench" --benchmark_filter='CUDA|Cuda|Pinned|Pageable|Sizes|Table' --benchmark_format=json \
    >"$out/bench.json" 2>"$out/bench.log" || failed=1
  "$py" - "$out/bench.json" <<'EOF'
import json, sys
try:
    data = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(f"== bench/device: no results (see {sys.argv[1][:-4]}log)")
runs = {b["name"]: b for b in data["benchmarks"] if "error_message" not in b}
skipped = sorted({b["name"].split("/")[0] for b in data["benchmarks"] if "error_message" in b})
if skipped:
    print("== bench/device: skipped " + ", ".join(skipped))
def gbs(name):
    b = runs.get(name)
    return b["bytes_per_second"] / 1e9 if b and "bytes_per_second" in b else None
print("== bench/device: copy bandwidth, ferry BufferCopy vs the driver's cuMemcpy (same buffers)")
print(f"   {'copy':34} {'ferry':>10} {'cuMemcpy':>10} {'ratio':>7}")
for kind in ("Pinned", "Pageable"):
    for direction in ("HostToDevice", "DeviceToHost"):
        for size, label in ((1 << 30, "1 GiB"), (1 << 20, "1 MiB"), (1 << 16, "64 KiB")):
            f = gbs(f"BM_{kind}/{direction}_ferry/{size}/real_time")
            c = gbs(f"BM_{kind}/{direction}_cuMemcpy/{size}/real_time")
            if f is None or c is None:
                continue
            what = f"{kind.lower()} {direction} {label}"
            print(f"   {what:34} {f:6.2f} GB/s {c:6.2f} GB/s {f / c:6.0%}")
print("== bench/device: counts")
for name, b in sorted(runs.items()):
    if name.startswith(("BM_Sizes", "BM_Copy_Table")):
        keep = {k: v for k, v in b.items() if k in ("round_trips", "ferry_allocations",
                                                     "ferry_copies", "driver_d2h_copies",
                                                     "driver_host_waits")}
        scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
        ms = b["real_time"] * scale
        counts = ", ".join(f"{k} {v:g}" for k, v in keep.items())
        print(f"   {name.split('/iterations')[0][3:]:48} {counts}; {ms:.3f} ms")
for name in ("BM_Copy_1GiB_CpuToDevice/CUDA", "BM_Copy_1GiB_DeviceToCpu/CUDA"):
    b = runs.get(name + "/real_time") or runs.get(name)
    if b:
        print(f"   {name[3:]:48} {b['real_time']:.1f} {b['time_unit']} per 1 GiB array")
EOF
fi
if [ $failed -eq 0 ]; then echo "== gpu-check: no test failed"; else echo "== gpu-check: FAILURES (logs in $out)"; fi
exit $failed
