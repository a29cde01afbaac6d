#!/usr/bin/env bash
# The `xonnx` command's contract: exit codes, outputs and one-line errors.
# usage: cli_test.sh XONNX_BINARY EXAMPLE_MODEL
set -uo pipefail
xonnx="$1"
model="$2"
# A graph with NonMaxSuppression, for `info`'s host-node listing.
detection_model="${3:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# expect NAME WANT_RC PATTERN -- command...: runs the command, checks its exit
# code and that its combined output matches PATTERN (grep -E).
expect() {
  local name="$1" want_rc="$2" pattern="$3"
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ "$rc" == "$want_rc" ]] && grep -qE -- "$pattern" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: rc=$rc (want $want_rc), output:"
    sed 's/^/    /' <<<"$out" | head -20
  fi
}

# An error is exactly one line, starting "xonnx: error:", with the exit code
# its kind has: 2 the command line, 3 the model or input, 4 the run.
expect_error() {
  local name="$1" want_rc="$2" pattern="$3"
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ "$rc" == "$want_rc" && $(wc -l <<<"$out") == 1 && "$out" == "xonnx: error: "* ]] &&
    grep -qE -- "$pattern" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: rc=$rc (want $want_rc), output:"
    sed 's/^/    /' <<<"$out" | head -20
  fi
}

expect help 0 "run.*bench.*convert.*info|Subcommands" -- "$xonnx" --help
expect info 0 "Conv x2" -- "$xonnx" info "$model"
expect run_random 0 "using random float32\[1,3,32,32\] \(seed 0\)" -- "$xonnx" run "$model"
expect run_summary 0 "^probs: float32\[1,10\] min=" -- "$xonnx" run "$model" --seed 3
expect run_shape 0 "probs: float32\[5,10\]" -- "$xonnx" run "$model" --shape image=5x3x32x32
expect run_output_dir 0 "wrote 1 output" -- "$xonnx" run "$model" --output-dir "$tmp/out"
expect output_file 0 "" -- test -s "$tmp/out/output_0.pb"
# Input files: .npy and the TensorProto the command itself writes.
/usr/bin/python3 -c "import numpy as np; np.save('$tmp/img.npy', np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32))"
expect run_npy_input 0 "probs: float32\[2,10\]" -- "$xonnx" run "$model" --input image="$tmp/img.npy"
expect run_pb_roundtrip 0 "wrote 1 output" -- "$xonnx" run "$model" --input image="$tmp/img.npy" --output-dir "$tmp/x"
# .npy headers that claim more than the file holds: refused before anything
# that size is allocated, even when the shape's product wraps around.
/usr/bin/python3 -c "
import struct
def npy(path, shape):
    h = \"{'descr': '<f4', 'fortran_order': False, 'shape': %s, }\" % shape
    h += ' ' * ((64 - (11 + len(h)) % 64) % 64) + '\\n'
    open(path, 'wb').write(b'\\x93NUMPY\\x01\\x00' + struct.pack('<H', len(h)) + h.encode() + bytes(8))
npy('$tmp/wrap.npy', '(6148914691236517206, 3)')
npy('$tmp/huge.npy', '(1000000000,)')"
expect npy_shape_wraps 3 "more elements than memory can hold" -- "$xonnx" run "$model" --input image="$tmp/wrap.npy"
expect npy_claims_more_than_it_holds 3 "8 bytes of data, shape \(1000000000,\) needs 4000000000" -- \
  "$xonnx" run "$model" --input image="$tmp/huge.npy"
expect convert_text 0 "^HloModule tiny_cnn" -- "$xonnx" convert "$model" --hlo-text -
expect convert_proto 0 "" -- "$xonnx" convert "$model" --hlo-proto "$tmp/m.pb" --batch 2
expect convert_proto_file 0 "" -- test -s "$tmp/m.pb"
# StableHLO: written by convert, and the program format of a run; the same
# outputs as through HLO.
expect convert_stablehlo 0 'func.func public @main\(%arg0: tensor<2x3x32x32xf32> loc\("Input:image"\)\)' -- \
  "$xonnx" convert "$model" --stablehlo - --batch 2
expect run_stablehlo 0 "wrote 1 output" -- "$xonnx" run "$model" --input image="$tmp/img.npy" --output-dir "$tmp/sh" \
  --program-format stablehlo --no-cache
expect run_hlo 0 "wrote 1 output" -- "$xonnx" run "$model" --input image="$tmp/img.npy" --output-dir "$tmp/hl" \
  --program-format hlo --no-cache
expect stablehlo_same_outputs 0 "" -- cmp "$tmp/sh/output_0.pb" "$tmp/hl/output_0.pb"
expect_error program_format_unknown 2 "--program-format 'mlir': expected auto, hlo or stablehlo" -- \
  "$xonnx" run "$model" --program-format mlir
