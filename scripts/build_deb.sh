#!/usr/bin/env bash
# Debian packages for C++ users: libferry0 (the shared libraries), libferry-dev (headers, the
# static library, the CMake and pkg-config packages) and ferry-tools (the command line), made by
# CPack (cmake/FerryPackage.cmake) from a Release build installed under /usr, and written to
# dist/. Builds in build/deb with the packages' flags (scripts/trees.sh), so ccache serves the
# objects the Python and Ruby packages compiled. Needs scripts/setup.sh's packages (dpkg-dev
# computes the libraries' Depends).
# Usage: scripts/build_deb.sh [-h]
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n '2,8p' "$0" | cut -c3-; exit 0 ;; esac
source scripts/trees.sh
cmake -S . -B build/deb -G Ninja "${FERRY_PACKAGE_DEFS[@]}" -DCMAKE_INSTALL_PREFIX=/usr \
  -DFERRY_BUILD_TESTS=OFF -DFERRY_BUILD_RUBY=OFF -DFERRY_BUILD_PYTHON=OFF >/dev/null
cmake --build build/deb -j"$(nproc)"
rm -rf build/deb/packages
(cd build/deb && cpack -G DEB >/dev/null)
mkdir -p dist
rm -f dist/libferry0_*.deb dist/libferry-dev_*.deb dist/ferry-tools_*.deb
cp build/deb/packages/*.deb dist/
for deb in dist/libferry0_*.deb dist/libferry-dev_*.deb dist/ferry-tools_*.deb; do
  echo "build_deb: $deb ($(dpkg-deb -f "$deb" Depends))"
done
