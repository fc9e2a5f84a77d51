#!/usr/bin/env bash
# The README's test command: installs what is missing, builds everything, runs every test with CTest,
# then builds the fuzzers (build-fuzz/, clang) and runs each for a fixed number of runs over its seed
# corpus (scripts/fuzz.sh --ci). GPU tests skip with a printed reason on a machine without a GPU.
# UNITY_SKIP_FUZZ=1 leaves the fuzzers out.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${UNITY_BUILD_DIR:-$root/build}
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh" "$@"
export QT_QPA_PLATFORM=offscreen
cd "$build"
ctest --output-on-failure -j "${UNITY_JOBS:-$(nproc)}" --timeout 900
if [ "${UNITY_SKIP_FUZZ:-0}" != 1 ]; then
  bash "$root/scripts/fuzz.sh" --ci
fi
