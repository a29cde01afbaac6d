#!/usr/bin/env bash
# Cold versus warm start with the persistent compile cache: a model opened
# with batch buckets (default ResNet-50, 8 buckets up to 64) in a new process,
# first with an empty cache folder (cold: convert and compile every bucket),
# then with the cache that run filled (warm: load every bucket). Each round
# does one cold and one warm start; the table reports medians over rounds of
#   programs  the time Open() spends making every bucket's program: convert
#             the model and compile (cold), or load from the cache (warm);
#             this is what the cache exists to save,
#   weights   the time Open() then spends putting the weights on the device
#             (once for all buckets; the same work cold and warm),
#   open      all of Open(): reading and checking the model file, plugin,
#             programs, weights,
#   process   the whole process, including two runs of batch 1, padded to
#             the smallest bucket: xonnx bench's first (untimed) run and one
#             timed run (the plugin's per-bucket weight binding happens at a
#             bucket's first run, in both cases).
#
# usage: bench/startup.sh [--rounds 7] [--model resnet50] [--max-batch 64] [--steps 8] [--threads 2]
#                         [--model-file PATH] [--xonnx-args "--plugin /path/to/plugin.so"]
# --model-file uses that ONNX file instead of exporting --model (which then
# only picks the input shape); --xonnx-args are added to every xonnx command.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=7 model=resnet50 max_batch=64 steps=8 threads=2 model_file="" xonnx_args=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --max-batch) max_batch="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --model-file) model_file="$2"; shift 2 ;;
    --xonnx-args) xonnx_args="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
xonnx="${XONNX:-build/bin/xonnx}"
[[ -x "$xonnx" ]] || { echo "build xonnx first (scripts/test.sh or cmake --build build)" >&2; exit 1; }
# Debian's Python has torch for the export; any Python reads the JSON.
py=/usr/bin/python3
[[ -x $py ]] || py=python3
if [[ -n $model_file ]]; then
  onnx="$model_file"
else
  work="${BENCH_DIR:-build/bench_models}"
  "$py" tests/models/export_models.py "$work" --models "$model" --opsets 17 2>/dev/null
  onnx="$work/${model}_op17/model.onnx"
fi
if [[ $model == transformer_encoder ]]; then shape="input=1x64x256"; else shape="input=1x3x224x224"; fi
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# Prints "programs_ms weights_ms open_ms process_ms compiled from_cache" for one start.
start() {
  local t0 t1 json
  t0=$(date +%s%N)
  # shellcheck disable=SC2086
  if ! json=$(OMP_NUM_THREADS=$threads "$xonnx" bench "$onnx" --shape "$shape" --max-batch "$max_batch" --steps "$steps" \
    --iterations 1 --warmup 0 --json --cache-dir "$cache/entries" $xonnx_args 2>"$cache/stderr"); then
    cat "$cache/stderr" >&2
    return 1
  fi
  t1=$(date +%s%N)
  "$py" -c "import json,sys; d=json.loads(sys.argv[1]); print(d['buckets_ms'], d.get('weights_ms', 0), d['load_ms'], $(( (t1 - t0) / 1000 )) / 1000, d['compiled'], d['from_cache'])" "$json"
}

cb=() cw=() co=() cp=() wb=() ww=() wo=() wp=()
for ((r = 0; r < rounds; r++)); do
  rm -rf "$cache/entries"
  read -r b g o p c f < <(start)
  [[ $c == "$steps" && $f == 0 ]] || { echo "cold start: $c compiled, $f from the cache; expected $steps and 0" >&2; exit 1; }
  cb+=("$b") cw+=("$g") co+=("$o") cp+=("$p")
  read -r b g o p c f < <(start)
  [[ $c == 0 && $f == "$steps" ]] || { echo "warm start: $c compiled, $f from the cache; expected 0 and $steps" >&2; exit 1; }
  wb+=("$b") ww+=("$g") wo+=("$o") wp+=("$p")
done
printf '%-9s %12s %12s %10s\n' "" "cold ms" "warm ms" "cold/warm"
for what in programs weights open process; do
  case $what in
    programs) c=$(printf '%s\n' "${cb[@]}" | median); w=$(printf '%s\n' "${wb[@]}" | median) ;;
    weights) c=$(printf '%s\n' "${cw[@]}" | median); w=$(printf '%s\n' "${ww[@]}" | median) ;;
    open) c=$(printf '%s\n' "${co[@]}" | median); w=$(printf '%s\n' "${wo[@]}" | median) ;;
    process) c=$(printf '%s\n' "${cp[@]}" | median); w=$(printf '%s\n' "${wp[@]}" | median) ;;
  esac
  printf '%-9s %12.1f %12.1f %10.1f\n' "$what" "$c" "$w" "$(awk -v a="$c" -v b="$w" 'BEGIN {print a / b}')"
done
echo "($model, $steps buckets up to $max_batch, $rounds rounds, $threads threads, $(nproc) cores, $(uname -m))"
