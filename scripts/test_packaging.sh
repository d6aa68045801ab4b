#!/usr/bin/env bash
# Packaging from source as users meet it, each in a fresh place with a smoke test run from outside
# the tree: `pip install ./python` into a new virtual environment, and `gem build ferry.gemspec`
# installed into a temporary GEM_HOME, which compiles the extension with CMake. Every ELF file
# that dist/ ships (the wheel, the platform gem, the Debian packages) is checked to carry no
# fault-injection hook. CI runs it (.ci/run); it needs scripts/setup.sh's packages. The built
# packages are tested where they install: scripts/test_without_apt.sh, scripts/test_deb.sh.
#   scripts/test_packaging.sh [--from-source | --dist]
# --from-source: the two installs from source only; --dist: the check of dist/ only (CI runs the
# installs beside other stages, and the check once every package is built). Both by default.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-packaging.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
PY=${PYTHON:-python3}
case "${1:-}" in
  "") from_source=1 dist=1 ;;
  --from-source) from_source=1 dist=0 ;;
  --dist) from_source=0 dist=1 ;;
  *)
    echo "usage: scripts/test_packaging.sh [--from-source | --dist]" >&2
    exit 2
    ;;
esac
# The test tree's flags (scripts/trees.sh), so each build here takes its objects from ccache. The
# fresh environment for `pip install` lives at a fixed path, build/packaging-venv, made anew each
# run: scikit-build-core starts a build tree over when the interpreter's path changes, so that
# install keeps a tree of its own, build/packaging-python.
source scripts/trees.sh
envs=build/packaging-venv

# no_fault_hook FILE...: what users install carries no fault-injection hook (FERRY_FAULT_INJECTION
# is a test tree's option): neither the hooks' variable names (FERRY_FAULT_PAUSE, and the Flight
# server's FERRY_TEST_CLOCK) nor a FaultPoint symbol. The test tree's libferry.so has the first
# and the last, and its libferry_flight.so the second, which shows the check can see them.
no_fault_hook() {
  local f
  for f in "$@"; do
    if has_fault_hook "$f"; then
      echo "test_packaging: $f carries a test tree's hook (FERRY_FAULT_PAUSE, FERRY_TEST_CLOCK, FaultPoint)" >&2
      exit 1
    fi
  done
  echo "test_packaging: no fault-injection hook in $*"
}
# has_fault_hook FILE: a hook's variable name in its bytes, or a FaultPoint symbol (read whole first:
# under pipefail, `nm | grep -q` fails when grep stops reading early).
has_fault_hook() {
  local symbols
  symbols=$(nm -C "$1" 2>/dev/null || true)
  grep -qa -e FERRY_FAULT_PAUSE -e FERRY_TEST_CLOCK "$1" || grep -q FaultPoint <<<"$symbols"
}
control=$(nm -C build/test/libferry.so 2>/dev/null || true)
if [ -f build/test/libferry.so ] && ! { grep -qa FERRY_FAULT_PAUSE build/test/libferry.so &&
                                        grep -q FaultPoint <<<"$control"; }; then
  echo "test_packaging: the test tree's libferry.so lacks the fault hook: the check below sees nothing" >&2
  exit 1
fi
if [ -f build/test/libferry_flight.so ] && ! grep -qa FERRY_TEST_CLOCK build/test/libferry_flight.so; then
  echo "test_packaging: the test tree's libferry_flight.so lacks the clock hook: the check below sees nothing" >&2
  exit 1
fi

if ((from_source)); then
  echo "== pip install ./python into a fresh virtual environment"
  # The build requirements python/pyproject.toml declares go in first, alone (nanobind at .venv's
  # version, which they allow), and the build then uses them (--no-build-isolation): so the declared
  # ones are shown to suffice, as an isolated build would show, while nanobind's headers keep one
  # path from run to run. (An isolated build finds them under a new /tmp/pip-build-env-* each time,
  # and ccache compiled the binding afresh: 66 s.)
  "$PY" -m venv "$envs"
  mapfile -t requires < <("$envs/bin/python" -c 'import sys, tomllib
print(*tomllib.load(open(sys.argv[1], "rb"))["build-system"]["requires"], sep="\n")' python/pyproject.toml)
  # nanobind at .venv's version, which the declared ">=2.0" allows, shared with .venv (scripts/trees.sh).
  nanobind=$(ferry_nanobind_version)
  "$envs/bin/python" -m pip install -q "${requires[@]}" ${nanobind:+"nanobind==$nanobind"}
  ferry_share_nanobind "$envs"
  "$envs/bin/python" -m pip install -q --no-build-isolation "${FERRY_RELEASE_PIP[@]}" \
    -C "build-dir=$repo/build/packaging-python" ./python
  "$envs/bin/python" -m pip install -q pyarrow
  (cd "$tmp" && "$repo/$envs/bin/python" "$repo/scripts/packaging_smoke.py" "$repo")
  no_fault_hook "$envs"/lib/python*/site-packages/ferry/_ferry*.so build/packaging-python/libferry.a

  echo "== gem build ferry.gemspec, gem install into a temporary GEM_HOME"
  gem build ferry.gemspec --output "$tmp/ferry.gem" >/dev/null
  export GEM_HOME="$tmp/gems" GEM_PATH="$tmp/gems"
  FERRY_CMAKE_ARGS="${FERRY_PACKAGE_DEFS[*]}" gem install --local --no-document "$tmp/ferry.gem"
  (cd "$tmp" && ruby "$repo/scripts/packaging_smoke.rb")
  # docs/ruby.md's first example, as the page shows it.
  [ "$(cd "$tmp" && ruby -e 'require "ferry"; p Ferry::Array.from_json("l", "[1, null]").to_a')" = "[1, nil]" ]
  no_fault_hook "$GEM_HOME"/gems/ferry-*/ruby/lib/ferry/ferry.so
  echo "test_packaging: pip install ./python and the source gem work"
fi

((dist)) || exit 0
echo "== what dist/ gives users (scripts/build_wheel.sh, build_gem.sh, build_deb.sh; built if absent)"
ls dist/ferry-*manylinux*.whl >/dev/null 2>&1 || bash scripts/build_wheel.sh
ls dist/ferry-*-x86_64-linux.gem >/dev/null 2>&1 || bash scripts/build_gem.sh
ls dist/libferry0_*.deb >/dev/null 2>&1 || bash scripts/build_deb.sh
mkdir -p "$tmp/dist/wheel" "$tmp/dist/gem" "$tmp/dist/deb"
.venv/bin/python -m zipfile -e dist/ferry-*manylinux*.whl "$tmp/dist/wheel"
tar -xOf dist/ferry-*-x86_64-linux.gem data.tar.gz | tar -xzf - -C "$tmp/dist/gem"
for deb in dist/libferry0_*.deb dist/ferry-tools_*.deb; do dpkg-deb -x "$deb" "$tmp/dist/deb"; done
mapfile -t shipped < <(find "$tmp/dist" -type f | xargs file | awk -F: '/ELF/{print $1}')
[ ${#shipped[@]} -ge 8 ] || { echo "test_packaging: only ${#shipped[@]} ELF files in dist/" >&2; exit 1; }
no_fault_hook "${shipped[@]}" >/dev/null
echo "test_packaging: no fault-injection hook in the ${#shipped[@]} ELF files of dist/"