# bench --json: every documented field, as JSON.
json_has() {
  /usr/bin/python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
missing = [k for k in sys.argv[1].split(",") if k not in j]
lat = j.get("latency_ms", {})
missing += ["latency_ms." + k for k in ("min", "mean", "median", "p50", "p90", "p95", "p99", "max", "stddev") if k not in lat]
assert not missing, missing
assert j["iterations"] == int(sys.argv[2]), j["iterations"]
assert lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p95"] <= lat["p99"] <= lat["max"], lat
print("ok", j["model"], j["input_shapes"])' "$@"
}
export -f json_has
expect bench_json 0 "^ok .*tiny_cnn.onnx \{'image': \[1, 3, 32, 32\]\}" -- bash -c "'$xonnx' bench '$model' --iterations 3 --warmup 1 --json | json_has model,device,input_shapes,batch,load_ms,buckets_ms,weights_ms,compile_ms,compiled,from_cache,cache_rejected,cache_messages,latency_ms,phases_ms,iterations,in_flight,items_per_s,peak_rss_mb 3"
expect bench_every_bucket 0 '"bucket_first_call_ms":\{"1":[0-9.e+-]+,"4":[0-9.e+-]+\}' -- "$xonnx" bench "$model" --iterations 1 --warmup 0 --json --no-cache --batch-buckets 1,4 --every-bucket
expect bench_every_bucket_text 0 "first call per bucket  1: [0-9.]+ ms, 4: [0-9.]+ ms" -- "$xonnx" bench "$model" --iterations 1 --warmup 0 --no-cache --batch-buckets 1,4 --every-bucket
expect bench_phases_text 0 "batch buckets 1,4; programs [0-9.]+ ms, weights [0-9.]+ ms" -- "$xonnx" bench "$model" --iterations 1 --warmup 0 --no-cache --batch-buckets 1,4
expect bench_profile 0 "wrote the profile to .*trace.json" -- "$xonnx" bench "$model" --iterations 2 --warmup 0 --profile "$tmp/trace.json"
expect profile_summary 0 "^Conv +[0-9.]+ +[0-9]+ " -- "$xonnx" profile "$tmp/trace.json"
expect profile_not_a_trace 3 "not a trace written by --profile" -- "$xonnx" profile "$tmp/m.pb"
expect run_compare 0 "compare probs: max \|diff\| [0-9.e+-]+, relative L2 [0-9.e+-]+ against the reference device: ok" -- "$xonnx" run "$model" --compare reference
expect run_compare_differs 1 "DIFFERS" -- "$xonnx" run "$model" --compare reference --data-type bf16 --create-option excess_precision=true --tolerance 1e-9
expect run_compare_first_difference 1 "first difference: value '[^']+' \(1 of [0-9]+ in node order\): max \|diff\|" -- \
  "$xonnx" run "$model" --compare reference --data-type bf16 --create-option excess_precision=true --tolerance 1e-9
expect devices_all 0 "^cpu .*libxonnx_pjrt_cpu.so" -- "$xonnx" devices --all
expect plugin_unknown_name 3 "no PjRT plugin named 'nosuch'" -- "$xonnx" devices --plugin nosuch
expect bench_every_bucket_needs_buckets 2 "--every-bucket needs batch buckets" -- "$xonnx" bench "$model" --iterations 1 --every-bucket

