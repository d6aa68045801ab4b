#!/usr/bin/env bash
# Style gates: clang-format must leave the tree unchanged, and clang-tidy (.clang-tidy) must
# report nothing on the library and the tool. Needs a configured build for compile_commands.json.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/test}
files=$(git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
clang-format --dry-run -Werror $files
tidy_out=$(clang-tidy -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option $(git ls-files 'src/*.cpp' 'tools/*.cpp') 2>/dev/null | grep -E "warning:|error:" || true)
if [ -n "$tidy_out" ]; then
  echo "$tidy_out"
  echo "lint: clang-tidy reported the findings above" >&2
  exit 1
fi
echo "lint: clang-format and clang-tidy clean"
