#!/usr/bin/env bash
# xonnx on models as ONNX Runtime optimizes and saves them (the fused
# com.microsoft ops of its "extended" level), against ONNX Runtime on the
# same random inputs: for each model folder of bench/ (model.onnx and
# inputs.txt, as bench/corpus.py writes them), the ops ONNX Runtime fused in,
# then bench/agree.py's relative L2 errors per output.
#
# usage: bench/ort_optimized.sh [--corpus | DIR...]
#   --corpus   every folder under build/bench_models
# Needs the ONNX Runtime peer (scripts/install_deps.sh --bench) and a build.
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=("$@")
if [[ ${1:-} == --corpus || $# -eq 0 ]]; then
  dirs=()
  for d in build/bench_models/*/; do [[ -f $d/model.onnx && -f $d/inputs.txt ]] && dirs+=("$d"); done
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for d in "${dirs[@]}"; do
  name=$(basename "${d%/}")
  mkdir -p "$work/$name"
  cp "$d/inputs.txt" "$work/$name/"
  if ! (cd bench && node ort_optimize.js "$OLDPWD/$d/model.onnx" "$work/$name/model.onnx") 2>"$work/err"; then
    echo "$name: ONNX Runtime could not optimize it: $(tail -1 "$work/err")"
    continue
  fi
  fused=$(/usr/bin/python3 -c "
import collections, onnx, sys
m = onnx.load(sys.argv[1], load_external_data=False)
c = collections.Counter(n.op_type for n in m.graph.node if n.domain == 'com.microsoft')
print(', '.join(f'{k} x{v}' for k, v in sorted(c.items())) or 'none')" "$work/$name/model.onnx")
  echo "$name: fused ops: $fused"
  bench/agree.py "$work/$name" 2>&1 | sed 's/^/  /' || echo "  $name: FAILED"
done