# A model whose last node is unknown: the whole conversion fails and names
# it; --allow-partial writes the part before it.
/usr/bin/python3 - "$model" "$tmp/partial.onnx" <<'PY'
import sys
import onnx
m = onnx.load(sys.argv[1])
node = m.graph.node[-1]
node.op_type = "FancySoftmax"
node.ClearField("attribute")
onnx.save(m, sys.argv[2])
PY
expect_error convert_unsupported 3 "1 unsupported op: FancySoftmax \(node 'softmax'\)" -- "$xonnx" convert "$tmp/partial.onnx" --hlo-text -
expect convert_partial 0 "partial conversion, stopped at: .*FancySoftmax" -- "$xonnx" convert "$tmp/partial.onnx" --hlo-text - --allow-partial
expect convert_partial_text 0 "ROOT .* tuple\(" -- "$xonnx" convert "$tmp/partial.onnx" --hlo-text - --allow-partial
# Index inputs known only at run time: a run fails naming the node; an
# exported program says what its extra output is, unless asked to leave it out.
/usr/bin/python3 - "$tmp/gather.onnx" "$tmp/ids_bad.npy" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
graph = helper.make_graph(
    [helper.make_node("Gather", ["table", "ids"], ["y"], name="lookup")], "embedding",
    [helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
    [numpy_helper.from_array(np.ones((1000, 4), np.float32), "table")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
np.save(sys.argv[2], np.array([1, 5000, 2], np.int64))
PY
expect_error index_out_of_range 3 "node 'lookup' \(Gather, opset 13\): indices: 5000 is outside \[-1000, 999\]" -- \
  "$xonnx" run "$tmp/gather.onnx" --input ids="$tmp/ids_bad.npy"
expect index_unchecked 0 "" -- "$xonnx" run "$tmp/gather.onnx" --input ids="$tmp/ids_bad.npy" --no-check-indices
expect convert_index_checks 0 "node 'lookup' \(Gather, opset 13\): indices in \[-1000, 999\]" -- \
  "$xonnx" convert "$tmp/gather.onnx" --hlo-text /dev/null
expect convert_index_checks_output 0 "ROOT .* = \(f32\[3,4\]\{1,0\}, s64\[2\]\{0\}\) tuple" -- \
  "$xonnx" convert "$tmp/gather.onnx" --hlo-text -
expect convert_no_index_checks 0 "ROOT .* = \(f32\[3,4\]\{1,0\}\) tuple" -- \
  "$xonnx" convert "$tmp/gather.onnx" --hlo-text - --no-check-indices
expect info_unsupported 0 "FancySoftmax \(node 'softmax'\)" -- "$xonnx" info "$tmp/partial.onnx"
# The same model with a node reading a value nothing defines (the checker,
# skipped for unknown ops, would have said so): an error naming it, not a
# crash (a fuzzing finding).
/usr/bin/python3 - "$tmp/partial.onnx" "$tmp/undefined.onnx" <<'PY'
import sys
import onnx
m = onnx.load(sys.argv[1])
m.graph.node[0].input[0] = "ghost"
onnx.save(m, sys.argv[2])
PY
# A GRU whose X is not rank 3: an error, not a read out of bounds (fuzzing).
/usr/bin/python3 - "$tmp/gru_rank2.onnx" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
graph = helper.make_graph(
    [helper.make_node("GRU", ["X", "W", "R"], ["Y"], hidden_size=4)], "gru",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3]),
     helper.make_tensor_value_info("W", TensorProto.FLOAT, [1, 12, 3]),
     helper.make_tensor_value_info("R", TensorProto.FLOAT, [1, 12, 4])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 1, 3, 4])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), sys.argv[1])
PY
expect_error gru_rank2 3 "GRU.*X, W and R must have rank 3, not 2, 3 and 3" -- \
  "$xonnx" convert "$tmp/gru_rank2.onnx" --hlo-text /dev/null
# An opset-8 Scan whose scan input is not [batch, sequence, ...]: an error,
# not a read out of bounds (fuzzing).
/usr/bin/python3 - "$tmp/scan8_rank1.onnx" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
f = TensorProto.FLOAT
body = helper.make_graph(
    [helper.make_node("Add", ["s", "x"], ["s2"]), helper.make_node("Identity", ["s2"], ["y"])], "body",
    [helper.make_tensor_value_info("s", f, [2]), helper.make_tensor_value_info("x", f, [2])],
    [helper.make_tensor_value_info("s2", f, [2]), helper.make_tensor_value_info("y", f, [2])])
graph = helper.make_graph(
    [helper.make_node("Scan", ["", "S", "X"], ["SF", "Y"], body=body, num_scan_inputs=1)], "scan8",
    [helper.make_tensor_value_info("S", f, [1, 2]), helper.make_tensor_value_info("X", f, [3])],
    [helper.make_tensor_value_info("SF", f, [1, 2]), helper.make_tensor_value_info("Y", f, [1, 3, 2])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)]), sys.argv[1])
PY
expect_error scan8_rank1 3 "Scan.*scan input 0 must be \[batch, sequence, \.\.\.\], got rank 1" -- \
  "$xonnx" convert "$tmp/scan8_rank1.onnx" --hlo-text /dev/null
# ONNX's Gradient operator: a linear model's loss and its gradient, as numpy
# computes them.
/usr/bin/python3 - "$tmp" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper
d, f = sys.argv[1], TensorProto.FLOAT
nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Sub", ["h", "t"], ["e"]),
         helper.make_node("Mul", ["e", "e"], ["sq"]), helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0),
         helper.make_node("Gradient", ["W"], ["dW"], domain="ai.onnx.preview.training", xs=["W"], y="loss")]
g = helper.make_graph(nodes, "linear", [helper.make_tensor_value_info(n, f, s) for n, s in
                                        (("x", [4, 3]), ("W", [3, 2]), ("t", [4, 2]))],
                      [helper.make_tensor_value_info("loss", f, []), helper.make_tensor_value_info("dW", f, [3, 2])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                              helper.make_opsetid("ai.onnx.preview.training", 1)]), f"{d}/grad.onnx")
rng = np.random.default_rng(0)
v = {n: rng.standard_normal(s).astype(np.float32) for n, s in (("x", (4, 3)), ("W", (3, 2)), ("t", (4, 2)))}
for n, a in v.items():
    np.save(f"{d}/grad_{n}.npy", a)
