#!/usr/bin/env bash
# examples/train_cnn (xonnx's program API) against the same network, data
# and SGD step in PyTorch (examples/train_cnn_torch.py), on this machine:
# rounds alternate the engines (and which goes first); each round reports
# its median time per step; the table is the median over rounds and the
# ratio xonnx / PyTorch.
#
# usage: bench/train_cnn.sh [--rounds 5] [--steps 200] [--batch 64] [--threads N]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 steps=200 batch=64 threads=$(nproc)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
bin=${TRAIN_CNN:-build/bin/train_cnn}
[[ -x $bin ]] || { echo "$bin not found: build the project first" >&2; exit 1; }
per_step() { sed -n 's/.*; \([0-9.]*\) ms per step.*/\1/p'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
xs=() ts=()
run_x() { OMP_NUM_THREADS=$threads "$bin" --steps "$steps" --batch "$batch" | tail -1 | per_step; }
run_t() { /usr/bin/python3 examples/train_cnn_torch.py --steps "$steps" --batch "$batch" --threads "$threads" | tail -1 | per_step; }
for ((r = 0; r < rounds; r++)); do
  if ((r % 2)); then t=$(run_t); x=$(run_x); else x=$(run_x); t=$(run_t); fi
  xs+=("$x") ts+=("$t")
  echo "round $r: xonnx $x ms, PyTorch $t ms per step" >&2
done
mx=$(printf '%s\n' "${xs[@]}" | median) mt=$(printf '%s\n' "${ts[@]}" | median)
echo "| engine | ms per step (median of $rounds rounds; batch $batch, $threads threads) |"
echo "|---|---|"
echo "| xonnx (CPU plugin) | $mx |"
echo "| PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') | $mt |"
echo "| **xonnx / PyTorch** | **$(awk -v a="$mx" -v b="$mt" 'BEGIN {printf "%.2f", a / b}')** |"
