#!/usr/bin/env bash
# Writes the GPU bundle: one directory that runs ferry's CUDA checks on a machine with an NVIDIA
# GPU and none of ferry's build dependencies (the device machines have glibc, the C++ runtime,
# the NVIDIA driver and python3 with CMake, nanobind, pyarrow and pytest).
#
#   bash scripts/gpu-bundle.sh DIR [BUILD_DIR]     # BUILD_DIR: default build/test, built first
#   bash DIR/run.sh                                # there (see DIR/run.sh)
#
# DIR holds bin/ (the CUDA test binaries, their IPC peer, the device benchmark and the ferry CLI,
# stripped, with RPATH $ORIGIN/../lib), lib/ (libferry, libferry_flight and every shared library
# they need beyond glibc, the C++ runtime and libcuda, UCX's shared-memory transport modules),
# include/ (ferry's public headers), python/ (the binding's sources, the package, the tests and
# a CMake project that builds the binding there for whatever Python that machine has), standin/
# (the stand-in driver, for the dry run here) and run.sh. CI checks that it stays under 48 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/gpu-bundle.sh DIR [BUILD_DIR]" >&2; exit 2; }
out=$(realpath -m "$1")
build=${2:-build/test}
for f in tests/ferry_device_tests tests/ferry_memview_tests tests/ferry_dipc_tests \
         tests/ferry_cuda_ipc_peer bench/ferry_device_bench tools/ferry/ferry; do
  [ -x "$build/$f" ] || { echo "gpu-bundle: $build/$f is not built (bash scripts/test.sh builds $build with the benchmarks)" >&2; exit 2; }
done
command -v patchelf >/dev/null || { echo "gpu-bundle: patchelf is missing (scripts/setup.sh installs it)" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out"/{bin,lib/ucx,include,python,standin}
cp "$build"/tests/ferry_{device,memview,dipc}_tests "$build"/tests/ferry_cuda_ipc_peer \
   "$build"/bench/ferry_device_bench "$build"/tools/ferry/ferry "$out/bin/"
cp "$build"/tools/ferry/ferry_cli_flight.so "$out/bin/"
cp -L "$build"/libferry.so.0 "$build"/libferry_flight.so.0 "$out/lib/"
cp "$build"/tests/support/cuda_standin/libferry_cuda_standin.so "$out/standin/"

# What the binaries and libraries load, beyond what every Linux with the NVIDIA driver has.
system_lib() {
  case "$1" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libstdc++.so.*|libgcc_s.so.*|libcuda.so.*) return 0 ;;
  esac
  return 1
}
ucx_modules=$(dirname "$(ldconfig -p | awk '/libucs.so.0 /{print $NF; exit}')")/ucx
# UCX's transport modules, but InfiniBand's and RDMA-CM's: the GPU machines have neither, and
# their verbs libraries would add 3 MiB for nothing.
for m in "$ucx_modules"/libuct_*.so.0; do
  case "$m" in *_ib.so.0|*_rdmacm.so.0) ;; *) [ -e "$m" ] && cp -L "$m" "$out/lib/ucx/" ;; esac
done
collect() {
  ldd "$1" 2>/dev/null | awk '/=> \//{print $1, $3}' | while read -r name path; do
    system_lib "$name" && continue
    [ -e "$out/lib/$name" ] && continue
    cp -L "$path" "$out/lib/$name"
    collect "$out/lib/$name"
  done
}
for f in "$out"/bin/* "$out"/lib/*.so* "$out"/lib/ucx/*.so*; do collect "$f"; done

strip --strip-unneeded "$out"/bin/* "$out"/lib/*.so* "$out"/lib/ucx/*.so* 2>/dev/null || true
for f in "$out"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$out"/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$f"; done
for f in "$out"/lib/ucx/*.so*; do patchelf --set-rpath '$ORIGIN/..' "$f"; done

cp -r include/ferry "$out/include/"
rm -rf "$out/include/ferry/testing"
cp -r python/src python/ferry "$out/python/"
rm -f "$out"/python/ferry/_ferry*.so
mkdir -p "$out/python/tests"
cp python/tests/*.py "$out/python/tests/"
cp scripts/gpu_bundle/CMakeLists.txt "$out/python/"
cp scripts/gpu_bundle/run.sh scripts/gpu_bundle/summary.py "$out/"
find "$out" -name __pycache__ -prune -exec rm -rf {} +

size=$(du -sm "$out" | cut -f1)
echo "gpu-bundle: $out, ${size} MiB"
if [ "$size" -gt 48 ]; then
  echo "gpu-bundle: over 48 MiB: it would leave too little of the 64 MiB a device call carries" >&2
  exit 1
fi
