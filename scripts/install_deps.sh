#!/usr/bin/env bash
# Installs everything xonnx needs to build and test, from Debian packages only
# (and, for the ONNX Runtime comparison peer, one npm package).
#   scripts/install_deps.sh            build + test dependencies
#   scripts/install_deps.sh --no-test  build dependencies only
#   scripts/install_deps.sh --bench    also the ONNX Runtime peer for bench/ (npm)
set -euo pipefail

want_test=1 want_bench=0
for arg in "$@"; do
  case "$arg" in
    --no-test) want_test=0 ;;
    --bench) want_bench=1 ;;
    *) echo "install_deps: unknown option $arg" >&2; exit 2 ;;
  esac
done

SUDO=""
if [[ "$(id -u)" != "0" ]]; then SUDO="sudo"; fi

build_pkgs=(
  build-essential cmake ninja-build pkg-config ccache
  libonnx-dev libprotobuf-dev protobuf-compiler
  libabsl-dev libdnnl-dev libcli11-dev nlohmann-json3-dev libxxhash-dev libgoogle-glog-dev
  python3-dev pybind11-dev
  libgrpc++-dev protobuf-compiler-grpc libcpp-httplib-dev
  libsentencepiece-dev
)
test_pkgs=(
  libgtest-dev libgmock-dev libbenchmark-dev clang-format clang-tidy
  python3-onnx python3-numpy python3-pytest python3-torch python3-torchvision
  python3-venv python3-pip python3-build
  curl hey sentencepiece
)

pkgs=("${build_pkgs[@]}")
if [[ $want_test == 1 ]]; then
  pkgs+=("${test_pkgs[@]}")
  # Node.js (for the ONNX Runtime peer) only when the machine has none: a
  # Node.js installed outside Debian conflicts with Debian's npm package.
  command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "install_deps: Debian packages ready" >&2

if [[ $want_bench == 1 ]]; then
  # The peer ships its CPU library in the package; its install script would
  # try to download GPU binaries, so it is skipped.
  command -v npm >/dev/null 2>&1 || { $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; }
  (cd "$(dirname "$0")/../bench" && npm install --ignore-scripts --no-audit --no-fund >/dev/null)
  echo "install_deps: ONNX Runtime peer ready in bench/node_modules" >&2
fi
