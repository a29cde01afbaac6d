#!/usr/bin/python3
"""Builds models with onnx.helper that exercise control flow, detection-style
post-processing and quantization, with references computed in numpy:
OUT/<name>/model.onnx and test_data_set_<i>/{input_*.pb, output_*.pb}.

usage: make_graph_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(11)


def save_case(out_dir, name, model, cases, check=True):
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for i, (inputs, outputs) in enumerate(cases):
        data = os.path.join(folder, f"test_data_set_{i}")
        os.makedirs(data, exist_ok=True)
        for k, (n, v) in enumerate(inputs):
            with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, n).SerializeToString())
        for k, (n, v) in enumerate(outputs):
            with open(os.path.join(data, f"output_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, n).SerializeToString())
    print(f"wrote {folder}", file=sys.stderr)


def model(nodes, name, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def control_flow(out_dir):
    """If on a runtime condition, then a Loop with a scan output."""
    f = TensorProto.FLOAT
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "two"], ["t_out"])], "then", [],
        [helper.make_tensor_value_info("t_out", f, [4, 8])])
    else_g = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Add", ["a", "one"], ["e_out"])], "else", [],
        [helper.make_tensor_value_info("e_out", f, [4, 8])])
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=f),
         helper.make_node("Mul", ["v_in", "half"], ["h"]),
         helper.make_node("Add", ["h", "fi"], ["v_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Identity", ["v_out"], ["scan"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", f, [4, 8])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), helper.make_tensor_value_info("v_out", f, [4, 8]),
         helper.make_tensor_value_info("scan", f, [4, 8])])
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["cond"]),
        helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["trips", "true", "y"], ["v", "scans"], body=body),
    ]
    inits = [numpy_helper.from_array(np.array(v, dtype=t), n) for n, v, t in
             [("two", 2.0, np.float32), ("one", 1.0, np.float32), ("half", 0.5, np.float32), ("zero", 0.0, np.float32),
              ("trips", 3, np.int64), ("true", True, np.bool_)]]
    m = model(nodes, "control_flow", [helper.make_tensor_value_info("x", f, [4, 8])],
              [helper.make_tensor_value_info("v", f, [4, 8]), helper.make_tensor_value_info("scans", f, [3, 4, 8])], inits)
    cases = []
    for shift in (0.7, -0.7):
        x = (rng.standard_normal((4, 8)) + shift).astype(np.float32)
        y = np.maximum(x, 0) * 2 if x.sum() > 0 else np.abs(x) + 1
        v, scans = y, []
        for i in range(3):
            v = (v * np.float32(0.5) + np.float32(i)).astype(np.float32)
            scans.append(v)
        cases.append(([("x", x)], [("v", v), ("scans", np.stack(scans))]))
    save_case(out_dir, "control_flow", m, cases)


def while_loop(out_dir):
    """A Loop whose trip count is a runtime input (an HLO while), reading an
    outer-scope value in its body."""
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Mul", ["v_in", "k"], ["m"]),
         helper.make_node("Add", ["m", "x"], ["v_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", f, [3])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), helper.make_tensor_value_info("v_out", f, [3])])
    inits = [numpy_helper.from_array(np.array(1.5, np.float32), "k"), numpy_helper.from_array(np.array(True), "true"),
             numpy_helper.from_array(np.zeros(3, np.float32), "v0")]
    m = model([helper.make_node("Loop", ["n", "true", "v0"], ["v"], body=body)], "while_loop",
              [helper.make_tensor_value_info("x", f, [3]), helper.make_tensor_value_info("n", TensorProto.INT64, [])],
              [helper.make_tensor_value_info("v", f, [3])], inits)
    cases = []
    for n in (3, 5):
        x = rng.standard_normal(3).astype(np.float32)
        v = np.zeros(3, np.float32)
        for _ in range(n):
            v = (v * np.float32(1.5) + x).astype(np.float32)
        cases.append(([("x", x), ("n", np.array(n, np.int64))], [("v", v)]))
    save_case(out_dir, "while_loop", m, cases)


def nms_reference(boxes, scores, max_out, iou_th, score_th):
    def corners(b):
        y1, x1, y2, x2 = b
        return min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2)

    def iou(a, b):
        a, b = corners(a), corners(b)
        ih = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        iw = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        inter = ih * iw
        union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
        return 0.0 if union <= 0 else inter / union

    order = sorted([k for k in range(len(scores)) if scores[k] > score_th], key=lambda k: -scores[k])
    kept = []
    for k in order:
        if len(kept) >= max_out:
            break
        if all(iou(boxes[k], boxes[s]) <= iou_th for s in kept):
            kept.append(k)
    return kept


def detection(out_dir):
    """Sigmoid scores, TopK, gather the boxes, NonMaxSuppression."""
    f = TensorProto.FLOAT
    n, k = 50, 10
    nodes = [
        helper.make_node("Sigmoid", ["logits"], ["scores"]),
        helper.make_node("TopK", ["scores", "k"], ["top_scores", "top_idx"], axis=-1),
        helper.make_node("Reshape", ["top_idx", "flat"], ["idx"]),
        helper.make_node("Gather", ["boxes", "idx"], ["top_boxes"], axis=1),
        helper.make_node("Reshape", ["top_scores", "score_shape"], ["s3"]),
        helper.make_node("NonMaxSuppression", ["top_boxes", "s3", "max_out", "iou", "score_th"], ["selected"]),
        # After the host-side NMS, a device program for the number of boxes kept.
        helper.make_node("Gather", ["selected", "col2"], ["kept_idx"], axis=1),
        helper.make_node("Gather", ["top_boxes", "kept_idx"], ["kept_boxes"], axis=1),
    ]
    inits = [numpy_helper.from_array(np.array(v, dtype=t), name) for name, v, t in
             [("k", [k], np.int64), ("flat", [k], np.int64), ("score_shape", [1, 1, k], np.int64),
              ("max_out", [8], np.int64), ("iou", [0.1], np.float32), ("score_th", [0.3], np.float32),
              ("col2", 2, np.int64)]]
    m = model(nodes, "detection", [helper.make_tensor_value_info("logits", f, [1, n]),
                                    helper.make_tensor_value_info("boxes", f, [1, n, 4])],
              [helper.make_tensor_value_info("top_scores", f, [1, k]),
               helper.make_tensor_value_info("selected", TensorProto.INT64, [None, 3]),
               helper.make_tensor_value_info("kept_boxes", f, [1, None, 4])], inits)
    cases = []
    for _ in range(4):  # numbers of kept boxes differ between cases
        logits = rng.standard_normal((1, n)).astype(np.float32)
        corner = rng.random((1, n, 2)).astype(np.float32) * 0.8
        boxes = np.concatenate([corner, corner + 0.1 + rng.random((1, n, 2)).astype(np.float32) * 0.3], axis=2)
        scores = (1 / (1 + np.exp(-logits.astype(np.float64)))).astype(np.float32)
        idx = np.argsort(-scores[0], kind="stable")[:k]
        top = scores[0][idx]
        kept = nms_reference(boxes[0][idx], top, 8, 0.1, 0.3)
        selected = np.array([[0, 0, j] for j in kept], dtype=np.int64).reshape(-1, 3)
        kept_boxes = boxes[0][idx][np.array(kept, dtype=np.int64)].reshape(1, -1, 4)
        cases.append(([("logits", logits), ("boxes", boxes)],
                      [("top_scores", top[None, :]), ("selected", selected), ("kept_boxes", kept_boxes)]))
    save_case(out_dir, "detection", m, cases)


def quantized(out_dir):
    """QuantizeLinear, QLinearConv with per-channel weight scales, DequantizeLinear, Relu."""
    f = TensorProto.FLOAT
    w = rng.integers(-60, 60, size=(4, 3, 3, 3)).astype(np.int8)
    w_scale = (rng.random(4) * 0.01 + 0.005).astype(np.float32)
    bias = rng.integers(-500, 500, size=4).astype(np.int32)
    consts = [("x_scale", np.float32(0.05)), ("x_zp", np.uint8(128)), ("w", w), ("w_scale", w_scale),
              ("w_zp", np.zeros(4, np.int8)), ("y_scale", np.float32(0.1)), ("y_zp", np.uint8(128)), ("bias", bias)]
    inits = [numpy_helper.from_array(np.array(v), name) for name, v in consts]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"]),
        helper.make_node("QLinearConv", ["xq", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp", "bias"],
                         ["yq"], pads=[1, 1, 1, 1]),
        helper.make_node("DequantizeLinear", ["yq", "y_scale", "y_zp"], ["yd"]),
        helper.make_node("Relu", ["yd"], ["y"]),
    ]
    m = model(nodes, "quantized", [helper.make_tensor_value_info("x", f, [1, 3, 8, 8])],
              [helper.make_tensor_value_info("y", f, [1, 4, 8, 8])], inits, opset=13)
    cases = []
    for _ in range(2):
        x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32) * 2
        xq = np.clip(np.rint(x / np.float32(0.05)) + 128, 0, 255).astype(np.int32) - 128
        xp = np.pad(xq, ((0, 0), (0, 0), (1, 1), (1, 1)))
        acc = np.zeros((1, 4, 8, 8), np.int32)
        for o in range(4):
            for i in range(8):
                for j in range(8):
                    acc[0, o, i, j] = np.sum(xp[0, :, i:i + 3, j:j + 3].astype(np.int32) * w[o].astype(np.int32))
        acc += bias[None, :, None, None]
        in_scale = (np.float32(0.05) * w_scale).astype(np.float32)[None, :, None, None]
        yq = np.clip(np.rint(acc.astype(np.float32) * in_scale / np.float32(0.1)) + 128, 0, 255).astype(np.uint8)
        y = np.maximum((yq.astype(np.float32) - 128) * np.float32(0.1), 0).astype(np.float32)
        cases.append(([("x", x)], [("y", y)]))
    save_case(out_dir, "quantized", m, cases)


def conv2d(x, w, pad):
    """NCHW x OIHW, stride 1, zero padding `pad`, in x's dtype (int64 or float64)."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    patches = np.stack([xp[:, :, i:i + oh, j:j + ow] for i in range(kh) for j in range(kw)], axis=2)
    return np.einsum("ncphw,ocp->nohw", patches, w.reshape(o, c, kh * kw))