e = v["x"] @ v["W"] - v["t"]
np.save(f"{d}/grad_want_0.npy", np.float32((e * e).mean()))
np.save(f"{d}/grad_want_1.npy", (v["x"].T @ (2 * e / e.size)).astype(np.float32))
PY
mkdir -p "$tmp/grad_want" && mv "$tmp/grad_want_0.npy" "$tmp/grad_want/output_0.npy" &&
  mv "$tmp/grad_want_1.npy" "$tmp/grad_want/output_1.npy"
expect gradient_op 0 "dW: float32\[3,2\]" -- "$xonnx" run "$tmp/grad.onnx" --input x="$tmp/grad_x.npy" \
  --input W="$tmp/grad_W.npy" --input t="$tmp/grad_t.npy" --expect "$tmp/grad_want" --tolerance 1e-5
# Found by fuzzing: an If or Loop whose condition has two elements (a null
# instruction was used).
/usr/bin/python3 - "$tmp/if_cond2.onnx" "$tmp/loop_cond2.onnx" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
f = TensorProto.FLOAT
branch = lambda n: helper.make_graph([helper.make_node("Neg", ["x"], [n])], n, [],
                                     [helper.make_tensor_value_info(n, f, [2])])
graph = helper.make_graph(
    [helper.make_node("If", ["c"], ["y"], then_branch=branch("t"), else_branch=branch("e"))], "if2",
    [helper.make_tensor_value_info("c", TensorProto.BOOL, [2]), helper.make_tensor_value_info("x", f, [2])],
    [helper.make_tensor_value_info("y", f, [2])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
body = helper.make_graph(
    [helper.make_node("Identity", ["ci"], ["co"]), helper.make_node("Neg", ["v"], ["w"])], "body",
    [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("ci", TensorProto.BOOL, [2]),
     helper.make_tensor_value_info("v", f, [2])],
    [helper.make_tensor_value_info("co", TensorProto.BOOL, [2]), helper.make_tensor_value_info("w", f, [2])])
graph = helper.make_graph(
    [helper.make_node("Loop", ["m", "c", "x"], ["y"], body=body)], "loop2",
    [helper.make_tensor_value_info("m", TensorProto.INT64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, [2]),
     helper.make_tensor_value_info("x", f, [2])],
    [helper.make_tensor_value_info("y", f, [2])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[2])
PY
expect_error if_condition_of_two 3 "If.*the condition must have one element, not shape pred\[2\]" -- \
  "$xonnx" convert "$tmp/if_cond2.onnx" --hlo-text /dev/null
expect_error loop_condition_of_two 3 "Loop.*the condition must have one element, not shape pred\[2\]" -- \
  "$xonnx" convert "$tmp/loop_cond2.onnx" --hlo-text /dev/null
# Found by fuzzing: a node without a required input, in a model the ONNX
# checker cannot check (opset 18): every op's required inputs are checked
# against its schema before its converter runs.
/usr/bin/python3 - "$tmp/pool_no_input.onnx" <<'PY'
import sys
from onnx import TensorProto, helper
graph = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("MaxPool", [""], ["y"], kernel_shape=[2, 2])], "pool",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 3, 3])])
m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
open(sys.argv[1], "wb").write(m.SerializeToString())
PY
expect_error required_input_missing 3 "MaxPool.*input 0 \('X'\) is required" -- \
  "$xonnx" convert "$tmp/pool_no_input.onnx" --hlo-text /dev/null
# Found by fuzzing: a MaxPool with fewer strides than spatial dims (read
# past them), and one with a stride of 0 (a division by zero).
/usr/bin/python3 - "$tmp/pool_strides.onnx" "$tmp/pool_stride0.onnx" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
for path, strides in ((sys.argv[1], [1]), (sys.argv[2], [0, 1])):
    graph = helper.make_graph(
        [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=strides)], "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, None, None])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    open(path, "wb").write(m.SerializeToString())  # not onnx.save: the checker is what is under test
PY
expect_error pool_short_strides 3 "MaxPool.*kernel_shape, strides and dilations need 2 values each, not 2, 1 and 2" -- \
  "$xonnx" convert "$tmp/pool_strides.onnx" --hlo-text /dev/null
expect_error pool_zero_stride 3 "MaxPool.*must be at least 1, not 2, 0 and 1 for spatial dim 0" -- \
  "$xonnx" convert "$tmp/pool_stride0.onnx" --hlo-text /dev/null
# Found by fuzzing: a Conv with too few strides; a string TensorProto whose
# dims claim far more values than it holds.
/usr/bin/python3 - "$model" "$tmp/conv_strides.onnx" "$tmp/strings.pb" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
m = onnx.load(sys.argv[1])
conv = next(n for n in m.graph.node if n.op_type == "Conv")
for a in conv.attribute:
    if a.name == "strides":
        conv.attribute.remove(a)
        break
conv.attribute.append(helper.make_attribute("strides", [1]))
onnx.save(m, sys.argv[2])
t = TensorProto(name="s", data_type=TensorProto.STRING, dims=[10**12], string_data=[b"a"])
open(sys.argv[3], "wb").write(t.SerializeToString())
PY
expect_error conv_short_strides 3 "Conv.*strides and dilations need 2 values each, not 1 and 2" -- \
  "$xonnx" convert "$tmp/conv_strides.onnx" --hlo-text /dev/null
