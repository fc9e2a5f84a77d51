#!/bin/sh
# Rebuilds resources/demo/mnist-mlp-demo.unity, the project a first launch of unity-explorer opens:
# the paper's Figure 1 MLP (mnist-mlp) on two Summit V100s, searched data-parallel, sequential and
# joint (every step recorded), and one real 2-rank CPU training run of the joint plan (20 iterations
# after one warm-up). Run it from the repository root after building `unity` and `unity-explorer`;
# then rebuild unity-explorer, which embeds the file.
#   resources/demo/make-demo-project.sh [BUILD_DIR]      (default: build)
set -eu
bin="${1:-build}/bin"
out=resources/demo/mnist-mlp-demo.unity
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
project="$tmp/mnist-mlp-demo.unity"
for mode in data-parallel sequential joint; do
  "$bin/unity" optimize mnist-mlp --machine summit --gpus 2 --mode "$mode" --project "$project" >/dev/null
done
QT_QPA_PLATFORM=offscreen "$bin/unity-explorer" --project "$project" --view run \
  --screenshot "$tmp/run.png" 2>/dev/null
# One self-contained file: no write-ahead log beside it.
test ! -e "$project-wal" || { echo "make-demo-project: $project-wal left behind" >&2; exit 1; }
"$bin/unity" project show "$project"
cp "$project" "$out"
echo "wrote $out ($(wc -c <"$out") bytes)"
