#!/bin/bash
# Text generation speed, the whole table: bench/generate.py's rows (xonnx's
# Generator against ONNX Runtime's steps, greedy tokens equal) for the small
# model at fp32, int8 and int4 weights, batch 1 and 8, prompts of 128 and
# 1024 tokens, and the medium (188M) and large (502M) models at batch 1;
# then the int8 and int4 rows again with accuracy_level 4 (int8
# activations, onnxruntime-genai's CPU default); printed as the markdown
# table of docs/benchmarks.md. The large model is 2 GB in f32: its rows
# need about 8 GB of memory and take a few minutes each.
#
# usage: bench/generate.sh [--rounds 3] [--threads 2] [--new 64] [--quick]
#   --quick: the small model's fp32 and int4 rows at batch 1, prompt 128
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=3 THREADS=2 NEW=64 QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --new) NEW=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/generate.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
export PYTHONPATH="${PYTHONPATH:-build/python}"
rows=()
if [ "$QUICK" = 1 ]; then
  for w in fp32 int4; do rows+=("small $w 1 128"); done
else
  for w in fp32 int8 int4; do
    for bp in "1 128" "8 128" "1 1024"; do rows+=("small $w $bp"); done
  done
  for m in medium large; do
    for w in fp32 int8 int4; do rows+=("$m $w 1 128"); done
  done
  for w in int8 int4; do
    for bp in "1 128" "8 128" "1 1024"; do rows+=("small $w $bp 4"); done
    rows+=("medium $w 1 128 4" "large $w 1 128 4")
  done
fi
echo "| model | weights | batch | prompt | xonnx decode tok/s | ORT decode tok/s | decode xonnx / ORT | xonnx prefill ms | ORT prefill ms | prefill ORT / xonnx | limit tok/s | xonnx, share of limit |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do
  read -r model weights batch prompt accuracy <<< "$r"
  /usr/bin/python3 bench/generate.py --model "$model" --weights "$weights" --batch "$batch" --prompt "$prompt" \
    --accuracy-level "${accuracy:-0}" \
    --new "$NEW" --rounds "$ROUNDS" --threads "$THREADS" --row 2>"${TMPDIR:-/tmp}/generate_row.err" | grep '^|' ||
    echo "| $model | $weights | $batch | $prompt | failed: $(tail -1 "${TMPDIR:-/tmp}/generate_row.err") |"
done
