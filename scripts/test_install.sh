#!/usr/bin/env bash
# The installed tree as users meet it: `cmake --install` of a build into a temporary prefix, then
# - a C program built with find_package(ferry) against ferry::flight (tests/install) serves an
#   Arrow test vector over Flight and lists it (pyarrow counts the records);
# - the installed `ferry` loads no gRPC for its other commands, and its Flight commands find their
#   module in <libdir>/ferry: `ferry serve --flight` and `ferry get grpc://` move the vector, and
#   pyarrow reads back the same table.
# Usage: scripts/test_install.sh [build directory, default build/test]. CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/test}
PY=.venv/bin/python
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-install.XXXXXX")
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
vector=../shared/testdata/arrow-testing/ipc-integration/1.0.0-littleendian/generated_primitive.arrow_file
rows=$("$PY" -c 'import sys, pyarrow.ipc as i; print(i.open_file(sys.argv[1]).read_all().num_rows)' "$vector")

echo "== cmake --install $build"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
ferry="$tmp/prefix/bin/ferry"

echo "== a C program built against the installed ferry::flight"
cmake -S tests/install -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer" "$vector" "$rows"

echo "== the installed ferry tool"
if LD_DEBUG=libs "$ferry" inspect "$vector" 2>&1 >/dev/null | grep -E "calling init: .*(libgrpc|libferry_flight)"; then
  echo "test_install: ferry inspect loaded gRPC" >&2
  exit 1
fi
"$ferry" serve --flight 127.0.0.1:0 "t=$vector" >"$tmp/uri" 2>"$tmp/serve.log" &
server=$!
for _ in $(seq 100); do [ -s "$tmp/uri" ] && break; sleep 0.1; done
uri=$(head -1 "$tmp/uri")
[ -n "$uri" ] || { cat "$tmp/serve.log" >&2; echo "test_install: ferry serve --flight printed no URI" >&2; exit 1; }
"$ferry" get "$uri" --path t --to "$tmp/got.arrows" >/dev/null
"$PY" - "$vector" "$tmp/got.arrows" <<'PY'
import sys
import pyarrow.ipc as ipc
want = ipc.open_file(sys.argv[1]).read_all()
got = ipc.open_stream(sys.argv[2]).read_all()
assert got.equals(want), "the table read through the installed ferry differs from the file"
print(f"test_install: {got.num_rows} rows through the installed ferry's Flight equal pyarrow's read")
PY
echo "test_install: the installed library, C program and tool work"