def dynamic_quantize(x):
    """DynamicQuantizeLinear in float32 as the specification writes it."""
    x = x.astype(np.float32)
    mx, mn = np.float32(max(np.float32(0), x.max())), np.float32(min(np.float32(0), x.min()))
    scale = np.float32((mx - mn) / np.float32(255))
    zp = np.float32(np.clip(np.rint(np.float32(0) - mn / scale), 0, 255))
    q = np.clip(np.rint(x / scale) + zp, 0, 255).astype(np.uint8)
    return q, scale, np.uint8(zp)


def quantized_dynamic(out_dir):
    """As ONNX Runtime's dynamic quantizer writes a CNN's layers: DynamicQuantizeLinear, ConvInteger and
    MatMulInteger on uint8 weights about 128, Cast and Mul by the scales. Large enough for oneDNN's int8
    kernels; the integer sums are exact, so the reference matches to f32 rounding."""
    f = TensorProto.FLOAT
    w1 = rng.integers(1, 256, size=(24, 16, 3, 3)).astype(np.uint8)
    w2 = rng.integers(1, 256, size=(24, 8)).astype(np.uint8)
    s1, s2 = np.float32(0.002), np.float32(0.003)
    consts = [("w1", w1), ("w1_zp", np.uint8(128)), ("w1_scale", s1), ("w2", w2), ("w2_zp", np.uint8(128)),
              ("w2_scale", s2), ("perm_shape", np.array([200, 24], np.int64))]
    inits = [numpy_helper.from_array(np.array(v), name) for name, v in consts]
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("ConvInteger", ["xq", "w1", "xz", "w1_zp"], ["c32"], pads=[1, 1, 1, 1]),
        helper.make_node("Cast", ["c32"], ["cf"], to=f),
        helper.make_node("Mul", ["xs", "w1_scale"], ["cs"]),
        helper.make_node("Mul", ["cf", "cs"], ["c"]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Transpose", ["r"], ["rt"], perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["rt", "perm_shape"], ["rows"]),
        helper.make_node("DynamicQuantizeLinear", ["rows"], ["rq", "rs", "rz"]),
        helper.make_node("MatMulInteger", ["rq", "w2", "rz", "w2_zp"], ["m32"]),
        helper.make_node("Cast", ["m32"], ["mf"], to=f),
        helper.make_node("Mul", ["rs", "w2_scale"], ["ms"]),
        helper.make_node("Mul", ["mf", "ms"], ["y"]),
    ]
    m = model(nodes, "quantized_dynamic", [helper.make_tensor_value_info("x", f, [2, 16, 10, 10])],
              [helper.make_tensor_value_info("c", f, [2, 24, 10, 10]), helper.make_tensor_value_info("y", f, [200, 8])],
              inits)
    cases = []
    for _ in range(2):
        x = rng.standard_normal((2, 16, 10, 10)).astype(np.float32)
        xq, xs, xz = dynamic_quantize(x)
        acc = conv2d(xq.astype(np.int64) - int(xz), w1.astype(np.int64) - 128, 1)
        c = (acc.astype(np.float32) * np.float32(xs * s1)).astype(np.float32)
        rows = np.maximum(c, 0).transpose(0, 2, 3, 1).reshape(200, 24)
        rq, rs, rz = dynamic_quantize(rows)
        m32 = (rq.astype(np.int64) - int(rz)) @ (w2.astype(np.int64) - 128)
        y = (m32.astype(np.float32) * np.float32(rs * s2)).astype(np.float32)
        cases.append(([("x", x)], [("c", c), ("y", y)]))
    save_case(out_dir, "quantized_dynamic", m, cases)


