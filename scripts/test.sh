#!/usr/bin/env bash
# Installs the dependencies, builds xonnx with its tests and runs them all
# (unit tests, CLI contract, ONNX conformance, real models), then again
# under the sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
# With the ONNX Runtime peer (npm): the differential tester compares with it.
scripts/install_deps.sh --bench
build="${XONNX_BUILD_DIR:-build}"
scripts/check_disk.sh "$(dirname "$build")" "${XONNX_SANITIZE_DIR:-build-san}"
# Unity units (many sources compiled as one) halve a cold build on the
# two-core CI machine; the test files are always compiled one by one.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DXONNX_BUILD_TESTS=ON -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=16
cmake --build "$build" -j "$(nproc)"
(cd "$build" && ctest --output-on-failure -j "$(nproc)")
# Then the unit, plugin, serving and CLI suites again under AddressSanitizer
# with UndefinedBehaviorSanitizer, and the concurrency tests under
# ThreadSanitizer (scripts/sanitize.sh), each in a build of its own.
scripts/sanitize.sh all "${XONNX_SANITIZE_DIR:-build-san}"
