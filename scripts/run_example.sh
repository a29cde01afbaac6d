#!/usr/bin/env bash
# Installs the build dependencies, builds xonnx and runs the example model on
# the CPU. Extra arguments go to `xonnx run` (e.g. --shape image=4x3x32x32).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --no-test
build="${XONNX_BUILD_DIR:-build}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DXONNX_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)"
"$build/bin/xonnx" run examples/tiny_cnn.onnx "$@"
