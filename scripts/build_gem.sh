#!/usr/bin/env bash
# The Ruby gems, written to dist/:
# - ferry-<version>.gem, the source gem: `gem install` compiles the extension with CMake (it needs
#   scripts/setup.sh's packages);
# - ferry-<version>-x86_64-linux.gem, the platform gem: the extension compiled here for this
#   Ruby's ABI (Ruby 3.1 on Debian 12), with every library it loads beyond glibc, the C++ runtime
#   and zlib copied beside it (ruby/lib/ferry/libs, found through its RPATH $ORIGIN/libs), as
#   native gems carry theirs; `gem install` needs no compiler.
# The extension is built as `gem install` builds it (ruby/ext/ferry/extconf.rb, in
# build/ruby-gem) with the packages' flags (scripts/trees.sh), so ccache serves its objects.
# Needs scripts/setup.sh's packages (patchelf). Usage: scripts/build_gem.sh [-h]
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n '2,11p' "$0" | cut -c3-; exit 0 ;; esac
source scripts/trees.sh
repo=$PWD
version=$(cat VERSION)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-gem.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p dist
rm -f dist/ferry-*.gem

echo "== the source gem"
gem build ferry.gemspec --output "dist/ferry-$version.gem" >/dev/null

echo "== the extension, built as gem install builds it"
(cd "$tmp" && FERRY_CMAKE_ARGS="${FERRY_PACKAGE_DEFS[*]}" ruby "$repo/ruby/ext/ferry/extconf.rb" >/dev/null &&
 make >/dev/null)
stage=$tmp/stage
mkdir -p "$stage/ruby/lib/ferry/libs" "$stage/docs"
cp ruby/lib/ferry.rb "$stage/ruby/lib/"
cp build/ruby-gem/ruby/ferry/ferry.so "$stage/ruby/lib/ferry/"
cp VERSION "$stage/"
cp docs/ruby.md "$stage/docs/"

echo "== its libraries, copied beside it"
# base LIB: what every Linux a Ruby runs on has (the manylinux policies' list, less nothing ferry uses).
base() {
  case "$1" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libstdc++.so.*|libgcc_s.so.*|libz.so.*|ld-linux*|linux-vdso*|libruby*) return 0 ;;
  esac
  return 1
}
todo=("$stage/ruby/lib/ferry/ferry.so")
while [ ${#todo[@]} -gt 0 ]; do
  f=${todo[0]}
  todo=("${todo[@]:1}")
  while read -r name arrow path _; do
    base "$name" && continue
    [ "$arrow" = "=>" ] && [ -f "$path" ] || { echo "build_gem: ${f##*/} needs $name, which is not found" >&2; exit 1; }
    if [ ! -f "$stage/ruby/lib/ferry/libs/$name" ]; then
      cp -L "$path" "$stage/ruby/lib/ferry/libs/$name"
      patchelf --set-rpath '$ORIGIN' "$stage/ruby/lib/ferry/libs/$name"
      todo+=("$stage/ruby/lib/ferry/libs/$name")
    fi
  done < <(ldd "$f" | grep "=>")
done
patchelf --set-rpath '$ORIGIN/libs' "$stage/ruby/lib/ferry/ferry.so"
strip --strip-debug "$stage"/ruby/lib/ferry/ferry.so "$stage"/ruby/lib/ferry/libs/*
echo "build_gem: carries $(cd "$stage/ruby/lib/ferry/libs" && echo *)"

echo "== the platform gem"
(cd "$stage" && ruby -rrubygems/package -e '
  ruby_abi = RbConfig::CONFIG["ruby_version"].split(".")[0, 2].join(".")
  spec = Gem::Specification.new do |s|
    s.name = "ferry"
    s.version = File.read("VERSION").strip
    s.platform = Gem::Platform.local
    s.summary = "Zero-copy Arrow and N-d array transport: the Ruby binding of libferry (compiled)"
    s.description = "Ruby MemoryViews over Arrow arrays and tensors, and Arrow IPC, from ferry'"'"'s C++ library; " \
                    "the extension and its libraries precompiled for Linux x86_64."
    s.authors = ["The ferry authors"]
    s.license = "Apache-2.0"
    # The extension is compiled against this Ruby'"'"'s ABI.
    s.required_ruby_version = "~> #{ruby_abi}.0"
    s.files = Dir.glob(["VERSION", "docs/ruby.md", "ruby/lib/**/*"]).select { |f| File.file?(f) }
    s.require_paths = ["ruby/lib"]
  end
  Gem::Package.build(spec)
' >/dev/null)
cp "$stage"/ferry-*-x86_64-linux.gem dist/
for g in dist/ferry-*.gem; do echo "build_gem: $g ($(du -h "$g" | cut -f1))"; done
