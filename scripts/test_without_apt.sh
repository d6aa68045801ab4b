#!/usr/bin/env bash
# The Python wheel and the platform gem proven to need pip and gem alone, and ferry's UCX suites
# on PyPI's UCX (CI runs it; it needs root for its mount namespace):
# 1. scripts/build_wheel.sh and scripts/build_gem.sh write dist/; every ELF file in the wheel must
#    find each library it needs in the wheel, in libucx or in the manylinux base (glibc, the C++
#    runtime, zlib).
# 2. In a mount namespace where every file of the project's apt runtime packages (UCX, lz4, zstd,
#    gRPC, protobuf, abseil, ...) is hidden, and the compilers and CMake too:
#    - the wheel goes into a fresh virtual environment from a local wheelhouse (pip, offline),
#      with PyPI's libucx 1.22, and scripts/wheel_smoke.py runs there: the import, a round trip
#      against pyarrow, `ferry serve`/`ferry get` over shared memory and UCX, a pyarrow.flight
#      client, `ferry demo`;
#    - the dissociated-IPC suites' UCX cases run through the wheel (python/tests' dipc modules
#      with the wheel's command, and tests/interop against the independent peer, on libucx too;
#      their shared-memory cases do not touch UCX and run in scripts/test.sh);
#    - ucxx-cu12 joins the environment (it pins libucx 1.21) and scripts/wheel_ucxx.py sends a
#      UCX message with ucxx and with ferry in one process;
#    - the platform gem installs into a fresh GEM_HOME and scripts/packaging_smoke.rb runs.
# 3. Outside it, the test tree's transport and dipc suites and the UCX soaks run on libucx 1.22
#    (LD_LIBRARY_PATH; UCX runs binaries built against older headers), so the UCX code is tested
#    on both versions: Debian's 1.13 in scripts/test.sh, 1.22 here (and the fault matrix's UCX
#    cells on both, in scripts/test.sh).
# Usage: scripts/test_without_apt.sh [BUILD_DIR]   (the test tree, default build/test)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build=${1:-build/test}
PY=${PYTHON:-python3}
UCX_NEW=1.22.0      # what `pip install ferry` brings alone
UCX_UCXX=1.21.0     # what ucxx-cu12 0.52 pins
tmp=$(mktemp -d /tmp/ferry-wheel-env.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

bash scripts/build_wheel.sh
bash scripts/build_gem.sh
wheel=$(ls "$repo"/dist/ferry-*manylinux*.whl)
gem=$(ls "$repo"/dist/ferry-*-x86_64-linux.gem)

echo "== the wheelhouse (pip download; the installs below are offline)"
house=$repo/build/wheelhouse
.venv/bin/python -m pip download -q --disable-pip-version-check -d "$house" \
  "libucx-cu12==$UCX_NEW" pyarrow numpy pytest pytest-timeout pytest-xdist
.venv/bin/python -m pip download -q --disable-pip-version-check -d "$house" ucxx-cu12==0.52.0 \
  "libucx-cu12==$UCX_UCXX"

echo "== every library the wheel's ELF files need is in the wheel, in libucx or in the base system"
"$PY" -m venv "$tmp/ldd"
"$tmp/ldd/bin/python" -m pip install -q --disable-pip-version-check --no-index --find-links "$house" "$wheel"
site=$("$tmp/ldd/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
bash scripts/elf_closure.sh --base 'libz.so.*' --inside "$site/ferry" "$site/ferry.libs" "$site/libucx" \
  -- "$site/ferry" "$site/ferry.libs"

# The project's apt runtime packages: those that own a library the test tree's libferry and
# libferry_flight load, less glibc, the C++ runtime and zlib, which the manylinux policies count
# as the base system. dpkg knows a file by the path its package installed it under, /lib or /usr/lib,
# so each library is asked for under both, and by its real path too, in one query (dpkg reads its
# database once a call: a call a path took 26 s).
hide=()
mapfile -t libs < <(ldd "$build/libferry.so.0" "$build/libferry_flight.so.0" | awk '$3 ~ /^\// {print $3}' |
                    sort -u | while read -r lib; do echo "$lib"; realpath "$lib"; done |
                    sed 's|^/usr/|/|' | sort -u | sed 'p; s|^/|/usr/|')
mapfile -t pkgs < <({ dpkg -S "${libs[@]}" 2>/dev/null || true; } | cut -d: -f1 | tr -d ' ' | tr ',' '\n' |
                    sort -u | grep -v -x -E 'libc6|libstdc\+\+6|libgcc-s1|zlib1g')
for pkg in "${pkgs[@]}"; do
  while IFS= read -r f; do
    [ -f "$f" ] && [[ "$f" == *.so* ]] && hide+=("$f")
  done < <(dpkg -L "$pkg")
done
# No compiler either: the gem must install without one.
for tool in gcc g++ cc c++ clang clang++ cmake make ninja; do
  if command -v "$tool" >/dev/null; then hide+=("$(realpath "$(command -v "$tool")")"); fi
done
echo "== in a mount namespace with ${#hide[@]} files hidden: the compilers and the runtime packages ${pkgs[*]}"
unshare -m bash -s "$repo" "$tmp" "$house" "$wheel" "$gem" "$PY" "$UCX_NEW" "$UCX_UCXX" "$build" "${hide[@]}" <<'EOF_NS'
set -euo pipefail
repo=$1 tmp=$2 house=$3 wheel=$4 gem=$5 PY=$6 UCX_NEW=$7 UCX_UCXX=$8 build=$9
shift 9
for f in "$@"; do mount --bind /dev/null "$f"; done
# Nothing of the project's apt libraries is left to load.
for lib in libucp.so.0 liblz4.so.1 libgrpc++.so.1.51; do
  if "$PY" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$lib" 2>/dev/null; then
    echo "test_without_apt: $lib still loads from the system" >&2; exit 1
  fi
done
cd "$tmp"
"$PY" -m venv env
env/bin/python -m pip install -q --disable-pip-version-check --no-index --find-links "$house" \
  "$wheel" pyarrow numpy pytest pytest-timeout pytest-xdist
env/bin/python -m pip list 2>/dev/null | grep -E "^(ferry|libucx-cu12) "
PATH="$tmp/env/bin:/usr/bin:/bin" env/bin/python "$repo/scripts/wheel_smoke.py" "$repo" "$UCX_NEW"

echo "== the dissociated-IPC suites through the wheel (UCX $UCX_NEW)"
libucx=$(env/bin/python -c 'import libucx, os; print(os.path.dirname(libucx.__file__))')/lib
export FERRY_CLI="$tmp/env/bin/ferry" PYTHONPATH="$repo/scripts"
# Two at a time, as scripts/test.sh runs these modules (four there): they wait on their servers.
env/bin/python -m pytest -q -p no:cacheprovider --timeout=300 -p pytest_strict_skips -n 2 \
  "$repo/python/tests/test_binding_dipc.py" "$repo/python/tests/test_dipc_cli.py" \
  "$repo/python/tests/test_served_file.py" -k ucx
# The peer was built against Debian's UCX headers; on libucx's libraries it speaks 1.22 too.
LD_LIBRARY_PATH="$libucx" FERRY_DIPC_PEER="$repo/$build/tests/interop/dipc_peer" \
  env/bin/python -m pytest -q -p no:cacheprovider --timeout=300 -p pytest_strict_skips -k ucx "$repo/tests/interop"

echo "== ucxx-cu12 beside ferry (libucx $UCX_UCXX)"
env/bin/python -m pip install -q --disable-pip-version-check --no-index --find-links "$house" \
  ucxx-cu12 "libucx-cu12==$UCX_UCXX"
env/bin/python "$repo/scripts/wheel_ucxx.py" "$UCX_UCXX"

echo "== the platform gem, installed without a compiler"
if command -v gcc >/dev/null && gcc --version >/dev/null 2>&1; then
  echo "test_without_apt: gcc still runs" >&2; exit 1
fi
export GEM_HOME="$tmp/gems" GEM_PATH="$tmp/gems"
gem install --local --no-document "$gem" >/dev/null
ruby "$repo/scripts/packaging_smoke.rb"
EOF_NS

echo "== the test tree's transport and dipc suites and the UCX soaks on UCX $UCX_NEW"
# (The fault matrix runs its UCX cells on PyPI's UCX itself, in scripts/test.sh. The soak's
# clients run inside pytest, so here the whole process is pointed at the newer UCX.)
libucx=$(ls -d "$site/libucx/lib")
# The cases on shared memory alone (parameters Shm*, shm*) never load UCX: they ran in
# scripts/test.sh, and are left out here.
# These suites make real UCX connections, with real connect timeouts (5-10 s). CI runs this
# script in a lane at the lowest priority beside its sanitizer suites, which take both cores: a
# UCX 1.22 connection needs about 80 ms of CPU, and at nice 19 against two busy threads the
# listener's tests took 11-18 s and twice ran out of time. So they run at the normal priority,
# in a session (an autogroup) of their own; where the script already runs so, this changes nothing.
at_normal_priority() {
  if [ "$(id -u)" = 0 ]; then
    setsid -w nice -n "-$(nice)" "$@"
  else
    "$@"
  fi
}
GTEST_FILTER='-*/Shm*:*/shm*' LD_LIBRARY_PATH="$libucx" at_normal_priority ctest --test-dir "$build" -R '^(transport|dipc)$' --output-on-failure --timeout 900 -j"$(nproc)"
[ "$(LD_LIBRARY_PATH="$libucx" "$build/tools/ferry/ferry" devices --json | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["ucx"]["loaded"])')" = "$UCX_NEW" ]
LD_LIBRARY_PATH="$libucx" FERRY_CLI="$repo/$build/tools/ferry/ferry" PYTHONPATH="$repo/scripts" \
  at_normal_priority .venv/bin/python -m pytest -q -p no:cacheprovider --timeout=300 -p pytest_strict_skips -n 2 -k ucx "$repo/tests/faults/test_soak.py"
echo "test_without_apt: the wheel and the platform gem work without apt packages, beside ucxx, and ferry's UCX suites pass on $UCX_NEW"
