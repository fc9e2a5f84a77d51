#!/usr/bin/env bash
# Configures and builds Unity into build/ (or $UNITY_BUILD_DIR). Extra arguments go to cmake's
# configure step, e.g. -DUNITY_GUI=OFF or -DUNITY_CUDA=OFF.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${UNITY_BUILD_DIR:-$root/build}
jobs=${UNITY_JOBS:-$(nproc)}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build "$build" -j "$jobs"
