#!/usr/bin/env bash
# `xonnx generate` on a GPU through a PjRT plugin (by default XLA's CUDA
# plugin from the machine's jax installation), from the kit
# bench/gpu/make_generate_kit.sh packs: each decoder filled with its
# weights, generating greedily at batch 1 and 8 with the key/value cache on
# the device (updated in place) and in host memory (uploaded whole each
# step), in alternating rounds. Reports the decode rate of each (median over
# rounds, all sequences' tokens per second after the first step), the time
# to the first token, and whether the tokens equal those xonnx's CPU plugin
# generated from the same model (the kit's reference).
#
# usage: bench/gpu/generate.sh [--kit build/gpu_generate_kit] [--plugin PATH] [--rounds 3] [--models a,b]
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=build/gpu_generate_kit plugin="" rounds=3 models=hf-small,genai-small,hf-medium,genai-small-int4,genai-medium-int4,hf-large
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kit) kit="$2"; shift 2 ;;
    --plugin) plugin="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
py=${PYTHON:-python3}
source bench/gpu/kit.sh
open_kit "$kit" bench/gpu/make_generate_kit.sh
open_work gpu_generate.txt
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# Programs compile once per shape: the persistent cache keeps them for the
# later rounds, so rounds time generation, not XLA's compiler.
export XONNX_CACHE_DIR="$work/cache"

say "xonnx generate on the GPU: $(head -1 "$kit/MANIFEST"); plugin $plugin; $(date -u +%Y-%m-%dT%H:%MZ)"
say "| model | batch | decode tok/s, cache on device | decode tok/s, cache on host | device/host | first token ms (device, host) | tokens = CPU plugin's |"
say "|---|---|---|---|---|---|---|"
IFS=, read -ra model_list <<<"$models"
for m in "${model_list[@]}"; do
  "$py" bench/gpu/weights.py fill "$kit/models/$m.skeleton.onnx" "$work/$m.onnx" 2>/dev/null
  for b in 1 8; do
    [[ -f $kit/models/$m.b$b.prompts ]] || continue
    read -ra prompt_args <"$kit/models/$m.b$b.prompts"
    rm -f "$work"/rate_* "$work"/first_*
    same=yes
    for ((r = 0; r < rounds + 1; r++)); do
      order=(device host)
      ((r % 2 == 0)) || order=(host device)
      for where in "${order[@]}"; do
        if ! "$xonnx" generate "$work/$m.onnx" --plugin "$plugin" --kv-cache "$where" --quiet --timings \
          --max-new-tokens 64 "${prompt_args[@]}" >"$work/out" 2>"$work/err"; then
          say "$m b$b $where: FAILED: $(tail -3 "$work/err" | tr '\n' ' ')"
          continue 2
        fi
        tail -n "$b" "$work/out" | cmp -s - "$kit/models/$m.b$b.tokens" || same=no
        grep -q "kv cache: $where" "$work/err" || { say "$m b$b: asked for $where, got: $(grep 'kv cache' "$work/err")"; same=no; }
        ((r > 0)) || continue  # the first round compiles
        sed -n 's/.*decode \([0-9.]*\) tokens.*/\1/p' "$work/err" >>"$work/rate_$where"
        sed -n 's/.*first token after \([0-9.]*\) ms.*/\1/p' "$work/err" >>"$work/first_$where"
      done
    done
    dev=$(median <"$work/rate_device") host=$(median <"$work/rate_host")
    say "| $m | $b | $dev | $host | $(awk -v d="$dev" -v h="$host" 'BEGIN {printf "%.2f", d / h}') | $(median <"$work/first_device"), $(median <"$work/first_host") | $same |"
  done
done
