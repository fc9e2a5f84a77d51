#!/usr/bin/env bash
# The README's main job: installs what is missing, builds, then opens the explorer (on the demo
# project) when there is a display, or, when there is none, plans a zoo model on the CLI: a joint
# search with progress, compared with the baselines.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${UNITY_BUILD_DIR:-$root/build}
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$build/bin/unity-explorer" ]; then
  exec "$build/bin/unity-explorer" "$@"
fi
# Without a display, what the product is for: a joint search of a zoo model for a cluster, with
# its progress, against the baselines (data parallelism, the experts' strategy, the sequential
# pipeline) in one table.
echo "No display: searching with the CLI instead of opening the explorer." >&2
exec "$build/bin/unity" compare dlrm --machine summit --nodes 2 --progress "$@"
