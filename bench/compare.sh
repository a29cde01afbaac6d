#!/usr/bin/env bash
# Side-by-side CPU benchmark of xonnx and ONNX Runtime on the same models,
# machine and thread count. Each round runs both back to back; the table
# reports the median over rounds of each engine's median latency, and the
# ratio xonnx / ONNX Runtime (below 1 means xonnx is faster).
#
# usage: bench/compare.sh [--rounds 5] [--iterations 30] [--threads 2] [--batch 1[,8,64]]
#                         [--models resnet18,mobilenet_v2,resnet50,efficientnet_b0,transformer_encoder]
#                         [--xonnx-args "--batch-buckets 1,8,64"]
# With several batch sizes, each model is measured at each; items/s = batch /
# latency, so the latency ratio is also the inverse throughput ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 iterations=30 threads=2 batches=1 xonnx_args=""
models=resnet18,mobilenet_v2,resnet50,efficientnet_b0,transformer_encoder
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --iterations) iterations="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --batch) batches="$2"; shift 2 ;;
    --xonnx-args) xonnx_args="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
xonnx="${XONNX:-build/bin/xonnx}"
[[ -x "$xonnx" ]] || { echo "build xonnx first (scripts/test.sh or cmake --build build)" >&2; exit 1; }
[[ -d bench/node_modules/onnxruntime-node ]] || scripts/install_deps.sh --bench
work="${BENCH_DIR:-build/bench_models}"
/usr/bin/python3 tests/models/export_models.py "$work" --models "$models" --opsets 17 2>/dev/null

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print(d['latency_ms']['median'])"; }

printf '%-22s %6s %12s %12s %14s %14s %8s\n' model batch "xonnx ms" "ORT ms" "xonnx items/s" "ORT items/s" ratio
IFS=, read -ra list <<<"$models"
IFS=, read -ra blist <<<"$batches"
for m in "${list[@]}"; do
  onnx="$work/${m}_op17/model.onnx"
  for batch in "${blist[@]}"; do
    if [[ $m == transformer_encoder ]]; then shape="input=${batch}x64x256"; else shape="input=${batch}x3x224x224"; fi
    xs=() os=()
    for ((r = 0; r < rounds; r++)); do
      # shellcheck disable=SC2086
      xs+=("$(OMP_NUM_THREADS=$threads "$xonnx" bench "$onnx" --shape "$shape" --iterations "$iterations" --json $xonnx_args 2>/dev/null | field)")
      os+=("$(node bench/ort_bench.js "$onnx" "$shape" --threads "$threads" --iterations "$iterations" | field)")
    done
    x=$(printf '%s\n' "${xs[@]}" | median)
    o=$(printf '%s\n' "${os[@]}" | median)
    printf '%-22s %6s %12.3f %12.3f %14.1f %14.1f %8.2f\n' "$m" "$batch" "$x" "$o" "$(echo "1000 * $batch / $x" | bc -l)" \
      "$(echo "1000 * $batch / $o" | bc -l)" "$(echo "$x / $o" | bc -l)"
  done
done
echo "($rounds rounds x $iterations iterations, $threads threads, $(nproc) cores, $(uname -m))"
