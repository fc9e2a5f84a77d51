#!/usr/bin/env bash
# The README's main job: installs what is missing, builds, then opens the explorer (on the demo
# project) when there is a display, or runs the same on the CLI when there is none.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${UNITY_BUILD_DIR:-$root/build}
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$build/bin/unity-explorer" ]; then
  exec "$build/bin/unity-explorer" "$@"
fi
echo "No display: running the CLI instead of the explorer." >&2
"$build/bin/unity" models
echo
"$build/bin/unity" show mnist-mlp
