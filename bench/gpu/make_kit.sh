#!/usr/bin/env bash
# Packs what bench/gpu/run.sh needs on a GPU machine that has none of our
# Debian libraries and no package registry: the xonnx program, the shared
# libraries it links that are not part of the C and C++ runtimes (the GPU
# machine's own, newer libstdc++ serves xonnx and the CUDA plugin alike), the
# benchmark models without their weights (bench/gpu/weights.py strip; run.sh
# fills them back in, identically, on the other side), one input per model,
# and the outputs xonnx's CPU plugin computes for it here, as the reference
# the GPU's outputs are checked against; and for the correctness parts the
# test runners, the ONNX node tests and the real-model tests (large weights
# stripped the same way: run.sh recomputes those models' expected outputs
# with ONNX Runtime there). Packed as KIT_DIR.tar.xz too, about 20 MB.
#
# usage: [BASELINE=OTHER_XONNX] bench/gpu/make_kit.sh [KIT_DIR]     (default build/gpu_kit)
# The test data come from a configured build: ONNX_TESTS (default
# build/onnx_backend_tests) and MODELS (default build/real_models).
set -euo pipefail
cd "$(dirname "$0")/../.."
kit="${1:-build/gpu_kit}"
py=/usr/bin/python3
source bench/gpu/kit.sh
new_kit "$kit"
# Another xonnx build to time alongside (run.sh --baseline KIT/bin/xonnx-base),
# e.g. the commit before a change; it must link the same libraries.
[[ -z ${BASELINE:-} ]] || cp "$BASELINE" "$kit/bin/xonnx-base"
# The program API's training example (docs/programs.md), when built.
[[ ! -x "$(dirname "$xonnx")/train_cnn" ]] || cp "$(dirname "$xonnx")/train_cnn" "$kit/bin/"
runners="$(dirname "$xonnx")/../tests"
for r in conformance_runner model_runner; do
  [[ -x $runners/$r ]] || { echo "build the test runners first ($runners/$r)" >&2; exit 1; }
  cp "$runners/$r" "$kit/bin/"
done
cp tests/conformance/expected_failures.txt "$kit/"
# Everything ldd resolves except the C library family and the C++ runtime.
pack_libs "$kit/lib" "$xonnx" "$kit/bin/model_runner"

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
# The node tests as generated, and the real-model tests with every model
# over 2 MB stripped of its large weights (listed in models/stripped).
tests="${ONNX_TESTS:-build/onnx_backend_tests}" real="${MODELS:-build/real_models}"
[[ -f $tests/node/.complete && -d $real ]] || { echo "generate the test data first (ctest in build/)" >&2; exit 1; }
tar -C "$tests" -cf "$kit/node_tests.tar" node
mkdir -p "$kit/real_models"
for d in "$real"/*/; do
  m=$(basename "$d")
  [[ -f $d/model.onnx ]] || continue
  cp -r "$d" "$kit/real_models/$m"
  if (($(stat -c %s "$d/model.onnx") > 2000000)); then
    "$py" bench/gpu/weights.py strip "$d/model.onnx" "$kit/real_models/$m/model.onnx" 2>/dev/null
    rm -f "$kit/real_models/$m"/test_data_set_*/output_*.pb
    echo "$m" >>"$kit/real_models/stripped"
  fi
done
{
  echo "xonnx $(git describe --always --dirty 2>/dev/null || echo unknown), made $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m)"
  echo "references: xonnx's CPU plugin, f32"
} >"$kit/MANIFEST"
tar -C "$(dirname "$kit")" -cJf "$kit.tar.xz" "$(basename "$kit")"
du -sh "$kit" "$kit.tar.xz"