def quantized_qdq(out_dir):
    """As ONNX Runtime's static quantizer writes layers (QDQ): QuantizeLinear -> DequantizeLinear on the
    activation, DequantizeLinear of int8 weights with per-output-channel scales, into Conv and MatMul. The
    reference computes ONNX's float definition in float64; xonnx computes exact integer sums times the
    scales, which agree to f32 rounding."""
    f = TensorProto.FLOAT
    w1 = rng.integers(-127, 128, size=(24, 16, 3, 3)).astype(np.int8)
    s1 = (rng.random(24) * 0.004 + 0.001).astype(np.float32)
    b1 = rng.standard_normal(24).astype(np.float32)
    w2 = rng.integers(-127, 128, size=(24, 8)).astype(np.int8)
    # A symmetric quantizer's scale is a column's largest magnitude / 127:
    # every column has a value of +-127. (The importer folds these small
    # weights' dequantization; xonnx recovers the integers from that.)
    w2[rng.integers(0, 24, size=8), np.arange(8)] = rng.choice(np.array([-127, 127], np.int8), size=8)
    s2 = (rng.random(8) * 0.004 + 0.001).astype(np.float32)
    sx, zx, sy, zy = np.float32(0.02), np.uint8(120), np.float32(0.05), np.uint8(0)
    consts = [("w1", w1), ("w1_scale", s1), ("w1_zp", np.zeros(24, np.int8)), ("b1", b1), ("sx", sx), ("zx", zx),
              ("w2", w2), ("w2_scale", s2), ("w2_zp", np.zeros(8, np.int8)), ("sy", sy), ("zy", zy),
              ("rows_shape", np.array([200, 24], np.int64))]
    inits = [numpy_helper.from_array(np.array(v), name) for name, v in consts]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w1", "w1_scale", "w1_zp"], ["w1d"], axis=0),
        helper.make_node("Conv", ["xd", "w1d", "b1"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Transpose", ["r"], ["rt"], perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["rt", "rows_shape"], ["rows"]),
        helper.make_node("QuantizeLinear", ["rows", "sy", "zy"], ["rq"]),
        helper.make_node("DequantizeLinear", ["rq", "sy", "zy"], ["rd"]),
        helper.make_node("DequantizeLinear", ["w2", "w2_scale", "w2_zp"], ["w2d"], axis=1),
        helper.make_node("MatMul", ["rd", "w2d"], ["y"]),
    ]
    m = model(nodes, "quantized_qdq", [helper.make_tensor_value_info("x", f, [2, 16, 10, 10])],
              [helper.make_tensor_value_info("c", f, [2, 24, 10, 10]), helper.make_tensor_value_info("y", f, [200, 8])],
              inits)
    cases = []
    for _ in range(2):
        x = rng.standard_normal((2, 16, 10, 10)).astype(np.float32)
        xq = np.clip(np.rint(x / sx) + np.float32(zx), 0, 255)
        xd = (xq.astype(np.float64) - float(zx)) * float(sx)
        w1d = w1.astype(np.float64) * s1.astype(np.float64)[:, None, None, None]
        c = conv2d(xd, w1d, 1) + b1.astype(np.float64)[None, :, None, None]
        rows = np.maximum(c, 0).transpose(0, 2, 3, 1).reshape(200, 24).astype(np.float32)
        rq = np.clip(np.rint(rows / sy) + np.float32(zy), 0, 255)
        y = ((rq.astype(np.float64) - float(zy)) * float(sy)) @ (w2.astype(np.float64) * s2.astype(np.float64))
        cases.append(([("x", x)], [("c", c.astype(np.float32)), ("y", y.astype(np.float32))]))
    save_case(out_dir, "quantized_qdq", m, cases)


def resize_antialias(out_dir):
    """Opset-18 Resize with antialias, against torch's antialiased interpolate
    (exclude_outside=1 and, for cubic, a=-0.5 are torch's conventions)."""
    import torch

    f = TensorProto.FLOAT
    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["lin"], mode="linear", antialias=1, exclude_outside=1),
        helper.make_node("Resize", ["x", "", "scales"], ["cub"], mode="cubic", antialias=1, exclude_outside=1,
                         cubic_coeff_a=-0.5),
    ]
    inits = [numpy_helper.from_array(np.array([1, 1, 0.4, 0.5], np.float32), "scales")]
    m = model(nodes, "resize_antialias", [helper.make_tensor_value_info("x", f, [1, 2, 20, 16])],
              [helper.make_tensor_value_info("lin", f, [1, 2, 8, 8]), helper.make_tensor_value_info("cub", f, [1, 2, 8, 8])],
              inits, opset=18)
    cases = []
    for _ in range(2):
        x = rng.standard_normal((1, 2, 20, 16)).astype(np.float32)
        t = torch.from_numpy(x)
        lin = torch.nn.functional.interpolate(t, size=(8, 8), mode="bilinear", antialias=True, align_corners=False)
        cub = torch.nn.functional.interpolate(t, size=(8, 8), mode="bicubic", antialias=True, align_corners=False)
        cases.append(([("x", x)], [("lin", lin.numpy()), ("cub", cub.numpy())]))
    # libonnx 1.12's checker predates opset 18, so save without it.
    save_case(out_dir, "resize_antialias", m, cases, check=False)