expect_error string_dims_overclaim 3 "strings.pb: .*string tensor 's': shape \[1000000000000\] does not match its 1 values" -- \
  "$xonnx" run "$model" --input image="$tmp/strings.pb"
# An initializer whose dims claim a size that cannot exist (the product
# wraps): info counts it as nothing (a fuzzing finding: signed overflow).
/usr/bin/python3 - "$tmp/huge_init.onnx" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
big = TensorProto(name="big", data_type=TensorProto.FLOAT, dims=[2**62 + 1, 4])
graph = helper.make_graph([helper.make_node("Frob", ["x", "big"], ["y"])], "huge",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], [big])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
expect info_huge_initializer 0 '"initializer_bytes":0,' -- "$xonnx" info "$tmp/huge_init.onnx" --json
expect_error convert_undefined_input 3 "node 'conv1' \(Conv, opset 17\): input 'ghost' is not defined" -- \
  "$xonnx" convert "$tmp/undefined.onnx" --hlo-text /dev/null --allow-partial

if [[ -n "$detection_model" ]]; then
  expect info_host_nodes 0 "runs on the host \(the graph is split into 2 device program" -- "$xonnx" info "$detection_model"
  expect info_host_node_name 0 "^  NonMaxSuppression 'selected'" -- "$xonnx" info "$detection_model"
  expect convert_split 0 "node NonMaxSuppression 'selected' runs on the host; this is the program before it" -- \
    "$xonnx" convert "$detection_model" --hlo-text "$tmp/det.txt"
  expect run_split 0 "kept_boxes: float32\[1,[0-9]+,4\]" -- "$xonnx" run "$detection_model" --no-cache
  expect_error split_buckets 3 "cannot be used with this model: its graph runs partly on the host \(NonMaxSuppression 'selected'\)" -- \
    "$xonnx" run "$detection_model" --io-data-type f16 --no-cache
fi

printf 'not a model' >"$tmp/bad.onnx"
head -c 3000 "$model" >"$tmp/truncated.onnx"
expect_error missing_file 3 "nope.onnx: cannot open" -- "$xonnx" run "$tmp/nope.onnx"
expect_error not_onnx 3 "bad.onnx: not a valid ONNX model" -- "$xonnx" info "$tmp/bad.onnx"
expect_error truncated 3 "truncated.onnx" -- "$xonnx" run "$tmp/truncated.onnx"
expect_error bad_shape_flag 2 "--shape 'image=1xQ': bad dimension" -- "$xonnx" run "$model" --shape image=1xQ
expect_error wrong_input_shape 3 "input 'image' has shape \[1,10\], the model expects \[batch,3,32,32\]" -- "$xonnx" run "$model" --input image="$tmp/out/output_0.pb"
expect_error unknown_input 3 "no input named 'nope'" -- "$xonnx" run "$model" --shape nope=1x2
expect_error usage_error 2 "MODEL is required.*see xonnx --help" -- "$xonnx" run

# Plugins and devices.
expect devices 0 "0: CpuDevice\(id=0\)" -- "$xonnx" devices
expect devices_virtual 0 "2: CpuDevice\(id=2\)" -- "$xonnx" devices --create-option cpu_device_count=3
expect run_on_device_2 0 "probs: float32\[1,10\]" -- "$xonnx" run "$model" --create-option cpu_device_count=3 --device 2
expect_error no_such_device 3 "device 4 does not exist" -- "$xonnx" run "$model" --device 4
expect_error unknown_create_option 3 "unknown create option 'bogus'" -- "$xonnx" devices --create-option bogus=1
expect_error missing_plugin 3 "no such PjRT plugin file" -- "$xonnx" run "$model" --plugin "$tmp/nope.so"
expect_error not_a_shared_object 3 "cannot load PjRT plugin .*invalid ELF header" -- "$xonnx" devices --plugin "$tmp/truncated.onnx"
expect_error not_a_plugin 3 "not a PjRT plugin \\(no GetPjrtApi symbol\\)" -- "$xonnx" devices --plugin libm.so.6
expect_error not_a_plugin_name 3 "cannot load PjRT plugin 'libxonnx_no_such_plugin.so'" -- "$xonnx" devices --plugin libxonnx_no_such_plugin.so

