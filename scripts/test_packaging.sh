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

# no_fault_hook FILE...: what users install carries no fault-injection hook (FERRY_FAULT_INJECTION
# is a test tree's option): neither the hook's variable name nor a FaultPoint symbol. The test
# tree's libferry.so has both, which shows the check can see them.
no_fault_hook() {
  local f
  for f in "$@"; do
    if has_fault_hook "$f"; then
      echo "test_packaging: $f carries the fault suite's hook (FERRY_FAULT_PAUSE, FaultPoint)" >&2
      exit 1
    fi
  done
  echo "test_packaging: no fault-injection hook in $*"
}
# has_fault_hook FILE: the variable's name in its bytes, or a FaultPoint symbol (read whole first:
# under pipefail, `nm | grep -q` fails when grep stops reading early).
has_fault_hook() {
  local symbols
  symbols=$(nm -C "$1" 2>/dev/null || true)
  grep -qa FERRY_FAULT_PAUSE "$1" || grep -q FaultPoint <<<"$symbols"
}
control=$(nm -C build/test/libferry.so 2>/dev/null || true)
if [ -f build/test/libferry.so ] && ! { grep -qa FERRY_FAULT_PAUSE build/test/libferry.so &&
                                        grep -q FaultPoint <<<"$control"; }; then
  echo "test_packaging: the test tree's libferry.so lacks the fault hook: the check below sees nothing" >&2
  exit 1
fi

echo "== pip install ./python into a fresh virtual environment"
"$PY" -m venv "$envs"
"$envs/bin/python" -m pip install -q pyarrow
"$envs/bin/python" -m pip install -q "${FERRY_RELEASE_PIP[@]}" -C "build-dir=$repo/build/packaging-python" ./python
(cd "$tmp" && "$repo/$envs/bin/python" "$repo/scripts/packaging_smoke.py" "$repo")
no_fault_hook "$envs"/lib/python*/site-packages/ferry/_ferry*.so build/packaging-python/libferry.a

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
no_fault_hook "$so"

echo "== gem build ferry.gemspec, gem install into a temporary GEM_HOME"
gem build ferry.gemspec --output "$tmp/ferry.gem" >/dev/null
export GEM_HOME="$tmp/gems" GEM_PATH="$tmp/gems"
FERRY_CMAKE_ARGS="${FERRY_PACKAGE_DEFS[*]}" gem install --local --no-document "$tmp/ferry.gem"
(cd "$tmp" && ruby "$repo/scripts/packaging_smoke.rb")
# docs/ruby.md's first example, as the page shows it.
[ "$(cd "$tmp" && ruby -e 'require "ferry"; p Ferry::Array.from_json("l", "[1, null]").to_a')" = "[1, nil]" ]
no_fault_hook "$GEM_HOME"/gems/ferry-*/ruby/lib/ferry/ferry.so
echo "test_packaging: pip install, pip wheel and gem install all work"
