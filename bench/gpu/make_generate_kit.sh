#!/usr/bin/env bash
# Packs what bench/gpu/generate.sh needs on a GPU machine: the xonnx program
# and the libraries it links (bench/gpu/kit.sh), LLaMA-style decoders of
# tests/generate without their weights (bench/gpu/weights.py strip; the
# other side fills them back in, identically), and each model's greedy
# tokens as xonnx's CPU plugin generates them here from the filled model:
# the reference the GPU's tokens must equal.
#
# Models: hf-small, hf-medium and hf-large (Hugging Face style, plain
# attention, bench/generate.py's sizes: 34M, 188M and 502M parameters),
# genai-small (onnxruntime-genai style, GroupQueryAttention), and
# genai-small-int4 and genai-medium-int4: the same with their products'
# weights in MatMulNBits int4 blocks of 32 (tests/generate/nbits.py; the
# packed codes and scales are stripped and filled like the float weights).
# Prompts: batch 1 and 8 (small models only), 128 tokens each, 64 new
# tokens.
#
# usage: bench/gpu/make_generate_kit.sh [KIT_DIR]      (default build/gpu_generate_kit)
set -euo pipefail
cd "$(dirname "$0")/../.."
kit="${1:-build/gpu_generate_kit}"
py=/usr/bin/python3
source bench/gpu/kit.sh
new_kit "$kit"
pack_libs "$kit/lib" "$xonnx"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" - "$tmp" <<'PY'
import os, sys
sys.path.insert(0, "tests/generate")
sys.path.insert(0, "bench")
import onnx
import tiny_llama, genai_llama, nbits
from generate import MODELS
out = sys.argv[1]
for name, style, size, bits in [("hf-small", "hf", "small", 0), ("hf-medium", "hf", "medium", 0),
                                ("hf-large", "hf", "large", 0), ("genai-small", "genai", "small", 0),
                                ("genai-small-int4", "genai", "small", 4), ("genai-medium-int4", "genai", "medium", 4)]:
    m = tiny_llama.build(0, MODELS[size])
    path = os.path.join(out, name + ".onnx")
    (tiny_llama.export if style == "hf" else genai_llama.export)(m, path)
    if bits:
        model = onnx.load(path)
        nbits.rewrite(model, bits, 32)
        onnx.save(model, path)
    with open(os.path.join(out, name + ".vocab"), "w") as f:
        f.write(str(MODELS[size].vocab))
PY
# The prompts: 128 ids each, 8 different ones for the batch.
prompts() {
  local batch=$1 vocab=$2 args=()
  for ((i = 0; i < batch; i++)); do
    args+=(--prompt-ids "$(seq 0 127 | awk -v i="$i" -v v="$vocab" '{printf "%s%d", (NR > 1 ? "," : ""), (($1 * 31 + i * 97 + 7) % (v - 1)) + 1}')")
  done
  echo "${args[@]}"
}
for m in hf-small hf-medium hf-large genai-small genai-small-int4 genai-medium-int4; do
  "$py" bench/gpu/weights.py strip "$tmp/$m.onnx" "$kit/models/$m.skeleton.onnx"
  rm -f "$tmp/$m.onnx.data"
  "$py" bench/gpu/weights.py fill "$kit/models/$m.skeleton.onnx" "$tmp/$m.onnx"
  vocab=$(cat "$tmp/$m.vocab")
  for b in 1 8; do
    [[ $m == *-small* || $b == 1 ]] || continue
    prompts "$b" "$vocab" >"$kit/models/$m.b$b.prompts"
    # shellcheck disable=SC2046
    "$xonnx" generate "$tmp/$m.onnx" --quiet --max-new-tokens 64 $(cat "$kit/models/$m.b$b.prompts") \
      | tail -n "$b" >"$kit/models/$m.b$b.tokens"
  done
  rm -f "$tmp/$m.onnx"
done
echo "xonnx $(git describe --always --dirty 2>/dev/null || echo unknown), made $(date -u +%Y-%m-%dT%H:%MZ)" >"$kit/MANIFEST"
tar -C "$(dirname "$kit")" -cJf "$kit.tar.xz" "$(basename "$kit")"
du -sh "$kit" "$kit.tar.xz"
