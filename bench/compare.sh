#!/usr/bin/env bash
# Side-by-side CPU benchmark of xonnx and ONNX Runtime on the same models,
# machine and thread count. Each round runs both back to back; the table
# reports the median over rounds of each engine's median latency, and the
# ratio xonnx / ONNX Runtime (below 1 means xonnx is faster).
#
# usage: bench/compare.sh [--rounds 5] [--iterations 30] [--threads 2] [--batch 1[,8,64]]
#                         [--models resnet18,mobilenet_v2,resnet50,efficientnet_b0,transformer_encoder | --corpus]
#                         [--xonnx-args "--batch-buckets 1,8,64"]
# With several batch sizes, each model is measured at each; items/s = batch /
# latency, so the latency ratio is also the inverse throughput ratio.
# --corpus measures every model of bench/corpus.py (26 architectures of many
# families; `bench/corpus.py --list` names them); --models may also name them,
# NAME_dynq names NAME's dynamically quantized variant (bench/quantize.py:
# DynamicQuantizeLinear + ConvInteger/MatMulInteger, as ONNX Runtime's
# dynamic quantizer writes; NAME_dynqa with uint8 weights over their own
# range and zero point) and NAME_qdq its statically quantized one
# (bench/quantize.py --static: QDQ pairs, per-channel int8 weights, as ONNX
# Runtime's static quantizer writes).
# The last line gives the median ratio and the worst one.
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
    --corpus) models=$(/usr/bin/python3 bench/corpus.py --list | awk '{print $1}' | paste -sd,); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
xonnx="${XONNX:-build/bin/xonnx}"
[[ -x "$xonnx" ]] || { echo "build xonnx first (scripts/test.sh or cmake --build build)" >&2; exit 1; }
[[ -d bench/node_modules/onnxruntime-node ]] || scripts/install_deps.sh --bench
work="${BENCH_DIR:-build/bench_models}"
corpus=$(/usr/bin/python3 bench/corpus.py --list | awk '{print $1}')
in_corpus() { grep -qx "$1" <<<"$corpus"; }
IFS=, read -ra list <<<"$models"
for m in "${list[@]}"; do
  if [[ $m == *_qdq ]]; then
    # A statically quantized (QDQ) variant of a corpus model (bench/quantize.py --static).
    base="${m%_qdq}"
    /usr/bin/python3 bench/corpus.py "$work" --models "$base" --opsets 17 2>/dev/null
    if [[ ! -f "$work/${m}_op17/model.onnx" ]]; then
      mkdir -p "$work/${m}_op17"
      XONNX="$xonnx" /usr/bin/python3 bench/quantize.py --static --inputs "$work/${base}_op17/inputs.txt" \
        "$work/${base}_op17/model.onnx" "$work/${m}_op17/model.onnx"
      cp "$work/${base}_op17/inputs.txt" "$work/${m}_op17/"
    fi
  elif [[ $m == *_dynq || $m == *_dynqa ]]; then
    # A dynamically quantized variant of a corpus model (bench/quantize.py;
    # _dynqa: uint8 weights over their own range, --asymmetric-weights).
    base="${m%_dynq}"
    base="${base%_dynqa}"
    flags=()
    [[ $m == *_dynqa ]] && flags=(--asymmetric-weights)
    /usr/bin/python3 bench/corpus.py "$work" --models "$base" --opsets 17 2>/dev/null
    if [[ ! -f "$work/${m}_op17/model.onnx" ]]; then
      mkdir -p "$work/${m}_op17"
      /usr/bin/python3 bench/quantize.py "${flags[@]}" "$work/${base}_op17/model.onnx" "$work/${m}_op17/model.onnx"
      cp "$work/${base}_op17/inputs.txt" "$work/${m}_op17/"
    fi
  elif in_corpus "$m"; then
    /usr/bin/python3 bench/corpus.py "$work" --models "$m" --opsets 17 2>/dev/null
  else
    /usr/bin/python3 tests/models/export_models.py "$work" --models "$m" --opsets 17 2>/dev/null
  fi
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print(d['latency_ms']['median'])"; }

printf '%-22s %6s %12s %12s %14s %14s %8s\n' model batch "xonnx ms" "ORT ms" "xonnx items/s" "ORT items/s" ratio
IFS=, read -ra blist <<<"$batches"
ratios=()
for m in "${list[@]}"; do
  onnx="$work/${m}_op17/model.onnx"
  for batch in "${blist[@]}"; do
    xshapes=() oshapes=()
    if [[ -f "$work/${m}_op17/inputs.txt" ]]; then
      while IFS= read -r line; do
        xshapes+=(--shape "${line%%=*}=${batch}x${line#*=}")
        oshapes+=("${line%%=*}=${batch}x${line#*=}")
      done <"$work/${m}_op17/inputs.txt"
    elif [[ $m == transformer_encoder ]]; then
      xshapes=(--shape "input=${batch}x64x256") oshapes=("input=${batch}x64x256")
    else
      xshapes=(--shape "input=${batch}x3x224x224") oshapes=("input=${batch}x3x224x224")
    fi
    xs=() os=()
    for ((r = 0; r < rounds; r++)); do
      # shellcheck disable=SC2086
      xs+=("$(OMP_NUM_THREADS=$threads "$xonnx" bench "$onnx" "${xshapes[@]}" --iterations "$iterations" --json $xonnx_args 2>/dev/null | field)")
      os+=("$(node bench/ort_bench.js "$onnx" "${oshapes[@]}" --threads "$threads" --iterations "$iterations" | field)")
    done
    x=$(printf '%s\n' "${xs[@]}" | median)
    o=$(printf '%s\n' "${os[@]}" | median)
    ratio=$(echo "$x / $o" | bc -l)
    ratios+=("$ratio")
    printf '%-22s %6s %12.3f %12.3f %14.1f %14.1f %8.2f\n' "$m" "$batch" "$x" "$o" "$(echo "1000 * $batch / $x" | bc -l)" \
      "$(echo "1000 * $batch / $o" | bc -l)" "$ratio"
  done
done
printf 'median ratio %.2f, worst %.2f over %d measurements\n' "$(printf '%s\n' "${ratios[@]}" | median)" \
  "$(printf '%s\n' "${ratios[@]}" | sort -g | tail -1)" "${#ratios[@]}"
echo "($rounds rounds x $iterations iterations, $threads threads, $(nproc) cores, $(uname -m))"