def einsum(out_dir):
    """Einsum with ellipses, diagonals, implicit outputs and batch products, against numpy."""
    f = TensorProto.FLOAT
    cases = [("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]), ("ii->i", [(4, 4)]), ("bij,bjk", [(2, 3, 4), (2, 4, 5)]),
             ("...i,...i->...", [(3, 2, 5), (3, 2, 5)]), ("iij->j", [(3, 3, 2)])]
    for n, (eq, shapes) in enumerate(cases):
        xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        y = np.asarray(np.einsum(eq, *xs), dtype=np.float32)
        names = [f"x{i}" for i in range(len(shapes))]
        node = helper.make_node("Einsum", names, ["y"], equation=eq)
        m = model([node], f"einsum_{n}", [helper.make_tensor_value_info(nm, f, list(s)) for nm, s in zip(names, shapes)],
                  [helper.make_tensor_value_info("y", f, list(y.shape))], opset=12)
        save_case(out_dir, f"einsum_{n}", m, [(list(zip(names, xs)), [("y", y)])])


def long_scan(out_dir):
    """A Scan over 5000 steps (longer than any unrolling would allow, so it is
    an HLO while): two scan inputs, one read backwards, a decaying carried sum,
    and two scan outputs, one stacked along axis 1 and one written backwards;
    then a Loop of 4500 iterations with a scan output."""
    f = TensorProto.FLOAT
    steps = 5000
    body = helper.make_graph(
        [helper.make_node("Mul", ["s_in", "decay"], ["d"]),
         helper.make_node("Mul", ["a", "b"], ["ab"]),
         helper.make_node("Add", ["d", "ab"], ["s_out"]),
         helper.make_node("Sub", ["a", "b"], ["diff"])], "scan_body",
        [helper.make_tensor_value_info("s_in", f, [3]), helper.make_tensor_value_info("a", f, [3]),
         helper.make_tensor_value_info("b", f, [3])],
        [helper.make_tensor_value_info("s_out", f, [3]), helper.make_tensor_value_info("y1", f, [3]),
         helper.make_tensor_value_info("diff", f, [3])])
    # y1 is s_out itself (the running value after each step).
    body.node.append(helper.make_node("Identity", ["s_out"], ["y1"]))
    loop_body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=f),
         helper.make_node("Mul", ["fi", "tiny"], ["step"]),
         helper.make_node("Add", ["v_in", "step"], ["v_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Identity", ["v_out"], ["row"])], "loop_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", f, [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), helper.make_tensor_value_info("v_out", f, [2]),
         helper.make_tensor_value_info("row", f, [2])])
    loops = 4500
    nodes = [
        helper.make_node("Scan", ["s0", "xa", "xb"], ["s", "ys", "diffs"], body=body, num_scan_inputs=2,
                         scan_input_directions=[0, 1], scan_input_axes=[0, 1], scan_output_axes=[1, 0],
                         scan_output_directions=[0, 1]),
        helper.make_node("Loop", ["trips", "", "v0"], ["v", "rows"], body=loop_body),
    ]
    inits = [numpy_helper.from_array(np.array(0.999, np.float32), "decay"),
             numpy_helper.from_array(np.array(1e-3, np.float32), "tiny"),
             numpy_helper.from_array(np.array(loops, np.int64), "trips")]
    m = model(nodes, "long_scan",
              [helper.make_tensor_value_info("s0", f, [3]), helper.make_tensor_value_info("xa", f, [steps, 3]),
               helper.make_tensor_value_info("xb", f, [3, steps]), helper.make_tensor_value_info("v0", f, [2])],
              [helper.make_tensor_value_info("s", f, [3]), helper.make_tensor_value_info("ys", f, [3, steps]),
               helper.make_tensor_value_info("diffs", f, [steps, 3]), helper.make_tensor_value_info("v", f, [2]),
               helper.make_tensor_value_info("rows", f, [loops, 2])], inits)
    s0 = rng.standard_normal(3).astype(np.float32)
    xa = rng.standard_normal((steps, 3)).astype(np.float32)
    xb = rng.standard_normal((3, steps)).astype(np.float32)
    v0 = rng.standard_normal(2).astype(np.float32)
    s, ys, diffs = s0.copy(), [], []
    for t in range(steps):
        a, b = xa[t], xb[:, steps - 1 - t]
        s = (s * np.float32(0.999) + a * b).astype(np.float32)
        ys.append(s)
        diffs.append(a - b)
    v, rows = v0.copy(), []
    for i in range(loops):
        v = (v + np.float32(i) * np.float32(1e-3)).astype(np.float32)
        rows.append(v)
    cases = [([("s0", s0), ("xa", xa), ("xb", xb), ("v0", v0)],
              [("s", s), ("ys", np.stack(ys, axis=1)), ("diffs", np.stack(diffs[::-1], axis=0)), ("v", v),
               ("rows", np.stack(rows))])]
    save_case(out_dir, "long_scan", m, cases)


if __name__ == "__main__":
    out = sys.argv[1]
    control_flow(out)
    while_loop(out)
    long_scan(out)
    detection(out)
    quantized(out)
    quantized_dynamic(out)
    quantized_qdq(out)
    resize_antialias(out)
    einsum(out)
