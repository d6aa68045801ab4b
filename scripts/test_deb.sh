#!/usr/bin/env bash
# The Debian packages as C++ users meet them: scripts/build_deb.sh writes them, `apt install`
# installs them from dist/, then
# - tests/install's C program is built against them twice, with find_package(ferry) and with
#   pkg-config (ferry-flight), and each serves an Arrow test vector over Flight;
# - the installed /usr/bin/ferry reports the version and serves and gets the vector over Flight
#   (pyarrow checks what came back);
# and `apt-get purge` takes them away again, also when a step fails. CI runs it; it needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
PY=.venv/bin/python
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-deb.XXXXXX")
server=""
installed=0
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if ((installed)); then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq ferry-tools libferry-dev libferry0 >/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
# "rc" (removed, its configuration kept) counts as absent: dpkg -s alone says yes to it.
if [ "$(dpkg-query -W -f='${Status}' libferry0 2>/dev/null)" = "install ok installed" ]; then
  echo "test_deb: libferry0 is installed already; remove it first (apt-get remove libferry0)" >&2
  exit 1
fi

bash scripts/build_deb.sh
version=$(cat VERSION)
vector=../shared/testdata/arrow-testing/ipc-integration/1.0.0-littleendian/generated_primitive.arrow_file
rows=$("$PY" -c 'import sys, pyarrow.ipc as i; print(i.open_file(sys.argv[1]).read_all().num_rows)' "$vector")

echo "== apt install ./dist/*.deb"
installed=1
# As users type it (README.md); apt's note that its command line is not for scripts is dropped.
DEBIAN_FRONTEND=noninteractive apt install -y -qq --no-install-recommends \
  "./dist/libferry0_${version}_amd64.deb" "./dist/libferry-dev_${version}_amd64.deb" \
  "./dist/ferry-tools_${version}_amd64.deb" 2> >(grep -v "does not have a stable CLI" >&2) >/dev/null
dpkg -L libferry0 | grep -q "/usr/lib/x86_64-linux-gnu/libferry.so.0"

echo "== a C program built with find_package(ferry) against the packages"
cmake -S tests/install -B "$tmp/cmake" -G Ninja >/dev/null
cmake --build "$tmp/cmake" >/dev/null
"$tmp/cmake/consumer" "$vector" "$rows"

echo "== the same program built with pkg-config (ferry-flight)"
[ "$(pkg-config --modversion ferry-flight)" = "$version" ]
# shellcheck disable=SC2046  # pkg-config's words are separate arguments
cc -std=c99 -o "$tmp/consumer-pc" tests/install/consumer.c $(pkg-config --cflags --libs ferry-flight)
"$tmp/consumer-pc" "$vector" "$rows"

echo "== the installed ferry"
[ "$(command -v ferry)" = /usr/bin/ferry ]
[ "$(ferry --version)" = "ferry $version" ]
ferry serve --flight 127.0.0.1:0 "t=$vector" >"$tmp/uri" 2>"$tmp/serve.log" &
server=$!
for _ in $(seq 100); do [ -s "$tmp/uri" ] && break; sleep 0.1; done
uri=$(head -1 "$tmp/uri")
[ -n "$uri" ] || { cat "$tmp/serve.log" >&2; echo "test_deb: ferry serve --flight printed no URI" >&2; exit 1; }
ferry get "$uri" --path t --to "$tmp/got.arrows" >/dev/null
"$PY" -c '
import sys, pyarrow.ipc as ipc
assert ipc.open_stream(sys.argv[2]).read_all().equals(ipc.open_file(sys.argv[1]).read_all())
' "$vector" "$tmp/got.arrows"
kill "$server"; wait "$server" 2>/dev/null || true; server=""

echo "== apt-get purge"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq ferry-tools libferry-dev libferry0 >/dev/null
installed=0
if [ -e /usr/bin/ferry ] || [ -e /usr/lib/x86_64-linux-gnu/libferry.so.0 ] || [ -d /usr/include/ferry ]; then
  echo "test_deb: apt-get purge left ferry's files behind" >&2
  exit 1
fi
echo "test_deb: libferry0, libferry-dev and ferry-tools install, build two consumers, serve and purge"