# Serving: buckets, all devices, the compile cache shared by processes.
cache="$tmp/cache"
expect buckets 0 "probs: float32\[3,10\]" -- "$xonnx" run "$model" --batch-buckets 2,4 --shape image=3x3x32x32 --cache-dir "$cache"
expect bench_buckets_cold 0 "2 compiled, 0 from the cache; cache .*; batch buckets 4,8" -- "$xonnx" bench "$model" --max-batch 8 --steps 2 --shape image=5x3x32x32 --iterations 2 --cache-dir "$tmp/cache2"
expect bench_buckets_warm 0 "0 compiled, 2 from the cache" -- "$xonnx" bench "$model" --max-batch 8 --steps 2 --shape image=5x3x32x32 --iterations 2 --cache-dir "$tmp/cache2"
expect bench_no_cache 0 "2 compiled, 0 from the cache; cache off" -- "$xonnx" bench "$model" --max-batch 8 --steps 2 --iterations 1 --no-cache
expect bench_in_flight 0 "4 in flight" -- "$xonnx" bench "$model" --iterations 8 --in-flight 4 --no-cache
expect run_all_devices 0 "probs: float32\[7,10\]" -- "$xonnx" run "$model" --create-option cpu_device_count=3 --device all --batch-buckets 1,2 --shape image=7x3x32x32 --no-cache
# The same input on 1 device and on 3 gives the same bytes with the same
# bucket programs (other batch sizes may sum in another order).
"$xonnx" run "$model" --input image="$tmp/img.npy" --output-dir "$tmp/one" --batch-buckets 1 --no-cache >/dev/null 2>&1
"$xonnx" run "$model" --input image="$tmp/img.npy" --output-dir "$tmp/three" --create-option cpu_device_count=3 --device all --batch-buckets 1 --no-cache >/dev/null 2>&1
expect all_devices_agree 0 "" -- cmp "$tmp/one/output_0.pb" "$tmp/three/output_0.pb"
# Four processes filling one empty cache at once, then one reading it; all
# give the bytes of the same buckets compiled without a cache.
"$xonnx" run "$model" --input image="$tmp/img.npy" --output-dir "$tmp/uncached" --batch-buckets 1,2,4 --no-cache >/dev/null 2>&1
shared="$tmp/shared_cache"
for k in 1 2 3 4; do
  "$xonnx" run "$model" --input image="$tmp/img.npy" --output-dir "$tmp/p$k" --batch-buckets 1,2,4 --cache-dir "$shared" >/dev/null 2>&1 &
done
wait
for k in 1 2 3 4; do expect "concurrent_process_$k" 0 "" -- cmp "$tmp/uncached/output_0.pb" "$tmp/p$k/output_0.pb"; done
expect concurrent_cache_whole 0 "0 compiled, 3 from the cache" -- "$xonnx" bench "$model" --batch-buckets 1,2,4 --shape image=2x3x32x32 --iterations 1 --cache-dir "$shared"
expect no_temporaries 0 "^0$" -- bash -c "ls '$shared' | grep -v '\.xcache$' | wc -l"
# `xonnx cache`: what the shared cache holds (3 buckets: a program and an
# executable each), trimming it, clearing it; others' files stay.
echo mine >"$shared/notes.txt"
expect cache_show 0 "entries: 6 \(3 executables, 3 programs\), [0-9.]+ KiB" -- "$xonnx" cache --cache-dir "$shared"
expect cache_json 0 '^\{"bytes":[0-9]+,"dir":".*","entries":6,"kinds":\{"executable":3,"program":3\},"newest_use":[0-9]+,"oldest_use":[0-9]+,"temporaries":0\}$' -- "$xonnx" cache --cache-dir "$shared" --json
expect cache_trim 0 "removed: [1-6] entries" -- "$xonnx" cache --cache-dir "$shared" --max-size 12K
expect cache_trimmed_rerun 0 "probs: float32\[2,10\]" -- "$xonnx" run "$model" --input image="$tmp/img.npy" --batch-buckets 1,2,4 --cache-dir "$shared"
expect cache_clear 0 "entries: 0, 0 B" -- "$xonnx" cache --cache-dir "$shared" --clear
expect cache_others_kept 0 "^notes.txt$" -- ls "$shared"
expect cache_missing 0 "does not exist yet" -- "$xonnx" cache --cache-dir "$tmp/no_such_cache"
expect_error cache_bad_size 2 "--max-size '12Q': expected a size such as 500M, 2G or 0" -- "$xonnx" cache --cache-dir "$shared" --max-size 12Q
expect_error bad_buckets 2 "--batch-buckets '1,x': expected a comma list of sizes >= 1" -- "$xonnx" run "$model" --batch-buckets 1,x
expect_error bad_steps 3 "steps must be between 1 and max_batch \(4\)" -- "$xonnx" run "$model" --max-batch 4 --steps 9 --no-cache
expect_error bad_dim_buckets 3 "no input has a dynamic dimension named 'seq'" -- "$xonnx" run "$model" --dim-buckets seq=8,16 --no-cache
expect run_f16 0 "probs: float16\[2,10\]" -- "$xonnx" run "$model" --input image="$tmp/img.npy" --data-type f16 --io-data-type f16 --no-cache
expect run_bf16_f32_io 0 "probs: float32\[2,10\]" -- "$xonnx" run "$model" --input image="$tmp/img.npy" --data-type bf16 --no-cache
expect_error bad_data_type 2 "--data-type 'f8': expected f32, f16 or bf16" -- "$xonnx" run "$model" --data-type f8
expect_error bad_device 2 "--device 'two': expected a device index" -- "$xonnx" run "$model" --device two

