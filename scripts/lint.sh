#!/usr/bin/env bash
# Style and structure gates: the include direction (scripts/layers.txt, with its own test on
# planted violations), file sizes, test files named after what they test, one owner of mapped
# memory (ferry::Mapping), typed errors (scripts/check_errors.py, with its own test), one byte
# vocabulary in include/ (scripts/check_bytes.py, with its own test), ThreadSanitizer
# suppressions of third-party code only (scripts/tsan.supp), the exported symbols of libferry.so
# and libferry_flight.so (and no gRPC in the former), clang-format (the tree must not change) and
# clang-tidy (.clang-tidy; nothing reported on the library and the tool). Needs a configured and
# built tree for compile_commands.json and libferry.so.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/test}
echo "== include direction"
python3 scripts/check_layers.py
python3 scripts/test_check_layers.py 2>&1 | tail -1
echo "== file sizes"
long=""
for f in $(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.py' '*.rb'); do
  if [ "$(wc -l <"$f")" -gt 600 ] && ! head -3 "$f" | grep -q "Over 600 lines:"; then long+="$f "; fi
done
if [ -n "$long" ]; then
  echo "lint: over 600 lines without an 'Over 600 lines: <reason>' line at the top: $long" >&2
  exit 1
fi
echo "== test files named after what they test"
# tests/<layer>/X_test.cpp tests src/<layer>/X.* or include/ferry/<layer>/X.* (tests/cli/X_test.cpp
# tests tools/ferry/X.*); these suites test a property across their layer instead
# (docs/architecture.md, "Mirrored names").
across="tests/abi/layout_test.cpp tests/format/conformance_test.cpp tests/ipc/alignment_test.cpp
        tests/ipc/device_body_test.cpp tests/memview/cuda_interop_test.cpp
        tests/dipc/async_test.cpp tests/flight/async_test.cpp tests/arrow_peer/async_arrow_test.cpp"
unmirrored=""
for t in $(git ls-files 'tests/*/*_test.cpp'); do
  layer=$(cut -d/ -f2 <<<"$t")
  name=$(basename "$t" _test.cpp)
  # tests/cli/ mirrors the command-line tool's sources, tools/ferry/.
  if [ "$layer" = cli ] && compgen -G "tools/ferry/$name.*" >/dev/null; then continue; fi
  if ! compgen -G "src/$layer/$name.*" >/dev/null && ! compgen -G "src/$layer/*/$name.*" >/dev/null &&
     ! compgen -G "include/ferry/$layer/$name.*" >/dev/null && ! grep -qw "$t" <<<"$across"; then
    unmirrored+="$t "
  fi
done
if [ -n "$unmirrored" ]; then
  echo "lint: test files named after no source or header of their layer: $unmirrored" >&2
  exit 1
fi
echo "== one owner of mapped memory"
# Every mapping in the library is a ferry::Mapping (docs/architecture.md, "Bytes").
raw=$(git grep -nE '\b(mmap|munmap|mremap)\(' -- 'src/*.cpp' 'src/*.hpp' ':!src/core/mapping.cpp' || true)
if [ -n "$raw" ]; then
  echo "lint: mmap, munmap or mremap outside src/core/mapping.cpp (use ferry::Mapping):" >&2
  echo "$raw" >&2
  exit 1
fi
echo "== typed errors"
# A Status is made from a StatusCode (its factories, or Status::FromErrno for what the OS said),
# and code decides on code(), never on an errno (docs/architecture.md, "Errors"); the one place
# errnos meet codes is the table, src/core/status_code.cpp. A system call's own EINTR, EAGAIN and
# EWOULDBLOCK ("call again") may still be tested where the call is made.
python3 scripts/check_errors.py
python3 scripts/test_check_errors.py 2>&1 | tail -1
echo "== one byte vocabulary in the public headers"
# Borrowed bytes in include/ are a ByteSpan, owned ones a SharedBytes: no std::span of bytes and
# no pointer-and-length pair outside the C headers (docs/architecture.md, "Bytes: which type
# when"; scripts/check_bytes.py says what is allowed, with its own test on planted violations).
python3 scripts/check_bytes.py
python3 scripts/test_check_bytes.py 2>&1 | tail -1
echo "== ThreadSanitizer suppressions: third-party code only"
# scripts/tsan.supp may silence UCX, gRPC and its libraries, and the C++ runtime, never ferry's
# own code (a race of ferry's is fixed, not suppressed): no entry (TSan's `type:pattern`, or a
# `#third_party_*:` line for scripts/tsan_reports.py) names ferry or the stand-in driver, none
# matches everything, and each has a comment line saying why just above it.
bad=$(awk '
  /^[[:space:]]*$/ { why = 0; next }
  /^#[a-z_]+:/ { entry = 1 }
  /^#/ && !entry { why = 1; next }
  {
    entry = 0
    pattern = $0; sub(/^#?[a-z_]+:/, "", pattern)
    if (!why) print FILENAME ":" NR ": no comment line above: " $0
    else if (tolower($0) ~ /ferry|standin/) print FILENAME ":" NR ": names ferry: " $0
    else if (pattern ~ /^[*?.^$]*$/) print FILENAME ":" NR ": matches everything: " $0
    why = 0
  }' scripts/tsan.supp)
# Nor may a pattern name a class or struct ferry declares: one on `Session` would hide its races.
ours=$(git grep -hoE '\b(class|struct) [A-Z][A-Za-z0-9_]*' -- src include tests tools | cut -d' ' -f2 |
       sort -u)
words=$(grep -E '^#?[a-z_]+:' scripts/tsan.supp | sed -E 's/^#?[a-z_]+://' |
        grep -oE '[A-Za-z_][A-Za-z0-9_]*' | sort -u)
for w in $(comm -12 <(echo "$ours") <(echo "$words")); do
  bad+=$'\n'"scripts/tsan.supp: a pattern names ferry's $w"
done
if [ -n "$bad" ]; then
  echo "lint: scripts/tsan.supp may suppress third-party code only, each entry with its reason:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "== exported symbols"
bash scripts/check_symbols.sh "$build/libferry.so"
bash scripts/check_symbols.sh "$build/libferry_flight.so"
# Flight's gRPC, protobuf and abseil stay out of libferry.so (they cost every process that loads
# them some 13 ms of start-up); libferry_flight.so carries them.
if readelf -d "$build/libferry.so" | grep -E "NEEDED.*(grpc|protobuf|absl|upb)"; then
  echo "lint: libferry.so needs gRPC's libraries; they belong to libferry_flight.so" >&2
  exit 1
fi
echo "== clang-format"
files=$(git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
clang-format --dry-run -Werror $files
echo "== clang-tidy"
python3 scripts/test_tidy.py 2>&1 | tail -1
# In parallel, and skipping sources whose clean result is cached (scripts/tidy.py says how).
python3 scripts/tidy.py "$build" $(git ls-files 'src/*.cpp' 'tools/*.cpp') || {
  echo "lint: clang-tidy reported the findings above" >&2
  exit 1
}
echo "lint: layering, symbols, clang-format and clang-tidy clean"
