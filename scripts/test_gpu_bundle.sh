#!/usr/bin/env bash
# The GPU bundle's dry run (CI runs it): scripts/gpu-bundle.sh writes the bundle outside the tree,
# every ELF file in it must find each library it needs inside the bundle (or be glibc, the C++
# runtime or libcuda), and run.sh then runs there on the stand-in driver with LD_LIBRARY_PATH
# empty and, in a mount namespace, the project's apt runtime libraries hidden (each file replaced
# by an empty one; zstd stays, as the compiler that builds the binding needs it). Data are shrunk
# to a few MiB (FERRY_BENCH_SMOKE=1): this proves the bundle travels, not how fast a GPU is.
#
#   bash scripts/test_gpu_bundle.sh [BUILD_DIR]     # default build/test
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/test}
dir=$(mktemp -d /tmp/ferry-gpu-bundle.XXXXXX)
# show_failures: the end of each step's log that run.sh's summary marks failed, before the
# directory goes (CI keeps only this script's output).
show_failures() {
  local f
  for f in "$dir"/out/*.log; do
    [ -f "$f" ] || continue
    if grep -qF "(see $(basename "$f"))" "$dir/out/summary.txt" 2>/dev/null; then
      echo "== the end of $(basename "$f")"
      tail -n 60 "$f"
    fi
  done
}
trap 'rc=$?; ((rc == 0)) || show_failures; rm -rf "$dir"' EXIT
bash scripts/gpu-bundle.sh "$dir/bundle" "$build"

# Every library each file needs resolves inside the bundle, with the system's library path empty.
bash scripts/elf_closure.sh --base 'libcuda.so.*' --inside "$dir/bundle" -- "$dir/bundle"

# The project's runtime libraries, hidden for the run.
hide=()
for pkg in liblz4-1 libucx0 'libgrpc++1.51' libgrpc29 libprotobuf32 libabsl20220623 libnuma1 \
           libcares2 libre2-9 libbenchmark1debian; do
  while IFS= read -r f; do
    [ -f "$f" ] && [[ "$f" == *.so* ]] && hide+=("$f")
  done < <(dpkg -L "$pkg" 2>/dev/null || true)
done
echo "test_gpu_bundle: hiding ${#hide[@]} files of the project's runtime packages"
venv_bin=$(cd .venv/bin && pwd)
# PyPI's CMake (self-contained, as on the GPU machines): Debian's loads lz4, which is hidden.
tools=build/gpu-bundle-tools
[ -x "$tools/cmake/data/bin/cmake" ] || .venv/bin/python -m pip install -q --target "$tools" cmake
cmake_bin=$(cd "$tools/cmake/data/bin" && pwd)
unshare -m bash -s "$dir" "$venv_bin" "$cmake_bin" "${hide[@]}" <<'EOF'
set -euo pipefail
dir=$1 venv_bin=$2 cmake_bin=$3
shift 3
for f in "$@"; do mount --bind /dev/null "$f"; done
cd "$dir/bundle"
export PATH="$cmake_bin:$venv_bin:/usr/bin:/bin" LD_LIBRARY_PATH= PYTHON="$venv_bin/python"
export FERRY_CUDA_DRIVER="$dir/bundle/standin/libferry_cuda_standin.so" FERRY_BENCH_SMOKE=1
# The binding's objects from ccache, where it is installed: paths under the bundle's (random)
# directory are taken as relative, so one run's objects serve the next (36 s -> 2 s).
if command -v ccache >/dev/null; then
  export FERRY_BUNDLE_LAUNCHER=ccache CCACHE_BASEDIR="$dir" CCACHE_NOHASHDIR=1
fi
OUT="$dir/out" bash run.sh
EOF
