#!/usr/bin/env bash
# The Debian packages as C++ users meet them: scripts/build_deb.sh writes them, `apt install`
# installs them from dist/, then
# - tests/install's C program is built against them twice, with find_package(ferry) and with
#   pkg-config (ferry-flight), and each serves an Arrow test vector over Flight;
# - the installed /usr/bin/ferry reports the version and serves and gets the vector over Flight
#   (pyarrow checks what came back);
# - ferry-tools' service: ferry.service passes `systemd-analyze verify` (offline: no systemd runs
#   here) with nothing to say, and its hardening scores under 4.0 in `systemd-analyze security`;
#   postinst made the ferry system user; /etc/ferry/ferry.toml is a conffile that
#   `ferry serve --check-config` accepts; `runuser -u ferry -- ferry serve --config
#   /etc/ferry/ferry.toml` (what the unit runs) serves the example dataset as that user, and
#   pyarrow reads back what `ferry get` got;
# - `apt-get remove ferry-tools` keeps the conffile (edited) and the user, `apt-get purge` takes
#   the conffile and its directory and keeps the user (Debian's practice for system users);
# and `apt-get purge` takes them away again, also when a step fails. CI runs it; it needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
PY=.venv/bin/python
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-deb.XXXXXX")
server=""
installed=0
# The ferry user stays after a purge, as policy has it; one this test made goes when it ends.
had_user=0
getent passwd ferry >/dev/null && had_user=1
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if ((installed)); then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq ferry-tools libferry-dev libferry0 >/dev/null
  fi
  if ((!had_user)) && getent passwd ferry >/dev/null; then deluser --system --quiet ferry >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
fail() { echo "test_deb: $*" >&2; exit 1; }
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

echo "== ferry.service, its user and its configuration"
unit=/usr/lib/systemd/system/ferry.service
[ -f "$unit" ] || unit=/lib/systemd/system/ferry.service
[ -f "$unit" ] || fail "ferry-tools ships no ferry.service"
verified=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify failed: $verified"
[ -z "$verified" ] || fail "systemd-analyze verify $unit: $verified"
for setting in Type=notify WatchdogSec= User=ferry NoNewPrivileges=yes ProtectSystem=strict \
               PrivateTmp=yes ReadWritePaths=/var/lib/ferry; do
  grep -q "^$setting" "$unit" || fail "$unit has no $setting"
done
systemd-analyze security --offline=true --threshold=40 "$unit" >/dev/null 2>&1 ||
  fail "$unit's hardening scores above 4.0: $(systemd-analyze security --offline=true "$unit" 2>&1 | tail -1)"
entry=$(getent passwd ferry) || fail "postinst made no ferry user"
IFS=: read -r _ _ uid _ _ home shell <<<"$entry"
((uid < 1000)) || fail "the ferry user is not a system user (uid $uid)"
[ "$home" = /var/lib/ferry ] && [ "$shell" = /usr/sbin/nologin ] || fail "the ferry user: $entry"
dpkg-query -W -f='${Conffiles}\n' ferry-tools | grep -q "^ /etc/ferry/ferry.toml " ||
  fail "/etc/ferry/ferry.toml is not a conffile of ferry-tools"
ferry serve --check-config /etc/ferry/ferry.toml >/dev/null
runuser -u ferry -- ferry serve --config /etc/ferry/ferry.toml >"$tmp/service-uri" 2>"$tmp/service.log" &
server=$!
for _ in $(seq 100); do [ -s "$tmp/service-uri" ] && break; sleep 0.1; done
uri=$(head -1 "$tmp/service-uri")
[ -n "$uri" ] || { cat "$tmp/service.log" >&2; fail "ferry serve --config /etc/ferry/ferry.toml printed no URI"; }
# runuser waits for the command it forks.
served_by=$(pgrep -P "$server" -x ferry || echo "$server")
[ "$(ps -o user= -p "$served_by")" = ferry ] || fail "the service's ferry serve does not run as ferry"
ferry get "$uri" --path example --to "$tmp/example.arrows" >/dev/null
"$PY" -c '
import sys, pyarrow.ipc as ipc
assert ipc.open_stream(sys.argv[2]).read_all().equals(ipc.open_stream(sys.argv[1]).read_all())
' /usr/share/ferry/example.arrows "$tmp/example.arrows"
kill "$served_by"; wait "$server" 2>/dev/null || true; server=""

echo "== apt-get remove ferry-tools: the edited conffile and the user stay"
echo "# edited here" >>/etc/ferry/ferry.toml
DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq ferry-tools >/dev/null
[ ! -e /usr/bin/ferry ] && [ ! -e "$unit" ] || fail "apt-get remove left ferry-tools' files"
grep -q "^# edited here" /etc/ferry/ferry.toml || fail "apt-get remove did not keep /etc/ferry/ferry.toml"
getent passwd ferry >/dev/null || fail "apt-get remove took the ferry user"
echo "== apt-get purge ferry-tools: the conffile goes, the user stays"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq ferry-tools >/dev/null
[ ! -e /etc/ferry ] || fail "apt-get purge left /etc/ferry: $(ls -A /etc/ferry)"
getent passwd ferry >/dev/null || fail "apt-get purge took the ferry user"

echo "== apt-get purge"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq libferry-dev libferry0 >/dev/null
installed=0
if [ -e /usr/bin/ferry ] || [ -e /usr/lib/x86_64-linux-gnu/libferry.so.0 ] || [ -d /usr/include/ferry ]; then
  echo "test_deb: apt-get purge left ferry's files behind" >&2
  exit 1
fi
echo "test_deb: libferry0, libferry-dev and ferry-tools install, build two consumers, serve (also as ferry.service's user) and purge"
