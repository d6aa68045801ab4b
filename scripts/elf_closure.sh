#!/usr/bin/env bash
# Whether a shipped directory is self-contained: every ELF file under each DIR must find each
# shared library it needs (ldd, with LD_LIBRARY_PATH empty) under one of the INSIDE paths, or be
# one that every Linux has (glibc, the C++ runtime) or that BASE names. Prints each library found
# elsewhere or nowhere, and fails if there is one. Used by scripts/test_gpu_bundle.sh and
# scripts/test_without_apt.sh.
#
#   bash scripts/elf_closure.sh --base 'libcuda.so.*' --inside DIR... -- DIR...
set -euo pipefail
base=()
inside=()
mode=""
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base+=("$2"); shift 2 ;;
    --inside) mode=inside; shift ;;
    --) shift; break ;;
    *) [ "$mode" = inside ] || { echo "elf_closure: unexpected $1" >&2; exit 2; }; inside+=("$1"); shift ;;
  esac
done
[ $# -gt 0 ] && [ ${#inside[@]} -gt 0 ] || { echo "usage: elf_closure.sh [--base GLOB]... --inside PATH... -- DIR..." >&2; exit 2; }

# everywhere NAME: a library every Linux has, or one BASE names.
everywhere() {
  local g
  case "$1" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libstdc++.so.*|libgcc_s.so.*|linux-vdso*|/lib64/*) return 0 ;;
  esac
  for g in "${base[@]}"; do
    # shellcheck disable=SC2053  # a glob on purpose
    [[ "$1" == $g ]] && return 0
  done
  return 1
}
# shipped PATH: the file lies under an INSIDE path.
shipped() {
  local d
  for d in "${inside[@]}"; do
    [[ "$1" == "$d"/* ]] && return 0
  done
  return 1
}
bad=0
while IFS= read -r f; do
  while read -r name arrow path _; do
    everywhere "$name" && continue
    if [ "$arrow" != "=>" ] || ! shipped "$path"; then
      echo "elf_closure: $f needs $name from ${path:-nowhere}" >&2
      bad=1
    fi
  done < <(LD_LIBRARY_PATH= ldd "$f" 2>/dev/null | grep -v "statically linked")
done < <(find "$@" -type f ! -name '*.py' ! -name '*.pyi' ! -name '*.sh' | xargs file | awk -F: '/ELF/{print $1}')
exit $bad
