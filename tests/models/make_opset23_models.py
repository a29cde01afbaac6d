#!/usr/bin/python3
"""Models at the newest opsets exporters write (22 and 23), built with
onnx.helper (Debian's onnx knows no opset above 17, so the checker is not
run), with float64 numpy references: OUT/<name>/model.onnx and
test_data_set_<i>/{input_*.pb, output_*.pb}.

usage: make_opset23_models.py OUT_DIR [--ort]

--ort also runs each model on ONNX Runtime (the npm peer) and prints its
error against the reference.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_contrib_models import attend, gelu, heads, init, ort_check, rms_norm, rotate  # noqa: E402
from make_graph_models import save_case  # noqa: E402

rng = np.random.default_rng(29)
F = TensorProto.FLOAT


def opset_model(nodes, name, inputs, outputs, inits, opset):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def rms_block(out_dir, opset=23):
    """A pre-norm MLP block as current exporters write it: RMSNormalization
    (over the last axis, and over the last two with stash_type 1), MatMul,
    Gelu, a residual Add, Transpose and Reshape, at opset 23."""
    s, h, f = 4, 16, 32
    scale = rng.standard_normal(h).astype(np.float32)
    scale2 = rng.standard_normal((s, h)).astype(np.float32)
    w1 = (rng.standard_normal((h, f)) / np.sqrt(h)).astype(np.float32)
    w2 = (rng.standard_normal((f, h)) / np.sqrt(f)).astype(np.float32)
    shape = np.array([0, -1], np.int64)
    from onnx import numpy_helper
    nodes = [
        helper.make_node("RMSNormalization", ["x", "scale"], ["n"], epsilon=1e-6),
        helper.make_node("MatMul", ["n", "w1"], ["u"]),
        helper.make_node("Gelu", ["u"], ["g"]),
        helper.make_node("MatMul", ["g", "w2"], ["d"]),
        helper.make_node("Add", ["x", "d"], ["y"]),
        helper.make_node("RMSNormalization", ["y", "scale2"], ["n2"], axis=-2, stash_type=1),
        helper.make_node("Transpose", ["n2"], ["t"], perm=[0, 2, 1]),
        helper.make_node("Reshape", ["t", "shape"], ["flat"]),
    ]
    b = "batch"
    m = opset_model(nodes, f"opset{opset}_rms_block", [helper.make_tensor_value_info("x", F, [b, s, h])],
                    [helper.make_tensor_value_info("y", F, [b, s, h]),
                     helper.make_tensor_value_info("flat", F, [b, s * h])],
                    [init("scale", scale), init("scale2", scale2), init("w1", w1), init("w2", w2),
                     numpy_helper.from_array(shape, "shape")], opset)
    cases = []
    for batch in (1, 3):
        x = rng.standard_normal((batch, s, h)).astype(np.float32)
        xd = x.astype(np.float64)
        n, _ = rms_norm(xd, 1e-6)
        y = xd + gelu((n * scale) @ w1) @ w2
        n2, _ = rms_norm(y, 1e-5, axes=(-2, -1))
        flat = (n2 * scale2).transpose(0, 2, 1).reshape(batch, -1)
        cases.append(([("x", x)], [("y", y.astype(np.float32)), ("flat", flat.astype(np.float32))]))
    name = f"opset{opset}_rms_block"
    save_case(out_dir, name, m, cases, check=False)
    return name, m, cases


def opset22_convs(out_dir):
    """Ops opset 22 touched (it added bfloat16 to them): Conv, MaxPool,
    AveragePool, HardSwish, Softplus and GlobalAveragePool, at opset 22."""
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("HardSwish", ["c"], ["hs"]),
        helper.make_node("MaxPool", ["hs"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["mp"], ["ap"], kernel_shape=[2, 2], strides=[1, 1]),
        helper.make_node("Softplus", ["ap"], ["sp"]),
        helper.make_node("GlobalAveragePool", ["sp"], ["y"]),
    ]
    m = opset_model(nodes, "opset22_convs", [helper.make_tensor_value_info("x", F, ["batch", 3, 8, 8])],
                    [helper.make_tensor_value_info("y", F, ["batch", 4, 1, 1])], [init("w", w)], 22)
    cases = []
    for batch in (1, 2):
        x = rng.standard_normal((batch, 3, 8, 8)).astype(np.float32)
        xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
        c = np.zeros((batch, 4, 8, 8))
        for i in range(3):
            for j in range(3):
                c += np.einsum("bchw,oc->bohw", xp[:, :, i:i + 8, j:j + 8], w[:, :, i, j])
        hs = c * np.clip(c / 6 + 0.5, 0, 1)
        mp = hs.reshape(batch, 4, 4, 2, 4, 2).max(axis=(3, 5))
        ap = (mp[:, :, :-1, :-1] + mp[:, :, 1:, :-1] + mp[:, :, :-1, 1:] + mp[:, :, 1:, 1:]) / 4
        sp = np.log1p(np.exp(ap))
        cases.append(([("x", x)], [("y", sp.mean(axis=(2, 3), keepdims=True).astype(np.float32))]))
    save_case(out_dir, "opset22_convs", m, cases, check=False)
    return "opset22_convs", m, cases


def rotary(out_dir):
    """RotaryEmbedding (opset 23): a (B, S, hidden) input with position ids
    and a partial rotary dimension, and a (B, N, S, H) input with
    interleaved pairs and per-token caches."""
    n, hd, s, maxpos, rot = 2, 8, 4, 10, 6
    ang = rng.random((maxpos, rot // 2)) * 3
    cos_c, sin_c = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    nodes = [helper.make_node("Cast", ["pos_f"], ["pos"], to=TensorProto.INT64),
             helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], num_heads=n,
                              rotary_embedding_dim=rot),
             helper.make_node("RotaryEmbedding", ["x4", "cos4", "sin4"], ["y4"], interleaved=1)]
    b = "batch"
    m = opset_model(nodes, "opset23_rotary",
                    [helper.make_tensor_value_info("x", F, [b, s, n * hd]), helper.make_tensor_value_info("pos_f", F, [b, s]),
                     helper.make_tensor_value_info("x4", F, [b, n, s, hd]),
                     helper.make_tensor_value_info("cos4", F, [b, s, hd // 2]),
                     helper.make_tensor_value_info("sin4", F, [b, s, hd // 2])],
                    [helper.make_tensor_value_info("y", F, [b, s, n * hd]),
                     helper.make_tensor_value_info("y4", F, [b, n, s, hd])],
                    [init("cos", cos_c), init("sin", sin_c)], 23)
    cases = []
    for batch in (1, 2):
        x = rng.standard_normal((batch, s, n * hd)).astype(np.float32)
        pos = rng.integers(0, maxpos, (batch, s))
        x4 = rng.standard_normal((batch, n, s, hd)).astype(np.float32)
        a4 = rng.random((batch, s, hd // 2)) * 3
        cos4, sin4 = np.cos(a4).astype(np.float32), np.sin(a4).astype(np.float32)
        y = rotate(x.astype(np.float64).reshape(batch, s, n, hd), cos_c.astype(np.float64)[pos],
                   sin_c.astype(np.float64)[pos], rot, False, 1).reshape(batch, s, n * hd)
        y4 = rotate(x4.astype(np.float64), cos4.astype(np.float64), sin4.astype(np.float64), hd, True, 2)
        cases.append(([("x", x), ("pos_f", pos.astype(np.float32)), ("x4", x4), ("cos4", cos4), ("sin4", sin4)],
                      [("y", y.astype(np.float32)), ("y4", y4.astype(np.float32))]))
    save_case(out_dir, "opset23_rotary", m, cases, check=False)
    return "opset23_rotary", m, cases


def attention(out_dir):
    """Attention (opset 23): per-head inputs with grouped-query heads (4 query
    heads over 2 key/value heads), a past, causal masking and an additive
    mask; and inputs with the heads in the last axis, a boolean mask, a
    scale and f32 softmax precision."""
    qn, kvn, hd, s, p = 4, 2, 4, 3, 2
    t = s + p
    add_mask = rng.standard_normal((1, 1, s, t)).astype(np.float32)
    nodes = [
        helper.make_node("Attention", ["q", "k", "v", "add_mask", "past_k", "past_v"], ["y", "present_k", "present_v"],
                         is_causal=1),
        helper.make_node("Cast", ["keep_f"], ["keep"], to=TensorProto.BOOL),
        helper.make_node("Attention", ["q3", "k3", "v3", "keep"], ["y3"], q_num_heads=qn, kv_num_heads=kvn,
                         scale=0.4, softmax_precision=1),
    ]
    b = "batch"
    vi = helper.make_tensor_value_info
    m = opset_model(nodes, "opset23_attention",
                    [vi("q", F, [b, qn, s, hd]), vi("k", F, [b, kvn, s, hd]), vi("v", F, [b, kvn, s, hd]),
                     vi("past_k", F, [b, kvn, p, hd]), vi("past_v", F, [b, kvn, p, hd]),
                     vi("q3", F, [b, s, qn * hd]), vi("k3", F, [b, t, kvn * hd]), vi("v3", F, [b, t, kvn * hd]),
                     vi("keep_f", F, [b, 1, s, t])],
                    [vi("y", F, [b, qn, s, hd]), vi("present_k", F, [b, kvn, t, hd]),
                     vi("present_v", F, [b, kvn, t, hd]), vi("y3", F, [b, s, qn * hd])],
                    [init("add_mask", add_mask)], 23)
    cases = []
    for batch in (1, 2):
        q = rng.standard_normal((batch, qn, s, hd)).astype(np.float32)
        k, v = (rng.standard_normal((batch, kvn, s, hd)).astype(np.float32) for _ in range(2))
        past_k, past_v = (rng.standard_normal((batch, kvn, p, hd)).astype(np.float32) for _ in range(2))
        q3 = rng.standard_normal((batch, s, qn * hd)).astype(np.float32)
        k3, v3 = (rng.standard_normal((batch, t, kvn * hd)).astype(np.float32) for _ in range(2))
        keep = (rng.random((batch, 1, s, t)) > 0.4).astype(np.float32)
        keep[..., 0] = 1  # every query keeps a key
        f = lambda a: a.astype(np.float64)  # noqa: E731
        kk, vv = np.concatenate([f(past_k), f(k)], 2), np.concatenate([f(past_v), f(v)], 2)
        rep = lambda a: np.repeat(a, qn // kvn, axis=1)  # noqa: E731
        y = attend(f(q), rep(kk), rep(vv), 1 / np.sqrt(hd), bias=f(add_mask), causal=True, filt=-np.inf)
        y = y.reshape(batch, s, qn, hd).transpose(0, 2, 1, 3)
        y3 = attend(heads(f(q3), qn), rep(heads(f(k3), kvn)), rep(heads(f(v3), kvn)), 0.4, keep=keep != 0,
                    filt=-np.inf)
        ins = [("q", q), ("k", k), ("v", v), ("past_k", past_k), ("past_v", past_v), ("q3", q3), ("k3", k3),
               ("v3", v3), ("keep_f", keep)]
        outs = [("y", y), ("present_k", kk), ("present_v", vv), ("y3", y3)]
        cases.append((ins, [(n, r.astype(np.float32)) for n, r in outs]))
    save_case(out_dir, "opset23_attention", m, cases, check=False)
    return "opset23_attention", m, cases


if __name__ == "__main__":
    out = sys.argv[1]
    built = [rms_block(out), opset22_convs(out), rotary(out), attention(out)]
    if "--ort" in sys.argv[2:]:
        for b in built:
            ort_check(*b)
