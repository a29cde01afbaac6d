#!/usr/bin/env bash
# The op-level speed suite: every op family on shapes from real models, each
# a one-node model run by xonnx and by ONNX Runtime (onnxruntime-node) with
# the same threads, alternating, medians of rounds; a table by op and shape
# sorted worst first, with the ratio xonnx / ONNX Runtime. See bench/ops.py
# --help for the options (--quick, --filter, --rounds, --iterations,
# --threads, --markdown).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) exec /usr/bin/python3 bench/ops.py --help ;; esac
xonnx="${XONNX:-build/bin/xonnx}"
[[ -x "$xonnx" ]] || { echo "build xonnx first (scripts/test.sh or cmake --build build)" >&2; exit 1; }
[[ -d bench/node_modules/onnxruntime-node ]] || scripts/install_deps.sh --bench
XONNX="$xonnx" exec /usr/bin/python3 bench/ops.py "$@"
