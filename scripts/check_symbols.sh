#!/usr/bin/env bash
# The symbol check: libferry.so exports the C surface (Ferry*) and the public C++ API (ferry::...,
# with its classes' vtables and type info) and nothing else: no flatbuffers, fmt, CLI11, UCX,
# nlohmann or standard-library instantiations, and no internal namespace of ferry's own.
# Usage: scripts/check_symbols.sh [path/to/libferry.so]
set -euo pipefail
lib=${1:-build/test/libferry.so}
[ -f "$lib" ] || { echo "check_symbols: $lib does not exist (build first)" >&2; exit 2; }
symbols=$(nm -DC --defined-only "$lib" | cut -d' ' -f3-)
[ -n "$symbols" ] || { echo "check_symbols: $lib exports nothing" >&2; exit 1; }
public='^(Ferry[A-Za-z0-9_]*$|ferry::|(vtable|typeinfo|typeinfo name|VTT) for ferry::|(non-)?virtual thunk to ferry::)'
# Namespaces and nested implementation types that are ferry's own but not its API.
private='(::internal::|::detail::|::Impl::|::Impl$|ferry::ipc::fb::)'
bad=$(grep -Ev "$public" <<<"$symbols" || true)
bad+=$(grep -E "$private" <<<"$symbols" || true)
if [ -n "$bad" ]; then
  echo "$bad" | head -50
  echo "check_symbols: $lib exports $(wc -l <<<"$bad") symbol(s) outside the C surface and public API" >&2
  exit 1
fi
echo "check_symbols: $lib exports $(wc -l <<<"$symbols") symbols, all Ferry* or the public ferry:: API"
