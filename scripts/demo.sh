#!/usr/bin/env bash
# Set up what is missing, build ferry (Release) and run its main job, `ferry demo`. The tree uses
# the packages' flags (scripts/trees.sh), so after a test or package build ccache has its objects.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/trees.sh
cmake -S . -B build/release -G Ninja "${FERRY_PACKAGE_DEFS[@]}" -DFERRY_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j"$(nproc)" --target ferry_cli
build/release/tools/ferry/ferry demo "$@"
