#!/usr/bin/env bash
# Packaging as users meet it, each in a fresh place with a smoke test run from outside the tree:
# `pip install ./python` into a new virtual environment; `pip wheel ./python` installed alone into
# another (the wheel carries libferry, linked in statically: no libferry.so, no path into the
# build tree); and `gem build ferry.gemspec` installed into a temporary GEM_HOME, which compiles
# the extension with CMake. CI runs it (.ci/run); it needs scripts/setup.sh's packages.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-packaging.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
PY=${PYTHON:-python3}
# The test tree's flags (scripts/trees.sh), so each build here takes its objects from ccache. The
# fresh environment for `pip install` lives at a fixed path, build/packaging-venv, made anew each
# run: scikit-build-core starts a build tree over when the interpreter's path changes, so that
# install keeps a tree of its own, build/packaging-python. `pip wheel` uses the interpreter of
# .venv, so it finds scripts/test.sh's tree (build/python-<tag>) built.
source scripts/trees.sh
envs=build/packaging-venv
rm -rf "$envs"

echo "== pip install ./python into a fresh virtual environment"
"$PY" -m venv "$envs"
"$envs/bin/python" -m pip install -q pyarrow
"$envs/bin/python" -m pip install -q "${FERRY_RELEASE_PIP[@]}" -C "build-dir=$repo/build/packaging-python" ./python
(cd "$tmp" && "$repo/$envs/bin/python" "$repo/scripts/packaging_smoke.py" "$repo")

echo "== pip wheel ./python, installed alone into another fresh environment"
.venv/bin/python -m pip wheel -q --no-build-isolation --no-deps "${FERRY_RELEASE_PIP[@]}" ./python -w "$tmp/dist"
wheel=$(ls "$tmp"/dist/ferry-*.whl)
"$PY" -m venv "$tmp/wheel"
"$tmp/wheel/bin/python" -m pip install -q pyarrow "$wheel"
so=$(ls "$tmp"/wheel/lib/python*/site-packages/ferry/_ferry*.so)
if ldd "$so" | grep -E "libferry|$repo"; then
  echo "test_packaging: the wheel's extension needs libferry.so or the build tree" >&2
  exit 1
fi
if readelf -d "$so" | grep -E "RPATH|RUNPATH" | grep -F "$repo"; then
  echo "test_packaging: the wheel's extension has a run path into the build tree" >&2
  exit 1
fi
(cd "$tmp" && env -u FERRY_LIBRARY "$tmp/wheel/bin/python" "$repo/scripts/packaging_smoke.py" "$repo")

echo "== gem build ferry.gemspec, gem install into a temporary GEM_HOME"
gem build ferry.gemspec --output "$tmp/ferry.gem" >/dev/null
export GEM_HOME="$tmp/gems" GEM_PATH="$tmp/gems"
FERRY_CMAKE_ARGS="${FERRY_RELEASE_DEFS[*]}" gem install --local --no-document "$tmp/ferry.gem"
(cd "$tmp" && ruby "$repo/scripts/packaging_smoke.rb")
echo "test_packaging: pip install, pip wheel and gem install all work"
