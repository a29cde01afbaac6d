#!/usr/bin/env bash
# Compile time of two builds of xonnx, side by side: each round converts and
# compiles every model once with each build (the first of the pair
# alternating), with the compile cache off; the table reports the median
# over rounds of compile_ms (conversion, optimization and the plugin's
# compilation of the first call) and the ratio new / old.
#
# usage: bench/compile_time.sh OLD_XONNX NEW_XONNX [--rounds 7] [--data-types f32,f16]
#                              [--models resnet18,mobilenet_v2,resnet50,efficientnet_b0,transformer_encoder]
set -euo pipefail
cd "$(dirname "$0")/.."
old="$1" new="$2"
shift 2
rounds=7 types=f32 models=resnet18,mobilenet_v2,resnet50,efficientnet_b0,transformer_encoder
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --data-types) types="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
work="${BENCH_DIR:-build/bench_models}"
/usr/bin/python3 tests/models/export_models.py "$work" --models "$models" --opsets 17 2>/dev/null

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
compile_ms() {
  "$1" bench "$2" --no-cache --warmup 0 --iterations 1 --data-type "$3" --json 2>/dev/null |
    /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['compile_ms'])"
}

printf '%-22s %5s %10s %10s %8s\n' model type "old ms" "new ms" ratio
IFS=, read -ra list <<<"$models"
IFS=, read -ra tlist <<<"$types"
for m in "${list[@]}"; do
  onnx="$work/${m}_op17/model.onnx"
  for t in "${tlist[@]}"; do
    o=() n=()
    for ((r = 0; r < rounds; ++r)); do
      if ((r % 2)); then
        n+=("$(compile_ms "$new" "$onnx" "$t")"); o+=("$(compile_ms "$old" "$onnx" "$t")")
      else
        o+=("$(compile_ms "$old" "$onnx" "$t")"); n+=("$(compile_ms "$new" "$onnx" "$t")")
      fi
    done
    om=$(printf '%s\n' "${o[@]}" | median) nm=$(printf '%s\n' "${n[@]}" | median)
    printf '%-22s %5s %10.1f %10.1f %8.2f\n' "$m" "$t" "$om" "$nm" "$(echo "$nm / $om" | bc -l)"
  done
done
