#!/usr/bin/env bash
# Packs what bench/gpu/run.sh needs on a GPU machine that has none of our
# Debian libraries and no package registry: the xonnx program, the shared
# libraries it links that are not part of the C and C++ runtimes (the GPU
# machine's own, newer libstdc++ serves xonnx and the CUDA plugin alike), the
# benchmark models without their weights (bench/gpu/weights.py strip; run.sh
# fills them back in, identically, on the other side), one input per model,
# and the outputs xonnx's CPU plugin computes for it here, as the reference
# the GPU's outputs are checked against. About 15 MB.
#
# usage: bench/gpu/make_kit.sh [KIT_DIR]     (default build/gpu_kit)
set -euo pipefail
cd "$(dirname "$0")/../.."
kit="${1:-build/gpu_kit}"
xonnx="${XONNX:-build/bin/xonnx}"
[[ -x "$xonnx" ]] || { echo "build xonnx first (cmake --build build)" >&2; exit 1; }
py=/usr/bin/python3
rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib" "$kit/models"
cp "$xonnx" "$kit/bin/xonnx"
# Everything ldd resolves except the C library family and the C++ runtime.
ldd "$xonnx" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libstdc++.so.*|libgcc_s.so.*) ;;
    *) cp -L "$lib" "$kit/lib/" ;;
  esac
done

work="${BENCH_DIR:-build/bench_models}"
"$py" tests/models/export_models.py "$work" --models resnet50,transformer_encoder --opsets 17 2>/dev/null
for m in resnet50 transformer_encoder; do
  if [[ $m == transformer_encoder ]]; then shape=2x64x256; else shape=2x3x224x224; fi
  "$py" bench/gpu/weights.py strip "$work/${m}_op17/model.onnx" "$kit/models/$m.skeleton.onnx"
  # The reference is computed on the model as run.sh will rebuild it.
  tmp=$(mktemp -d)
  "$py" bench/gpu/weights.py fill "$kit/models/$m.skeleton.onnx" "$tmp/model.onnx"
  mkdir -p "$kit/models/$m"
  "$py" bench/gpu/tensors.py input "$kit/models/$m/input_0.pb" "$shape"
  "$xonnx" run "$tmp/model.onnx" --input "input=$kit/models/$m/input_0.pb" --output-dir "$kit/models/$m/ref_cpu" \
    --no-cache >/dev/null
  rm -rf "$tmp"
done
{
  echo "xonnx $(git describe --always --dirty 2>/dev/null || echo unknown), made $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m)"
  echo "references: xonnx's CPU plugin, f32"
} >"$kit/MANIFEST"
du -sh "$kit"
