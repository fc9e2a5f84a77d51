#!/usr/bin/env bash
# Installs every Debian package Unity needs to build, test and run. The one place the list lives.
# Usage: scripts/install-deps.sh            (needs root or sudo; skips packages already installed)
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config ccache git clang-format
  # core libraries
  nlohmann-json3-dev libcli11-dev libfmt-dev libabsl-dev
  # ONNX import
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  # rules: verifier
  libz3-dev
  # projects: storage
  libsqlite3-dev sqlite3
  # executor: CPU backend
  libopenmpi-dev openmpi-bin libopenblas-dev
  # graph layout
  libgraphviz-dev graphviz
  # the programs' allocator
  libmimalloc-dev
  # GUI
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev libxkbcommon-dev
  # fuzzers (tests/fuzz): clang with its libFuzzer and sanitizer runtimes
  clang libclang-rt-dev
  # tests: GoogleTest, offscreen GUI, PyTorch exports of real models
  libgtest-dev xvfb xauth python3 python3-torch python3-torchvision python3-onnx
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
