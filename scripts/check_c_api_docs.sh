#!/usr/bin/env bash
# The C API page's coverage check: every Ferry* function that libferry.so exports (nm -D) must be
# named in docs/c_api.md. ctest runs it (tests/capi), so a new export without docs fails CI.
# Usage: scripts/check_c_api_docs.sh [path/to/libferry.so] [path/to/c_api.md]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
lib=${1:-$here/build/test/libferry.so}
page=${2:-$here/docs/c_api.md}
[ -f "$lib" ] || { echo "check_c_api_docs: $lib does not exist (build first)" >&2; exit 2; }
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^Ferry/ {print $3}' | sort -u)
[ -n "$exported" ] || { echo "check_c_api_docs: $lib exports no Ferry* function" >&2; exit 1; }
missing=""
for symbol in $exported; do
  grep -qw -- "$symbol" "$page" || missing+="$symbol "
done
if [ -n "$missing" ]; then
  echo "check_c_api_docs: exported but not in $(basename "$page"): $missing" >&2
  exit 1
fi
echo "check_c_api_docs: all $(wc -w <<<"$exported") exported Ferry* functions are in $(basename "$page")"
