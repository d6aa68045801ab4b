#!/usr/bin/env bash
# Set up what is missing, build ferry (Release) and run its main job, `ferry demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DFERRY_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j"$(nproc)" --target ferry_cli
build/release/tools/ferry/ferry demo "$@"
