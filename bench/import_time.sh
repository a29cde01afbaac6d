#!/usr/bin/env bash
# How load and compile time grow with a model's node count and nesting:
# chains of elementwise nodes (Add, Mul, Relu, Tanh with constants,
# cycling) of 1k to 1M nodes, and 1-trip Loops nested 10 to 100 deep, each
# converted and compiled once with the compile cache off. A linear importer
# keeps the time per node (per level) flat; the tables show it.
#
# usage: bench/import_time.sh [--nodes 1000,10000,100000,1000000] [--depths 10,25,50,100]
#                             [--rounds 3] [--xonnx build/bin/xonnx]
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=1000,10000,100000,1000000 depths=10,25,50,100 rounds=3 xonnx=build/bin/xonnx
while [[ $# -gt 0 ]]; do
  case "$1" in
    --help|-h) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --depths) depths="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --xonnx) xonnx="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
work="${BENCH_DIR:-build/bench_models}/import_time"
mkdir -p "$work"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# The median load and compile milliseconds of `rounds` opens of a model.
measure() {
  local loads=() compiles=() l c
  for ((r = 0; r < rounds; ++r)); do
    read -r l c < <("$xonnx" bench "$1" --no-cache --warmup 0 --iterations 1 --json 2>/dev/null |
      /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print(d['load_ms'], d['compile_ms'])")
    loads+=("$l") compiles+=("$c")
  done
  echo "$(printf '%s\n' "${loads[@]}" | median) $(printf '%s\n' "${compiles[@]}" | median)"
}
printf '%8s %10s %12s %12s %14s\n' nodes "load ms" "compile ms" "total ms" "us per node"
IFS=, read -ra list <<<"$nodes"
for n in "${list[@]}"; do
  model="$work/chain_$n.onnx"
  [[ -f $model ]] || /usr/bin/python3 - "$n" "$model" <<'PY'
import sys
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper
n, path = int(sys.argv[1]), sys.argv[2]
ops = ["Add", "Mul", "Relu", "Tanh"]
nodes, inits, prev = [], [], "x"
for i in range(n):
    op, out = ops[i % 4], f"v{i}"
    if op in ("Add", "Mul"):
        c = f"c{i}"
        inits.append(numpy_helper.from_array(np.full([16], 0.5 + (i % 7) / 16, np.float32), c))
        nodes.append(helper.make_node(op, [prev, c], [out], name=f"n{i}"))
    else:
        nodes.append(helper.make_node(op, [prev], [out], name=f"n{i}"))
    prev = out
nodes.append(helper.make_node("Identity", [prev], ["y"], name="out"))
g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16])], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
PY
  read -r l c < <(measure "$model")
  awk -v n="$n" -v l="$l" -v c="$c" 'BEGIN {printf "%8d %10.1f %12.1f %12.1f %14.1f\n", n, l, c, l + c, (l + c) * 1000 / n}'
done

# Nesting: a 1-trip Loop whose body holds a 1-trip Loop, `depth` levels.
printf '\n%8s %10s %12s %12s %14s\n' depth "load ms" "compile ms" "total ms" "ms per level"
IFS=, read -ra list <<<"$depths"
for d in "${list[@]}"; do
  model="$work/loops_$d.onnx"
  [[ -f $model ]] || /usr/bin/python3 - "$d" "$model" <<'PY'
import sys
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper
depth, path = int(sys.argv[1]), sys.argv[2]
f = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [16])
def body(level):
    if level == 0:
        nodes = [helper.make_node("Add", [f"x{level}", "one"], [f"y{level}"])]
    else:
        nodes = [helper.make_node("Constant", [], [f"t{level}"], value=helper.make_tensor("t", TensorProto.INT64, [], [1])),
                 helper.make_node("Loop", [f"t{level}", "", f"x{level}"], [f"y{level}"], body=body(level - 1))]
    nodes.append(helper.make_node("Identity", [f"c{level}"], [f"co{level}"]))
    return helper.make_graph(nodes, f"b{level}", [helper.make_tensor_value_info(f"i{level}", TensorProto.INT64, []),
                             helper.make_tensor_value_info(f"c{level}", TensorProto.BOOL, []), f(f"x{level}")],
                             [helper.make_tensor_value_info(f"co{level}", TensorProto.BOOL, []), f(f"y{level}")])
top = [helper.make_node("Constant", [], ["trips"], value=helper.make_tensor("t", TensorProto.INT64, [], [1])),
       helper.make_node("Loop", ["trips", "", "x"], ["y"], body=body(depth - 1))]
g = helper.make_graph(top, "loops", [f("x")], [f("y")], [numpy_helper.from_array(np.ones(16, np.float32), "one")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
PY
  read -r l c < <(measure "$model")
  awk -v d="$d" -v l="$l" -v c="$c" 'BEGIN {printf "%8d %10.1f %12.1f %12.1f %14.2f\n", d, l, c, l + c, (l + c) / d}'
done