# Perf-tool parity: version, percentiles, durations, time exports, input
# files for bench, output formats and selection, expected outputs, JSON.
expect version 0 "^xonnx [0-9]+\.[0-9]+\.[0-9]+$" -- "$xonnx" --version
expect help_exit_codes 0 "Exit codes: 0 success; 1 .*2 the command line.*3 the model.*4 the run" -- "$xonnx" --help
expect bench_percentiles 0 "mean [0-9.]+ ms  p95 [0-9.]+ ms  p99 [0-9.]+ ms  max [0-9.]+ ms  stddev [0-9.]+ ms" -- \
  "$xonnx" bench "$model" --iterations 5 --warmup 0 --no-cache
expect bench_duration 0 "\([0-9]+ runs, 1 in flight\)" -- "$xonnx" bench "$model" --duration 0.3 --warmup 0 --no-cache
# On a terminal (here a pseudo-terminal from script(1)) bench shows its progress; in a pipe it does not.
expect bench_progress_tty 0 "bench: [0-9]+ calls, [0-9.]+ of 1.5 s" -- \
  script -qec "'$xonnx' bench '$model' --duration 1.5 --warmup 0 --no-cache" /dev/null
expect bench_no_progress_in_pipes 1 "" -- bash -c "'$xonnx' bench '$model' --duration 0.7 --warmup 0 --no-cache 2>&1 | grep -q 'bench: '"
expect bench_export 0 "" -- "$xonnx" bench "$model" --iterations 4 --warmup 0 --no-cache --export-times "$tmp/times.csv"
expect bench_export_rows 0 "^5 call,latency_ms$" -- bash -c "echo \$(wc -l <'$tmp/times.csv') \$(head -1 '$tmp/times.csv')"
expect bench_input_file 0 "throughput .*\(batch 2\)" -- "$xonnx" bench "$model" --input image="$tmp/img.npy" --iterations 2 --no-cache
mkdir -p "$tmp/indir" "$tmp/emptydir"
cp "$tmp/img.npy" "$tmp/indir/input_0.npy"
expect bench_input_dir 0 "throughput .*\(batch 2\)" -- "$xonnx" bench "$model" --input-dir "$tmp/indir" --iterations 2 --no-cache
expect_error input_dir_empty 3 "emptydir: no input_<i>.pb or .npy for input 'image' \(the model has 1 input\)" -- \
  "$xonnx" run "$model" --input-dir "$tmp/emptydir"
expect run_both_formats 0 "wrote 1 output\(s\) to .* \(2 file\(s\)\)" -- \
  "$xonnx" run "$model" --input image="$tmp/img.npy" --output-dir "$tmp/both" --output-format both --no-cache
expect npy_matches_pb 0 "^same$" -- /usr/bin/python3 -c "
import numpy as np, onnx
from onnx import numpy_helper
a = np.load('$tmp/both/output_0.npy'); b = numpy_helper.to_array(onnx.load_tensor('$tmp/both/output_0.pb'))
print('same' if a.dtype == b.dtype and a.shape == b.shape and (a == b).all() else 'differ')"
expect run_select_output 0 "^probs: float32\[2,10\]" -- "$xonnx" run "$model" --input image="$tmp/img.npy" --outputs probs
expect run_one_thread 0 "against .*both: ok" -- "$xonnx" run "$model" --input image="$tmp/img.npy" --expect "$tmp/both" \
  --create-option threads=1 --no-cache
expect_error bad_threads 3 "create option threads=-2 is out of range" -- "$xonnx" devices --create-option threads=-2
expect_error run_unknown_output 3 "--outputs: the model has no output named 'nope' \(its outputs: 'probs'\)" -- \
  "$xonnx" run "$model" --outputs nope
expect run_expect_ok 0 "compare probs: max \|diff\| 0, relative L2 0 against .*both: ok" -- \
  "$xonnx" run "$model" --input image="$tmp/img.npy" --expect "$tmp/both" --no-cache
expect run_expect_differs 1 "against .*both: DIFFERS" -- "$xonnx" run "$model" --input-dir "$tmp/indir" --expect "$tmp/both" \
  --data-type bf16 --tolerance 1e-9 --no-cache
expect_error run_expect_missing 3 "emptydir: no output_0.pb or .npy for output 'probs'" -- \
  "$xonnx" run "$model" --input image="$tmp/img.npy" --expect "$tmp/emptydir" --no-cache
