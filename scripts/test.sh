#!/usr/bin/env bash
# Installs the dependencies, builds xonnx with its tests and runs them all
# (unit tests, CLI contract, ONNX conformance, real models).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
build="${XONNX_BUILD_DIR:-build}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DXONNX_BUILD_TESTS=ON
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest --output-on-failure -j "$(nproc)"
