#!/usr/bin/python3
"""Op-level speed suite: xonnx against ONNX Runtime, op by op, on shapes taken
from real models (the idea of ggml's test-backend-ops in perf mode).

    bench/ops.py [--quick] [--filter REGEX] [--rounds 3] [--iterations 20]
                 [--threads 2] [--work DIR] [--markdown] [--list]

Each case is a one-node (or few-node) model: its weights are initializers, as
in a real model, and its activations and index inputs are graph inputs with
fixed random values written as .npy files, so both engines run on the same
data. Each round runs `xonnx bench` and ONNX Runtime (bench/ort_bench.js,
onnxruntime-node) back to back with the same thread count; a case's figure is
the median over rounds of each engine's median latency, and the ratio is
xonnx / ONNX Runtime (below 1: xonnx is faster). The table is sorted worst
first; the last line gives the median ratio and the count of rows over 1.5.

--quick runs one round of a few iterations over a subset (one case per op
family) as a report: it fails only if an engine fails to run a case.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPSET = 17
RNG_SEED = 1234

ONNX_TYPES = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.int64: TensorProto.INT64,
              np.int32: TensorProto.INT32, np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8,
              np.bool_: TensorProto.BOOL}


class Case:
    """One op-shape row: a model of a few nodes and its input values."""

    def __init__(self, op, label, nodes, inputs, weights=None, outputs=("y",), quick=False):
        self.op, self.label, self.nodes, self.inputs = op, label, nodes, inputs
        self.weights, self.outputs, self.quick = weights or {}, outputs, quick

    @property
    def name(self):
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{self.op}_{self.label}")

    def model(self):
        ins = [helper.make_tensor_value_info(n, ONNX_TYPES[a.dtype.type], a.shape) for n, a in self.inputs.items()]
        inits = [numpy_helper.from_array(a, n) for n, a in self.weights.items()]
        graph = helper.make_graph(self.nodes, self.name, ins, [], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        # The outputs' types and shapes come from ONNX's shape inference.
        inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
        model.graph.output.extend(inferred[o] for o in self.outputs)
        onnx.checker.check_model(model)
        return model


def rand(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(RNG_SEED + seed).standard_normal(shape).astype(dtype)


def ints(high, *shape, seed=0):
    return np.random.default_rng(RNG_SEED + seed).integers(0, high, shape).astype(np.int64)


def node(op, ins, outs=("y",), **attrs):
    return helper.make_node(op, list(ins), list(outs), **attrs)


def conv(label, n, cin, cout, hw, k, stride=1, dil=1, group=1, quick=False, dtype=np.float32):
    pad = dil * (k - 1) // 2
    return Case("Conv", label, [node("Conv", ["x", "w", "b"], kernel_shape=[k, k], strides=[stride, stride],
                                     dilations=[dil, dil], group=group, pads=[pad] * 4)],
                {"x": rand(n, cin, hw, hw, dtype=dtype)},
                {"w": rand(cout, cin // group, k, k, dtype=dtype, seed=1) * dtype(0.1), "b": rand(cout, dtype=dtype, seed=2)},
                quick=quick)


def conv_transpose(label, cin, cout, hw, k, stride, pad, quick=False):
    return Case("ConvTranspose", label, [node("ConvTranspose", ["x", "w", "b"], kernel_shape=[k, k],
                                              strides=[stride, stride], pads=[pad] * 4)],
                {"x": rand(1, cin, hw, hw)}, {"w": rand(cin, cout, k, k, seed=1) * np.float32(0.1),
                                              "b": rand(cout, seed=2)}, quick=quick)


def gnn_case(nodes=4096, edges=65536, d=64, layers=3):
    ns, weights = [], {}
    x = "x"
    for k in range(layers):
        weights[f"wm{k}"] = rand(d, d, seed=10 + k) * np.float32(0.1)
        weights[f"wu{k}"] = rand(2 * d, d, seed=20 + k) * np.float32(0.1)
        ns += [node("Gather", [x, "src"], [f"xs{k}"]), node("MatMul", [f"xs{k}", f"wm{k}"], [f"m{k}"]),
               node("Relu", [f"m{k}"], [f"mr{k}"]),
               node("ScatterElements", ["zeros", "dst_rows", f"mr{k}"], [f"agg{k}"], axis=0, reduction="add"),
               node("Concat", [x, f"agg{k}"], [f"cat{k}"], axis=1), node("MatMul", [f"cat{k}", f"wu{k}"], [f"u{k}"]),
               node("Relu", [f"u{k}"], ["y" if k == layers - 1 else f"h{k}"])]
        x = f"h{k}"
    weights["zeros"] = np.zeros((nodes, d), np.float32)
    dst = ints(nodes, edges, seed=2)
    # ScatterElements takes an index per element: the destination row,
    # repeated along the features (Expand of the edge list, computed once).
    ns.insert(0, node("Unsqueeze", ["dst", "ax1"], ["dst1"]))
    ns.insert(1, node("Expand", ["dst1", "shape"], ["dst_rows"]))
    weights["ax1"] = np.array([1], np.int64)
    weights["shape"] = np.array([edges, d], np.int64)
    return Case("model", f"gnn_{layers}x_scatter_add_{edges}_edges", ns,
                {"x": rand(nodes, d), "src": ints(nodes, edges, seed=1), "dst": dst}, weights)


def cases():
    c = []
    # Convolutions: ResNet, MobileNet, ResNeXt, dilated (U^2-Net RSU, DeepLab ASPP, WaveNet-like).
    c.append(conv("3x3_64c_56", 1, 64, 64, 56, 3, quick=True))
    c.append(conv("1x1_256to64_56", 1, 256, 64, 56, 1))
    c.append(conv("3x3_s2_3to32_224", 1, 3, 32, 224, 3, stride=2))
    c.append(conv("dw3x3_96c_112", 1, 96, 96, 112, 3, group=96))
    c.append(conv("g32_3x3_128c_56", 1, 128, 128, 56, 3, group=32))
    c.append(conv("3x3_d2_64c_128", 1, 64, 64, 128, 3, dil=2, quick=True))
    c.append(conv("3x3_d2_16c_256", 1, 16, 16, 256, 3, dil=2))
    c.append(conv("3x3_d4_64c_64", 1, 64, 64, 64, 3, dil=4))
    c.append(conv("3x3_d8_64c_32", 1, 64, 64, 32, 3, dil=8))
    c.append(conv("3x3_d8_256c_16", 1, 256, 256, 16, 3, dil=8))
    c.append(conv("3x3_d8_256c_10", 1, 256, 256, 10, 3, dil=8))
    c.append(conv("3x3_d4_512c_32", 1, 512, 256, 32, 3, dil=4))
    c.append(conv("3x3_d6_256c_33", 1, 256, 256, 33, 3, dil=6))
    c.append(conv("3x3_d12_256c_33", 1, 256, 256, 33, 3, dil=12))
    c.append(conv("3x3_64c_56_f16", 1, 64, 64, 56, 3, dtype=np.float16))
    c.append(Case("Conv", "1d_k3_d4_64c_4000", [node("Conv", ["x", "w"], kernel_shape=[3], dilations=[4], pads=[4, 4])],
                  {"x": rand(1, 64, 4000)}, {"w": rand(64, 64, 3, seed=1) * np.float32(0.1)}))
    # Transposed convolutions: DCGAN generator, U-Net decoder, FCN upsampling.
    c.append(conv_transpose("4x4_s1_100to512_1", 100, 512, 1, 4, 1, 0))
    c.append(conv_transpose("4x4_s2_512to256_4", 512, 256, 4, 4, 2, 1))
    c.append(conv_transpose("4x4_s2_128to64_32", 128, 64, 32, 4, 2, 1, quick=True))
    c.append(conv_transpose("4x4_s2_64to3_64", 64, 3, 64, 4, 2, 1))
    c.append(conv_transpose("2x2_s2_128to64_64", 128, 64, 64, 2, 2, 0))
    c.append(conv_transpose("3x3_s1_32to32_128", 32, 32, 128, 3, 1, 1))
    # Matrix products: transformers (BERT-base, GPT-2) and MLPs.
    c.append(Case("MatMul", "128x768_768x768", [node("MatMul", ["x", "w"])], {"x": rand(1, 128, 768)},
                  {"w": rand(768, 768, seed=1)}, quick=True))
    c.append(Case("MatMul", "1x768_768x3072", [node("MatMul", ["x", "w"])], {"x": rand(1, 1, 768)},
                  {"w": rand(768, 3072, seed=1)}))
    c.append(Case("MatMul", "attn_12x128x64", [node("MatMul", ["q", "k"])],
                  {"q": rand(1, 12, 128, 64), "k": rand(1, 12, 64, 128, seed=1)}))
    c.append(Case("Gemm", "1x2048_1000", [node("Gemm", ["x", "w", "b"], transB=1)], {"x": rand(1, 2048)},
                  {"w": rand(1000, 2048, seed=1), "b": rand(1000, seed=2)}))
    c.append(Case("MatMulInteger", "128x768_768x768", [node("MatMulInteger", ["x", "w"])],
                  {"x": np.random.default_rng(1).integers(0, 255, (128, 768)).astype(np.uint8)},
                  {"w": np.random.default_rng(2).integers(-127, 127, (768, 768)).astype(np.int8)}))
    # TopK: detectors over anchor scores, samplers over a vocabulary.
    k = lambda v: {"k": np.array([v], np.int64)}
    c.append(Case("TopK", "1x19206_k1000", [node("TopK", ["x", "k"], ["y", "i"])], {"x": rand(1, 19206)}, k(1000),
                  outputs=("y", "i"), quick=True))
    c.append(Case("TopK", "1x172800_k1000", [node("TopK", ["x", "k"], ["y", "i"])], {"x": rand(1, 172800)}, k(1000),
                  outputs=("y", "i")))
    c.append(Case("TopK", "8x50257_k50", [node("TopK", ["x", "k"], ["y", "i"])], {"x": rand(8, 50257)}, k(50),
                  outputs=("y", "i")))
    c.append(Case("TopK", "1000x80_k1_axis1", [node("TopK", ["x", "k"], ["y", "i"])], {"x": rand(1000, 80)}, k(1),
                  outputs=("y", "i")))
    # Scatter and gather: graph networks (scatter-add over edges), embeddings, indexing.
    c.append(Case("ScatterElements", "add_65536x64_into_16384", [node("ScatterElements", ["d", "i", "u"],
                                                                       axis=0, reduction="add")],
                  {"d": rand(16384, 64), "i": np.repeat(ints(16384, 65536, 1), 64, axis=1), "u": rand(65536, 64, seed=1)},
                  quick=True))
    c.append(Case("ScatterND", "add_65536x64_into_16384", [node("ScatterND", ["d", "i", "u"], reduction="add")],
                  {"d": rand(16384, 64), "i": ints(16384, 65536, 1), "u": rand(65536, 64, seed=1)}))
    c.append(Case("ScatterND", "set_rows_4096x256", [node("ScatterND", ["d", "i", "u"])],
                  {"d": rand(32768, 256), "i": np.random.default_rng(5).permutation(32768)[:4096].reshape(4096, 1)
                   .astype(np.int64), "u": rand(4096, 256, seed=1)}))
    c.append(Case("Gather", "embed_50257x768_128", [node("Gather", ["w", "i"])], {"i": ints(50257, 1, 128)},
                  {"w": rand(50257, 768, seed=1)}, quick=True))
    c.append(Case("Gather", "rows_65536_of_16384x64", [node("Gather", ["x", "i"])],
                  {"x": rand(16384, 64), "i": ints(16384, 65536)}))
    c.append(Case("GatherElements", "axis1_64x4096", [node("GatherElements", ["x", "i"], axis=1)],
                  {"x": rand(64, 4096), "i": ints(4096, 64, 4096)}))
    c.append(Case("GatherND", "rows_8192_of_16384x64", [node("GatherND", ["x", "i"])],
                  {"x": rand(16384, 64), "i": ints(16384, 8192, 1)}))
    # A graph network of three message-passing layers (its edge list an
    # input, as graph libraries export it): gather the sources, transform,
    # scatter-add into the destinations, update the nodes.
    c.append(gnn_case())
    # Normalization, softmax, reductions.
    c.append(Case("Softmax", "12x128x128", [node("Softmax", ["x"], axis=-1)], {"x": rand(1, 12, 128, 128)}, quick=True))
    c.append(Case("Softmax", "4x1024x1024 (U-Net self-attention)", [node("Softmax", ["x"], axis=-1)], {"x": rand(1, 4, 1024, 1024)}))
    c.append(Case("LayerNormalization", "128x768", [node("LayerNormalization", ["x", "g", "b"], axis=-1)],
                  {"x": rand(1, 128, 768)}, {"g": rand(768, seed=1), "b": rand(768, seed=2)}))
    c.append(Case("BatchNormalization", "64c_112", [node("BatchNormalization", ["x", "s", "b", "m", "v"])],
                  {"x": rand(1, 64, 112, 112)}, {"s": rand(64, seed=1), "b": rand(64, seed=2), "m": rand(64, seed=3),
                                                 "v": np.abs(rand(64, seed=4)) + np.float32(0.5)}))
    c.append(Case("InstanceNormalization", "64c_128", [node("InstanceNormalization", ["x", "s", "b"])],
                  {"x": rand(1, 64, 128, 128)}, {"s": rand(64, seed=1), "b": rand(64, seed=2)}))
    c.append(Case("ReduceMean", "spatial_256c_56", [node("ReduceMean", ["x"], axes=[2, 3])], {"x": rand(1, 256, 56, 56)}))
    c.append(Case("ReduceSum", "axis0_4096x1024", [node("ReduceSum", ["x", "a"], keepdims=0)], {"x": rand(4096, 1024)},
                  {"a": np.array([0], np.int64)}))
    c.append(Case("ArgMax", "8x50257", [node("ArgMax", ["x"], axis=-1)], {"x": rand(8, 50257)}))
    c.append(Case("CumSum", "1x16384x64_axis1", [node("CumSum", ["x", "a"])], {"x": rand(1, 16384, 64)},
                  {"a": np.array(1, np.int64)}))
    # Pooling and resizing.
    c.append(Case("MaxPool", "3x3_s2_64c_112", [node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2],
                                                      pads=[1, 1, 1, 1])], {"x": rand(1, 64, 112, 112)}, quick=True))
    c.append(Case("AveragePool", "3x3_s1_192c_28", [node("AveragePool", ["x"], kernel_shape=[3, 3], pads=[1] * 4)],
                  {"x": rand(1, 192, 28, 28)}))
    c.append(Case("GlobalAveragePool", "2048c_7", [node("GlobalAveragePool", ["x"])], {"x": rand(1, 2048, 7, 7)}))
    scales = {"s": np.array([1, 1, 2, 2], np.float32), "r": np.array([], np.float32)}
    c.append(Case("Resize", "linear_x2_64c_128", [node("Resize", ["x", "r", "s"], mode="linear")],
                  {"x": rand(1, 64, 128, 128)}, scales, quick=True))
    c.append(Case("Resize", "linear_align_x2_64c_64", [node("Resize", ["x", "r", "s"], mode="linear",
                                                            coordinate_transformation_mode="align_corners")],
                  {"x": rand(1, 64, 64, 64)}, scales))
    c.append(Case("Resize", "nearest_x2_128c_64", [node("Resize", ["x", "r", "s"], mode="nearest")],
                  {"x": rand(1, 128, 64, 64)}, scales))
    # Data movement.
    c.append(Case("Transpose", "nchw_to_nhwc_64c_128", [node("Transpose", ["x"], perm=[0, 2, 3, 1])],
                  {"x": rand(1, 64, 128, 128)}, quick=True))
    c.append(Case("Transpose", "heads_128x12x64", [node("Transpose", ["x"], perm=[0, 2, 1, 3])], {"x": rand(1, 128, 12, 64)}))
    c.append(Case("Concat", "4x64c_64", [node("Concat", ["a", "b", "c", "d"], axis=1)],
                  {n: rand(1, 64, 64, 64, seed=i) for i, n in enumerate("abcd")}))
    c.append(Case("Pad", "reflect_64c_128", [node("Pad", ["x", "p"], mode="reflect")], {"x": rand(1, 64, 128, 128)},
                  {"p": np.array([0, 0, 3, 3, 0, 0, 3, 3], np.int64)}))
    c.append(Case("Slice", "strided_64c_128", [node("Slice", ["x", "s", "e", "a", "t"])], {"x": rand(1, 64, 128, 128)},
                  {"s": np.array([0, 0], np.int64), "e": np.array([128, 128], np.int64), "a": np.array([2, 3], np.int64),
                   "t": np.array([2, 2], np.int64)}))
    c.append(Case("Where", "1x12x128x128", [node("Where", ["c", "x", "z"])],
                  {"c": np.random.default_rng(3).random((1, 1, 128, 128)) < 0.5, "x": rand(1, 12, 128, 128)},
                  {"z": np.array(-1e4, np.float32)}))
    # Elementwise.
    c.append(Case("Add", "broadcast_64c_128", [node("Add", ["x", "b"])], {"x": rand(1, 64, 128, 128)},
                  {"b": rand(1, 64, 1, 1, seed=1)}, quick=True))
    c.append(Case("Erf", "gelu_128x3072", [node("Div", ["x", "r2"], ["t"]), node("Erf", ["t"], ["e"]),
                                           node("Add", ["e", "one"], ["p"]), node("Mul", ["x", "p"], ["q"]),
                                           node("Mul", ["q", "half"])],
                  {"x": rand(1, 128, 3072)}, {"r2": np.array(1.4142135, np.float32), "one": np.array(1, np.float32),
                                              "half": np.array(0.5, np.float32)}))
    c.append(Case("Sigmoid", "1M", [node("Sigmoid", ["x"])], {"x": rand(1 << 20)}))
    c.append(Case("Exp", "1M", [node("Exp", ["x"])], {"x": rand(1 << 20)}))
    c.append(Case("Cast", "f32_to_f16_1M", [node("Cast", ["x"], to=TensorProto.FLOAT16)], {"x": rand(1 << 20)}))
    # Recurrent layers: speech and sequence models.
    c.append(Case("LSTM", "seq100_b1_256", [node("LSTM", ["x", "w", "r", "b"], ["y"], hidden_size=256)],
                  {"x": rand(100, 1, 128)}, {"w": rand(1, 1024, 128, seed=1) * np.float32(0.1),
                                             "r": rand(1, 1024, 256, seed=2) * np.float32(0.1),
                                             "b": rand(1, 2048, seed=3) * np.float32(0.1)}, quick=True))
    c.append(Case("GRU", "seq100_b1_256", [node("GRU", ["x", "w", "r", "b"], ["y"], hidden_size=256)],
                  {"x": rand(100, 1, 128)}, {"w": rand(1, 768, 128, seed=1) * np.float32(0.1),
                                             "r": rand(1, 768, 256, seed=2) * np.float32(0.1),
                                             "b": rand(1, 1536, seed=3) * np.float32(0.1)}))
    c.append(Case("Einsum", "bhqd_bhkd_12x128x64", [node("Einsum", ["q", "k"], equation="bhqd,bhkd->bhqk")],
                  {"q": rand(1, 12, 128, 64), "k": rand(1, 12, 128, 64, seed=1)}))
    return c


def median(values):
    return statistics.median(values)


def run_json(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed ({p.returncode}): {(p.stderr or p.stdout).strip()[-600:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])["latency_ms"]["median"]


def write_case(case, work):
    d = os.path.join(work, case.name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    if not os.path.exists(path):
        onnx.save(case.model(), path)
    files = {}
    for n, a in case.inputs.items():
        f = os.path.join(d, f"{n}.npy")
        if not os.path.exists(f):
            np.save(f, a)
        files[n] = f
    return path, files


def measure(case, args, xonnx, env):
    path, files = write_case(case, args.work)
    xcmd = [xonnx, "bench", path, "--json", "--no-cache", "--iterations", str(args.iterations), "--warmup", "3"]
    for n, f in files.items():
        xcmd += ["--input", f"{n}={f}"]
    ocmd = ["node", os.path.join(ROOT, "bench", "ort_bench.js"), path, "--threads", str(args.threads),
            "--iterations", str(args.iterations), "--warmup", "3"] + [f"{n}=@{f}" for n, f in files.items()]
    xs, os_ = [], []
    for r in range(args.rounds):
        # Alternate which engine goes first, so neither always runs on a warmer machine.
        order = [(xs, xcmd, env), (os_, ocmd, None)]
        for out, cmd, e in (order if r % 2 == 0 else order[::-1]):
            out.append(run_json(cmd, e))
    return median(xs), median(os_)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one round, 5 iterations, one case per op family")
    ap.add_argument("--filter", help="only cases whose OP_LABEL name matches this regular expression")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench_ops"), help="folder for the models")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args()
    all_cases = cases()
    if args.quick:
        all_cases = [c for c in all_cases if c.quick]
        args.rounds, args.iterations = 1, 5
    if args.filter:
        all_cases = [c for c in all_cases if re.search(args.filter, c.name)]
    if args.list:
        for c in all_cases:
            print(c.name)
        return 0
    xonnx = os.environ.get("XONNX", os.path.join(ROOT, "build", "bin", "xonnx"))
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    rows, failures = [], []
    start = time.time()
    for i, case in enumerate(all_cases):
        print(f"[{i + 1}/{len(all_cases)}] {case.name}", file=sys.stderr, flush=True)
        try:
            x, o = measure(case, args, xonnx, env)
            rows.append((x / o, case, x, o))
        except (RuntimeError, ValueError, KeyError) as e:
            failures.append((case.name, str(e)))
    rows.sort(key=lambda r: -r[0])
    if args.markdown:
        print("| op | case | xonnx ms | ORT ms | ratio |\n|---|---|---|---|---|")
        for ratio, c, x, o in rows:
            print(f"| {c.op} | {c.label} | {x:.3f} | {o:.3f} | {ratio:.2f} |")
    else:
        print(f"{'op':<22} {'case':<28} {'xonnx ms':>10} {'ORT ms':>10} {'ratio':>7}")
        for ratio, c, x, o in rows:
            print(f"{c.op:<22} {c.label:<28} {x:10.3f} {o:10.3f} {ratio:7.2f}")
    for name, err in failures:
        print(f"FAILED {name}: {err}")
    if rows:
        ratios = [r[0] for r in rows]
        print(f"median ratio {median(ratios):.2f}, worst {max(ratios):.2f}, {sum(r > 1.5 for r in ratios)} over 1.5, "
              f"{len(rows)} cases ({args.rounds} rounds x {args.iterations} iterations, {args.threads} threads, "
              f"{os.cpu_count()} cores, {time.time() - start:.0f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