expect info_without_plugin 0 "^  image: float32\[batch,3,32,32\]" -- env XONNX_PLUGIN=/nonexistent.so "$xonnx" info "$model"
expect convert_without_plugin 0 "^HloModule tiny_cnn" -- env XONNX_PLUGIN=/nonexistent.so "$xonnx" convert "$model" --hlo-text -
expect_error run_needs_plugin 3 "nonexistent.so: no such PjRT plugin file" -- env XONNX_PLUGIN=/nonexistent.so "$xonnx" run "$model" --input image="$tmp/img.npy"
# Logging: glog's format on stderr, verbose lines by file, nothing by default.
expect log_vmodule 0 "^I[0-9]{8} [0-9:.]+ +[0-9]+ session_open.cc:[0-9]+\] .*tiny_cnn.onnx: opened: 1 input" -- \
  env XONNX_VMODULE=session_open=1 "$xonnx" run "$model" --input image="$tmp/img.npy" --no-cache
expect log_quiet_by_default 1 "" -- bash -c "'$xonnx' run '$model' --input image='$tmp/img.npy' --no-cache 2>&1 | grep -E '^[IWE][0-9]{8} '"
expect log_bad_level 0 "^W[0-9]{8} .*XONNX_LOG_LEVEL='loud' is not info, warning, error, fatal or 0-3; ignored" -- \
  env XONNX_LOG_LEVEL=loud "$xonnx" run "$model" --input image="$tmp/img.npy" --no-cache
expect info_json 0 '"inputs":\[\{"dtype":"float32","name":"image","optional":false,"sequence":false,"shape":\["batch",3,32,32\]\}\]' -- \
  "$xonnx" info "$model" --json
expect devices_json 0 '"devices":\[\{"attributes":\{.*\},"description":"CpuDevice\(id=0\)"' -- "$xonnx" devices --json
expect_error devices_all_json 2 "cannot be used with --all" -- "$xonnx" devices --all --json
expect_error unknown_flag 2 "--frobnicate.*see xonnx --help" -- "$xonnx" run "$model" --frobnicate
expect_error bad_iterations 2 "--iterations must be >= 1" -- "$xonnx" bench "$model" --iterations 0
# Runtime failures: a result that cannot be written, a call past its deadline.
expect_error output_unwritable 4 "/dev/null/out: cannot create the output folder" -- \
  "$xonnx" run "$model" --input image="$tmp/img.npy" --output-dir /dev/null/out --no-cache
/usr/bin/python3 - "$tmp/endless.onnx" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["x_in", "one"], ["x_out"])],
    "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
             helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
             helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [1])],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
     helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [1])],
    [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
graph = helper.make_graph(
    [helper.make_node("Loop", ["", "cond", "x"], ["y"], body=body)], "endless",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    [helper.make_tensor("cond", TensorProto.BOOL, [], [True])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
expect deadline 4 "^xonnx: error: .*endless.onnx: the call passed its deadline of 300 ms" -- \
  "$xonnx" run "$tmp/endless.onnx" --deadline-ms 300 --no-cache

# A fused convolution and ReLU is profiled under both nodes, not the last.
expect profile_fused_label 0 "^Conv\+Relu +[0-9.]+ +[0-9]+ " -- "$xonnx" profile "$tmp/trace.json"

# Inputs given in part: a wrong name lists the model's inputs; an input not
# given takes the batch of those given.
/usr/bin/python3 - "$tmp/pair.onnx" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
graph = helper.make_graph(
    [helper.make_node("Add", ["a", "b"], ["s"])], "pair",
    [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 4]),
     helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("s", TensorProto.FLOAT, ["N", 4])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], doc_string="adds two tensors",
                          domain="ai.example", model_version=3)
helper.set_model_props(model, {"author": "cli tests"})
onnx.save(model, sys.argv[1])
PY
expect info_metadata 0 "metadata: author = cli tests" -- "$xonnx" info "$tmp/pair.onnx"
expect info_about 0 "^version:  ai.example 3" -- "$xonnx" info "$tmp/pair.onnx"
/usr/bin/python3 -c "import numpy as np; np.save('$tmp/a.npy', np.ones((3, 4), np.float32))"
expect_error input_name_unknown 3 "no input named 'c'; its inputs: 'a', 'b'" -- \
  "$xonnx" run "$tmp/pair.onnx" --input c="$tmp/a.npy"
expect input_missing_takes_batch 0 "input 'b' not given: using random float32\[3,4\]" -- \
  "$xonnx" run "$tmp/pair.onnx" --input a="$tmp/a.npy"
expect input_missing_runs 0 "^s: float32\[3,4\]" -- "$xonnx" run "$tmp/pair.onnx" --input a="$tmp/a.npy"

# --dump-to dumps on a compile-cache hit too: a dumping run does not read
# the cache.
XONNX_CACHE_DIR="$tmp/dump_cache" "$xonnx" run "$model" >/dev/null 2>&1
expect dump_on_cache_hit 0 "" -- env XONNX_CACHE_DIR="$tmp/dump_cache" "$xonnx" run "$model" --dump-to "$tmp/dumps"
expect dump_written 0 "[.]txt" -- ls "$tmp/dumps"

echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
