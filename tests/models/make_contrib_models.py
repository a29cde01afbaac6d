#!/usr/bin/python3
"""Models with ONNX Runtime's own ops, as its transformer optimizer and
exporters write them (com.microsoft Gelu, BiasGelu, FastGelu, QuickGelu,
SkipLayerNormalization, SkipSimplifiedLayerNormalization, Attention,
MultiHeadAttention, GroupQueryAttention, RotaryEmbedding, MatMulNBits,
DynamicQuantizeMatMul, QGemm, QLinearAdd, QLinearMul, QLinearSigmoid,
QLinearLeakyRelu, QLinearConcat, QLinearGlobalAveragePool, FusedConv, FusedGemm,
FusedMatMul, EmbedLayerNormalization, BiasAdd, and SimplifiedLayerNormalization in the ONNX domain), with references computed
in float64 numpy from ONNX Runtime's operator schemas: OUT/<name>/model.onnx
and test_data_set_<i>/{input_*.pb, output_*.pb}.

usage: make_contrib_models.py OUT_DIR [--ort]

--ort also runs each model on ONNX Runtime (the npm onnxruntime-node peer in
bench/node_modules) and prints its relative L2 error against the numpy
reference, to check the references themselves.
"""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_graph_models import save_case  # noqa: E402

rng = np.random.default_rng(23)
F = TensorProto.FLOAT
ERF = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1 + ERF(x / math.sqrt(2)))


def fast_gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def quick_gelu(x, alpha):
    return x / (1 + np.exp(-alpha * x))


def layer_norm(s, eps):
    mean = s.mean(-1, keepdims=True)
    var = ((s - mean) ** 2).mean(-1, keepdims=True)
    return (s - mean) / np.sqrt(var + eps), mean, 1 / np.sqrt(var + eps)


def rms_norm(s, eps, axes=(-1,)):
    inv = 1 / np.sqrt((s ** 2).mean(axis=axes, keepdims=True) + eps)
    return s * inv, inv


def contrib_model(nodes, name, inputs, outputs, inits):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    return m


def init(name, v):
    from onnx import numpy_helper
    return numpy_helper.from_array(v.astype(np.float32), name)


def activations(out_dir):
    """Each com.microsoft activation on one input, with biases along the last axis."""
    h = 24
    bias = rng.standard_normal(h).astype(np.float32)
    nodes = [
        helper.make_node("Gelu", ["x"], ["gelu"], domain="com.microsoft"),
        helper.make_node("BiasGelu", ["x", "bias"], ["bias_gelu"], domain="com.microsoft"),
        helper.make_node("FastGelu", ["x", "bias"], ["fast_gelu_bias"], domain="com.microsoft"),
        helper.make_node("FastGelu", ["x"], ["fast_gelu"], domain="com.microsoft"),
        helper.make_node("QuickGelu", ["x"], ["quick_gelu"], domain="com.microsoft", alpha=1.5),
        helper.make_node("QuickGelu", ["x"], ["quick_gelu_default"], domain="com.microsoft"),
    ]
    outs = ["gelu", "bias_gelu", "fast_gelu_bias", "fast_gelu", "quick_gelu", "quick_gelu_default"]
    m = contrib_model(nodes, "ms_activations", [helper.make_tensor_value_info("x", F, ["batch", 5, h])],
                      [helper.make_tensor_value_info(o, F, ["batch", 5, h]) for o in outs], [init("bias", bias)])
    cases = []
    for batch in (1, 3):
        x = (3 * rng.standard_normal((batch, 5, h))).astype(np.float32)
        xd, bd = x.astype(np.float64), bias.astype(np.float64)
        ref = [gelu(xd), gelu(xd + bd), fast_gelu(xd + bd), fast_gelu(xd), quick_gelu(xd, 1.5), quick_gelu(xd, 1.702)]
        cases.append(([("x", x)], [(o, r.astype(np.float32)) for o, r in zip(outs, ref)]))
    save_case(out_dir, "ms_activations", m, cases, check=False)
    return "ms_activations", m, cases


def skip_norms(out_dir):
    """SkipLayerNormalization with beta and bias and all four outputs, one
    with a skip broadcast over the batch; SkipSimplifiedLayerNormalization
    with its sum output; SimplifiedLayerNormalization (ONNX domain) over the
    last two axes with its inverse RMS."""
    s, h = 6, 32
    gamma, beta, bias = (rng.standard_normal(h).astype(np.float32) for _ in range(3))
    gamma2 = rng.standard_normal(s * h).astype(np.float32).reshape(s, h)
    nodes = [
        helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"],
                         ["ln", "ln_mean", "ln_inv_std", "ln_sum"], domain="com.microsoft", epsilon=1e-5),
        helper.make_node("SkipLayerNormalization", ["x", "skip1", "gamma"], ["ln_b"], domain="com.microsoft"),
        helper.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"],
                         ["rms", "", "rms_inv", "rms_sum"], domain="com.microsoft", epsilon=1e-6),
        helper.make_node("SimplifiedLayerNormalization", ["x", "gamma2"], ["srms", "srms_inv"], axis=-2,
                         epsilon=1e-5),
    ]
    b = "batch"
    m = contrib_model(
        nodes, "ms_skip_norms",
        [helper.make_tensor_value_info("x", F, [b, s, h]), helper.make_tensor_value_info("skip", F, [b, s, h]),
         helper.make_tensor_value_info("skip1", F, [1, s, h])],
        [helper.make_tensor_value_info("ln", F, [b, s, h]), helper.make_tensor_value_info("ln_mean", F, [b, s, 1]),
         helper.make_tensor_value_info("ln_inv_std", F, [b, s, 1]), helper.make_tensor_value_info("ln_sum", F, [b, s, h]),
         helper.make_tensor_value_info("ln_b", F, [b, s, h]), helper.make_tensor_value_info("rms", F, [b, s, h]),
         helper.make_tensor_value_info("rms_inv", F, [b, s, 1]), helper.make_tensor_value_info("rms_sum", F, [b, s, h]),
         helper.make_tensor_value_info("srms", F, [b, s, h]), helper.make_tensor_value_info("srms_inv", F, [b, 1, 1])],
        [init("gamma", gamma), init("beta", beta), init("bias", bias), init("gamma2", gamma2)])
    cases = []
    for batch in (1, 4):
        x = (2 + rng.standard_normal((batch, s, h))).astype(np.float32)
        skip = rng.standard_normal((batch, s, h)).astype(np.float32)
        skip1 = rng.standard_normal((1, s, h)).astype(np.float32)
        xd, sd, s1 = x.astype(np.float64), skip.astype(np.float64), skip1.astype(np.float64)
        total = xd + sd + bias
        y, mean, inv = layer_norm(total, 1e-5)
        yb, _, _ = layer_norm(xd + s1, 1e-12)
        r, rinv = rms_norm(total, 1e-6)
        sr, srinv = rms_norm(xd, 1e-5, axes=(-2, -1))
        outs = [("ln", y * gamma + beta), ("ln_mean", mean), ("ln_inv_std", inv), ("ln_sum", total),
                ("ln_b", yb * gamma), ("rms", r * gamma), ("rms_inv", rinv), ("rms_sum", total),
                ("srms", sr * gamma2), ("srms_inv", srinv)]
        cases.append(([("x", x), ("skip", skip), ("skip1", skip1)], [(n, v.astype(np.float32)) for n, v in outs]))
    save_case(out_dir, "ms_skip_norms", m, cases, check=False)
    return "ms_skip_norms", m, cases


def attend(q, k, v, scale, keep=None, bias=None, causal=False, filt=-10000.0):
    """softmax(q k^T scale + bias + filt where not kept) v for (B, N, S, H) arrays; returns (B, S, N*Hv)."""
    scores = np.einsum("bnsh,bnth->bnst", q, k) * scale
    if bias is not None:
        scores = scores + bias
    s, t = q.shape[2], k.shape[2]
    kept = np.ones(scores.shape, bool) if keep is None else np.broadcast_to(keep, scores.shape)
    if causal:
        kept = kept & (np.arange(t)[None, :] <= np.arange(s)[:, None] + (t - s))
    scores = scores + np.where(kept, 0.0, filt)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    out = np.einsum("bnst,bnth->bnsh", p, v)
    return out.transpose(0, 2, 1, 3).reshape(q.shape[0], s, -1)


def heads(x, n):
    b, s, d = x.shape
    return x.reshape(b, s, n, d // n).transpose(0, 2, 1, 3)


def attention_ops(out_dir):
    """MultiHeadAttention with a projection bias, past keys and values, a
    key padding mask and an attention bias; a causal one with its own
    scale; Attention with fused projections, a raw mask, past and causal
    masking. Masks arrive as float inputs cast to int32 (as exporters often
    write them)."""
    n, hd, s, l, p = 2, 4, 5, 5, 3
    d = n * hd
    t = p + l
    bias = rng.standard_normal(3 * d).astype(np.float32) * 0.5
    attn_bias = rng.standard_normal((1, n, s, t)).astype(np.float32)
    din = 6
    w = rng.standard_normal((din, 3 * d)).astype(np.float32) * 0.4
    wb = rng.standard_normal(3 * d).astype(np.float32) * 0.2
    ms = "com.microsoft"
    nodes = [
        helper.make_node("Cast", ["mask_f"], ["mask"], to=TensorProto.INT32),
        helper.make_node("MultiHeadAttention", ["q", "k", "v", "bias", "mask", "attn_bias", "past_k", "past_v"],
                         ["mha", "present_k", "present_v"], domain=ms, num_heads=n),
        helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["mha_causal"], domain=ms, num_heads=n,
                         unidirectional=1, scale=0.3),
        helper.make_node("Attention", ["x", "w", "wb", "mask", "past"], ["att", "present"], domain=ms, num_heads=n,
                         unidirectional=1),
    ]
    bt = "batch"
    m = contrib_model(
        nodes, "ms_attention",
        [helper.make_tensor_value_info("q", F, [bt, s, d]), helper.make_tensor_value_info("k", F, [bt, l, d]),
         helper.make_tensor_value_info("v", F, [bt, l, d]), helper.make_tensor_value_info("mask_f", F, [bt, t]),
         helper.make_tensor_value_info("past_k", F, [bt, n, p, hd]),
         helper.make_tensor_value_info("past_v", F, [bt, n, p, hd]), helper.make_tensor_value_info("x", F, [bt, s, din]),
         helper.make_tensor_value_info("past", F, [2, bt, n, p, hd])],
        [helper.make_tensor_value_info("mha", F, [bt, s, d]), helper.make_tensor_value_info("present_k", F, [bt, n, t, hd]),
         helper.make_tensor_value_info("present_v", F, [bt, n, t, hd]),
         helper.make_tensor_value_info("mha_causal", F, [bt, s, d]), helper.make_tensor_value_info("att", F, [bt, s, d]),
         helper.make_tensor_value_info("present", F, [2, bt, n, t, hd])],
        [init("bias", bias), init("attn_bias", attn_bias), init("w", w), init("wb", wb)])
    cases = []
    for batch in (1, 3):
        q, k, v = (rng.standard_normal((batch, s, d)).astype(np.float32) for _ in range(3))
        mask = (rng.random((batch, t)) > 0.3).astype(np.float32)
        mask[:, -1] = 1  # every row keeps a key
        past_k, past_v = (rng.standard_normal((batch, n, p, hd)).astype(np.float32) for _ in range(2))
        x = rng.standard_normal((batch, s, din)).astype(np.float32)
        past = rng.standard_normal((2, batch, n, p, hd)).astype(np.float32)
        f = lambda a: a.astype(np.float64)  # noqa: E731
        keep = f(mask)[:, None, None, :] != 0
        kq, kk, kv = heads(f(q) + bias[:d], n), heads(f(k) + bias[d:2 * d], n), heads(f(v) + bias[2 * d:], n)
        kk, kv = np.concatenate([f(past_k), kk], 2), np.concatenate([f(past_v), kv], 2)
        mha = attend(kq, kk, kv, 1 / math.sqrt(hd), keep=keep, bias=f(attn_bias))
        causal = attend(heads(f(q), n), heads(f(k), n), heads(f(v), n), 0.3, causal=True)
        qkv = f(x) @ f(w) + wb
        aq, ak, av = heads(qkv[..., :d], n), heads(qkv[..., d:2 * d], n), heads(qkv[..., 2 * d:], n)
        ak, av = np.concatenate([f(past[0]), ak], 2), np.concatenate([f(past[1]), av], 2)
        att = attend(aq, ak, av, 1 / math.sqrt(hd), keep=keep, causal=True)
        outs = [("mha", mha), ("present_k", kk), ("present_v", kv), ("mha_causal", causal), ("att", att),
                ("present", np.stack([ak, av]))]
        ins = [("q", q), ("k", k), ("v", v), ("mask_f", mask), ("past_k", past_k), ("past_v", past_v), ("x", x),
               ("past", past)]
        cases.append((ins, [(o, r.astype(np.float32)) for o, r in outs]))
    save_case(out_dir, "ms_attention", m, cases, check=False)
    return "ms_attention", m, cases


def rotate(x, cos, sin, rot, interleaved, seq_axis):
    """Rotary embedding of x (B,S,N,H) (seq_axis 1) or (B,N,S,H) (seq_axis 2) by cos/sin (B,S,R/2)."""
    c = np.expand_dims(cos, 2 if seq_axis == 1 else 1)
    s_ = np.expand_dims(sin, 2 if seq_axis == 1 else 1)
    r, rest = x[..., :rot], x[..., rot:]
    if interleaved:
        x1, x2 = r[..., 0::2], r[..., 1::2]
        y = np.stack([x1 * c - x2 * s_, x2 * c + x1 * s_], -1).reshape(r.shape)
    else:
        h = rot // 2
        x1, x2 = r[..., :h], r[..., h:]
        y = np.concatenate([x1 * c - x2 * s_, x2 * c + x1 * s_], -1)
    return np.concatenate([y, rest], -1)


def rotary_ms(out_dir):
    """com.microsoft RotaryEmbedding on (B, S, hidden) with interleaved pairs
    and one position id (the first token's), as decoders' exporters write it."""
    n, hd, s, maxpos = 2, 8, 5, 16
    ang = rng.random((maxpos, hd // 2)) * 3
    cos_c, sin_c = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    nodes = [helper.make_node("Cast", ["pos_f"], ["pos"], to=TensorProto.INT64),
             helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain="com.microsoft",
                              num_heads=n, interleaved=1)]
    m = contrib_model(nodes, "ms_rotary", [helper.make_tensor_value_info("x", F, ["batch", s, n * hd]),
                                           helper.make_tensor_value_info("pos_f", F, [1])],
                      [helper.make_tensor_value_info("y", F, ["batch", s, n * hd])],
                      [init("cos", cos_c), init("sin", sin_c)])
    cases = []
    for batch, first in ((1, 3), (2, 0)):
        x = rng.standard_normal((batch, s, n * hd)).astype(np.float32)
        pos = np.broadcast_to(np.arange(first, first + s), (batch, s))
        y = rotate(x.astype(np.float64).reshape(batch, s, n, hd), cos_c.astype(np.float64)[pos],
                   sin_c.astype(np.float64)[pos], hd, True, 1).reshape(batch, s, n * hd)
        cases.append(([("x", x), ("pos_f", np.array([first], np.float32))], [("y", y.astype(np.float32))]))
    save_case(out_dir, "ms_rotary", m, cases, check=False)
    return "ms_rotary", m, cases


def gqa_reference(q, k, v, past_k, past_v, seqlens, total, n, kvn, rotary=None):
    """GroupQueryAttention in float64: q (B,S,N*H), k and v (B,S,Nkv*H), past (B,Nkv,P,H) or None."""
    batch, s, _ = q.shape
    h = q.shape[2] // n
    p = 0 if past_k is None else past_k.shape[2]
    start = seqlens if s == 1 else np.full(batch, p)
    q4, k4, v4 = heads(q, n), heads(k, kvn), heads(v, kvn)
    if rotary is not None:
        cos_c, sin_c, interleaved = rotary
        pos = start[:, None] + np.arange(s)[None, :]
        rot = 2 * cos_c.shape[1]
        q4 = rotate(q4, cos_c[pos], sin_c[pos], rot, interleaved, 2)
        k4 = rotate(k4, cos_c[pos], sin_c[pos], rot, interleaved, 2)
    pk, pv = np.zeros((batch, kvn, total, h)), np.zeros((batch, kvn, total, h))
    for b in range(batch):
        st = start[b]
        if past_k is not None:
            pk[b, :, :st], pv[b, :, :st] = past_k[b, :, :st], past_v[b, :, :st]
        pk[b, :, st:st + s], pv[b, :, st:st + s] = k4[b], v4[b]
    j = np.arange(total)[None, None, :]
    at = start[:, None, None] + np.arange(s)[None, :, None]
    keep = (j <= at) & (j < (seqlens + 1)[:, None, None])
    rep = lambda a: np.repeat(a, n // kvn, axis=1)  # noqa: E731
    out = attend(q4, rep(pk), rep(pv), 1 / math.sqrt(h), keep=keep[:, None], filt=-np.inf)
    return out, pk, pv


def gqa(out_dir):
    """GroupQueryAttention as decoders use it: a prompt with rotary
    embeddings (one batch of two sequences, the second right-padded), and
    one generated token after a past, Q, K and V packed (one batch of two
    sequences of different lengths: the shorter one's token goes in at its
    length, the present is zero after it)."""
    n, kvn, h, s, maxpos, p = 4, 2, 16, 4, 16, 4  # ONNX Runtime wants head sizes of 16s
    ang = rng.random((maxpos, h // 2)) * 3
    cos_c, sin_c = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    vi = helper.make_tensor_value_info
    ms = "com.microsoft"
    casts = [helper.make_node("Cast", ["seqlens_f"], ["seqlens"], to=TensorProto.INT32),
             helper.make_node("Cast", ["total_f"], ["total"], to=TensorProto.INT32)]
    built = []
    # A prompt: no past, do_rotary.
    nodes = casts + [helper.make_node("GroupQueryAttention", ["q", "k", "v", "", "", "seqlens", "total", "cos", "sin"],
                                      ["y", "present_k", "present_v"], domain=ms, num_heads=n, kv_num_heads=kvn,
                                      do_rotary=1)]
    b = "batch"
    m = contrib_model(nodes, "ms_gqa_prompt",
                      [vi("q", F, [b, s, n * h]), vi("k", F, [b, s, kvn * h]), vi("v", F, [b, s, kvn * h]),
                       vi("seqlens_f", F, [b]), vi("total_f", F, [])],
                      [vi("y", F, [b, s, n * h]), vi("present_k", F, [b, kvn, s, h]), vi("present_v", F, [b, kvn, s, h])],
                      [init("cos", cos_c), init("sin", sin_c)])
    cases = []
    for lens in ([s], [s, 2]):
        batch = len(lens)
        q = rng.standard_normal((batch, s, n * h)).astype(np.float32)
        k, v = (rng.standard_normal((batch, s, kvn * h)).astype(np.float32) for _ in range(2))
        seqlens = np.array(lens) - 1
        y, pk, pv = gqa_reference(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), None, None,
                                  seqlens, s, n, kvn, (cos_c.astype(np.float64), sin_c.astype(np.float64), False))
        ins = [("q", q), ("k", k), ("v", v), ("seqlens_f", seqlens.astype(np.float32)),
               ("total_f", np.array(s, np.float32))]
        outs = [("y", y), ("present_k", pk), ("present_v", pv)]
        cases.append((ins, [(nm, r.astype(np.float32)) for nm, r in outs]))
    save_case(out_dir, "ms_gqa_prompt", m, cases, check=False)
    built.append(("ms_gqa_prompt", m, cases))
    # One token after a past, Q, K and V packed in the query.
    nodes = casts + [helper.make_node("GroupQueryAttention", ["qkv", "", "", "past_k", "past_v", "seqlens", "total"],
                                      ["y", "present_k", "present_v"], domain=ms, num_heads=n, kv_num_heads=kvn)]
    m = contrib_model(nodes, "ms_gqa_decode",
                      [vi("qkv", F, [b, 1, (n + 2 * kvn) * h]), vi("past_k", F, [b, kvn, p, h]),
                       vi("past_v", F, [b, kvn, p, h]), vi("seqlens_f", F, [b]), vi("total_f", F, [])],
                      [vi("y", F, [b, 1, n * h]), vi("present_k", F, [b, kvn, p + 1, h]),
                       vi("present_v", F, [b, kvn, p + 1, h])], [])
    cases = []
    for lens in ([p + 1], [p + 1, 3]):
        batch = len(lens)
        qkv = rng.standard_normal((batch, 1, (n + 2 * kvn) * h)).astype(np.float32)
        past_k, past_v = (rng.standard_normal((batch, kvn, p, h)).astype(np.float32) for _ in range(2))
        seqlens = np.array(lens) - 1
        f = lambda a: a.astype(np.float64)  # noqa: E731
        y, pk, pv = gqa_reference(f(qkv[..., :n * h]), f(qkv[..., n * h:(n + kvn) * h]), f(qkv[..., (n + kvn) * h:]),
                                  f(past_k), f(past_v), seqlens, p + 1, n, kvn)
        ins = [("qkv", qkv), ("past_k", past_k), ("past_v", past_v), ("seqlens_f", seqlens.astype(np.float32)),
               ("total_f", np.array(p + 1, np.float32))]
        cases.append((ins, [(nm, r.astype(np.float32)) for nm, r in [("y", y), ("present_k", pk), ("present_v", pv)]]))
    save_case(out_dir, "ms_gqa_decode", m, cases, check=False)
    built.append(("ms_gqa_decode", m, cases))
    return built


def matmul_nbits(out_dir):
    """MatMulNBits as weight-only quantizers write it: 4-bit weights with
    packed zero points and a bias, K not a multiple of the block; 8-bit
    weights with the default zero point."""
    from onnx import numpy_helper
    k, n, block = 200, 64, 16  # weights large enough to be parameters, not folded constants
    blocks = (k + block - 1) // block
    built = []
    nodes, inits, outs_vi, refs = [], [], [], {}
    rows = {}
    for bits in (4, 8):
        q = rng.integers(0, 1 << bits, (n, blocks * block))
        scales = (rng.random((n, blocks)) * 0.1 + 0.01).astype(np.float32)
        if bits == 4:
            zps = rng.integers(0, 16, (n, blocks))
            zpad = np.concatenate([zps, np.zeros((n, blocks % 2), np.int64)], 1) if blocks % 2 else zps
            zp_bytes = (zpad[:, 0::2] | (zpad[:, 1::2] << 4)).astype(np.uint8).reshape(-1)
            packed = (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8).reshape(n, blocks, block // 2)
        else:
            zps = np.full((n, blocks), 128)
            packed = q.astype(np.uint8).reshape(n, blocks, block)
        w = ((q - np.repeat(zps, block, 1)) * np.repeat(scales.astype(np.float64), block, 1))[:, :k]
        bias = rng.standard_normal(n).astype(np.float32)
        ins = ["a", f"b{bits}", f"s{bits}"] + ([f"z{bits}"] if bits == 4 else [""]) + ["", f"bias{bits}"]
        nodes.append(helper.make_node("MatMulNBits", ins, [f"y{bits}"], domain="com.microsoft", K=k, N=n, bits=bits,
                                      block_size=block))
        inits += [numpy_helper.from_array(packed, f"b{bits}"), init(f"s{bits}", scales.reshape(-1)),
                  init(f"bias{bits}", bias)]
        if bits == 4:
            inits.append(numpy_helper.from_array(zp_bytes, f"z{bits}"))
        outs_vi.append(helper.make_tensor_value_info(f"y{bits}", F, ["batch", 3, n]))
        rows[bits] = (w, bias)
    m = contrib_model(nodes, "ms_matmul_nbits", [helper.make_tensor_value_info("a", F, ["batch", 3, k])], outs_vi,
                      inits)
    cases = []
    for batch in (1, 2):
        a = rng.standard_normal((batch, 3, k)).astype(np.float32)
        outs = [(f"y{bits}", (a.astype(np.float64) @ w.T + bias).astype(np.float32)) for bits, (w, bias) in rows.items()]
        cases.append(([("a", a)], outs))
    save_case(out_dir, "ms_matmul_nbits", m, cases, check=False)
    built.append(("ms_matmul_nbits", m, cases))
    return built


def dynamic_quantize(x):
    """DynamicQuantizeLinear in float32 as ONNX specifies it: (uint8 values, scale, zero point)."""
    x = x.astype(np.float32)
    mx, mn = np.float32(max(x.max(), 0)), np.float32(min(x.min(), 0))
    scale = np.float32((mx - mn) / np.float32(255))
    zp = np.float32(np.clip(np.round(np.float32(0) - mn / scale), 0, 255))
    q = np.clip(np.round(x / scale) + zp, 0, 255)
    return q, scale, zp


def quant_ops(out_dir):
    """DynamicQuantizeMatMul (3-D A, uint8 weights with a zero point and a
    bias; int8 weights with per-column scales), QGemm (transposed B, int32
    bias, quantized and float outputs) and QLinearAdd / QLinearMul with
    broadcasting."""
    from onnx import numpy_helper
    k, n, m_ = 48, 40, 5  # weights of 1920 values: parameters, not folded constants
    w_u8 = rng.integers(0, 256, (k, n)).astype(np.uint8)
    w_s8 = rng.integers(-128, 128, (k, n)).astype(np.int8)
    s_u8, z_u8 = np.float32(0.02), np.uint8(131)
    s_s8 = (rng.random(n) * 0.02 + 0.005).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    # QGemm: A quantized (u8), B (N, K) s8 transposed, per-column scale.
    qa_s, qa_z = np.float32(0.05), np.uint8(120)
    qb = rng.integers(-128, 128, (n, k)).astype(np.int8)
    qb_s = (rng.random(n) * 0.01 + 0.002).astype(np.float32)
    qb_z = np.zeros(n, np.int8)
    qc = rng.integers(-500, 500, (n,)).astype(np.int32)
    qy_s, qy_z = np.float32(0.08), np.uint8(128)
    # QLinearAdd / QLinearMul: A (u8) [m, n] with B (u8) [n].
    la_s, la_z, lb_s, lb_z, lc_s, lc_z = (np.float32(0.03), np.uint8(100), np.float32(0.05), np.uint8(140),
                                         np.float32(0.07), np.uint8(125))
    ms = "com.microsoft"
    nodes = [
        helper.make_node("DynamicQuantizeMatMul", ["a", "w_u8", "s_u8", "z_u8", "bias"], ["y_u8"], domain=ms),
        helper.make_node("DynamicQuantizeMatMul", ["a", "w_s8", "s_s8"], ["y_s8"], domain=ms),
        helper.make_node("QuantizeLinear", ["a2", "qa_s", "qa_z"], ["qa"]),
        helper.make_node("QGemm", ["qa", "qa_s", "qa_z", "qb", "qb_s", "qb_z", "qc", "qy_s", "qy_z"], ["qy"],
                         domain=ms, transB=1),
        helper.make_node("DequantizeLinear", ["qy", "qy_s", "qy_z"], ["g_q"]),
        helper.make_node("QGemm", ["qa", "qa_s", "qa_z", "qb", "qb_s", "qb_z"], ["g_f"], domain=ms, transB=1,
                         alpha=0.5),
        helper.make_node("QuantizeLinear", ["l1", "la_s", "la_z"], ["la"]),
        helper.make_node("QuantizeLinear", ["l2", "lb_s", "lb_z"], ["lb"]),
        helper.make_node("QLinearAdd", ["la", "la_s", "la_z", "lb", "lb_s", "lb_z", "lc_s", "lc_z"], ["ladd"], domain=ms),
        helper.make_node("QLinearMul", ["la", "la_s", "la_z", "lb", "lb_s", "lb_z", "lc_s", "lc_z"], ["lmul"], domain=ms),
        helper.make_node("DequantizeLinear", ["ladd", "lc_s", "lc_z"], ["add_f"]),
        helper.make_node("DequantizeLinear", ["lmul", "lc_s", "lc_z"], ["mul_f"]),
    ]
    arr = numpy_helper.from_array
    inits = [arr(w_u8, "w_u8"), arr(w_s8, "w_s8"), arr(np.array(s_u8), "s_u8"), arr(np.array(z_u8), "z_u8"),
             arr(s_s8, "s_s8"), init("bias", bias), arr(np.array(qa_s), "qa_s"), arr(np.array(qa_z), "qa_z"),
             arr(qb, "qb"), arr(qb_s, "qb_s"), arr(qb_z, "qb_z"), arr(qc, "qc"), arr(np.array(qy_s), "qy_s"),
             arr(np.array(qy_z), "qy_z"), arr(np.array(la_s), "la_s"), arr(np.array(la_z), "la_z"),
             arr(np.array(lb_s), "lb_s"), arr(np.array(lb_z), "lb_z"), arr(np.array(lc_s), "lc_s"),
             arr(np.array(lc_z), "lc_z")]
    b = "batch"
    vi = helper.make_tensor_value_info
    mdl = contrib_model(nodes, "ms_quant_ops",
                        [vi("a", F, [b, m_, k]), vi("a2", F, [m_, k]), vi("l1", F, [m_, n]), vi("l2", F, [n])],
                        [vi("y_u8", F, [b, m_, n]), vi("y_s8", F, [b, m_, n]), vi("g_q", F, [m_, n]),
                         vi("g_f", F, [m_, n]), vi("add_f", F, [m_, n]), vi("mul_f", F, [m_, n])], inits)
    cases = []
    f64 = np.float64
    for batch in (1, 2):
        a = rng.standard_normal((batch, m_, k)).astype(np.float32)
        a2 = (rng.standard_normal((m_, k)) * 3).astype(np.float32)
        l1 = (rng.standard_normal((m_, n)) * 2).astype(np.float32)
        l2 = (rng.standard_normal(n) * 3).astype(np.float32)
        q, sc, zp = dynamic_quantize(a)
        acc_u8 = (q - zp).astype(f64) @ (w_u8.astype(f64) - f64(z_u8))
        y_u8 = acc_u8.astype(np.float32) * (sc * s_u8) + bias
        acc_s8 = (q - zp).astype(f64) @ w_s8.astype(f64)
        y_s8 = acc_s8.astype(np.float32) * (sc * s_s8)
        qa = np.clip(np.round(a2 / qa_s) + f64(qa_z), 0, 255)
        acc = (qa - f64(qa_z)) @ (qb.astype(f64) - qb_z[:, None]).T + qc
        g = acc.astype(np.float32) * (qa_s * qb_s)
        qy = np.clip(np.round(g / qy_s) + f64(qy_z), 0, 255)
        g_q = ((qy - f64(qy_z)) * qy_s).astype(np.float32)
        g_f = ((qa - f64(qa_z)) @ (qb.astype(f64) - qb_z[:, None]).T).astype(np.float32) * (qa_s * qb_s * np.float32(0.5))
        la = np.clip(np.round(l1 / la_s) + f64(la_z), 0, 255)
        lb = np.clip(np.round(l2 / lb_s) + f64(lb_z), 0, 255)
        # ONNX Runtime's f32 arithmetic (its kernels define these ops); the
        # product's zero point is added before rounding.
        ca, cb = (la - f64(la_z)).astype(np.float32), (lb - f64(lb_z)).astype(np.float32)
        ladd = np.clip(np.round((la_s * ca + lb_s * cb) / lc_s) + f64(lc_z), 0, 255)
        lmul = np.clip(np.round((ca * cb) * np.float32(la_s * lb_s / lc_s) + np.float32(lc_z)), 0, 255)
        outs = [("y_u8", y_u8), ("y_s8", y_s8), ("g_q", g_q), ("g_f", g_f), ("add_f", (ladd - f64(lc_z)) * lc_s),
                ("mul_f", (lmul - f64(lc_z)) * lc_s)]
        cases.append(([("a", a), ("a2", a2), ("l1", l1), ("l2", l2)], [(nm, v.astype(np.float32)) for nm, v in outs]))
    save_case(out_dir, "ms_quant_ops", mdl, cases, check=False)
    return [("ms_quant_ops", mdl, cases)]


def conv2d_same(x, w):
    """NCHW x OIHW, stride 1, zero padding 1 (3x3 kernels), in float64."""
    b, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((b, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            y += np.einsum("bchw,oc->bohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return y


def fused_ops(out_dir):
    """The fused ops ONNX Runtime writes when it saves a model it optimized:
    FusedConv (with a sum input Z and several activations with their
    parameters), FusedGemm (with an activation) and FusedMatMul (transposes,
    batch transposes and a scale)."""
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.4).astype(np.float32)
    cb = rng.standard_normal(4).astype(np.float32)
    gw = rng.standard_normal((6, 5)).astype(np.float32)
    gc = rng.standard_normal(5).astype(np.float32)
    ms = "com.microsoft"
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [
        helper.make_node("FusedConv", ["x", "w", "cb", "z"], ["relu"], domain=ms, activation="Relu", **conv),
        helper.make_node("FusedConv", ["x", "w", "cb"], ["leaky"], domain=ms, activation="LeakyRelu",
                         activation_params=[0.2], **conv),
        helper.make_node("FusedConv", ["x", "w"], ["clip"], domain=ms, activation="Clip",
                         activation_params=[-1.0, 2.0], **conv),
        helper.make_node("FusedConv", ["x", "w", "cb"], ["hsig"], domain=ms, activation="HardSigmoid",
                         activation_params=[0.3, 0.4], **conv),
        helper.make_node("FusedGemm", ["ga", "gw", "gc"], ["gemm"], domain=ms, activation="LeakyRelu",
                         activation_alpha=0.1, alpha=0.5, beta=2.0),
        helper.make_node("FusedMatMul", ["ma", "mb"], ["mm"], domain=ms, transA=1, transB=1, alpha=0.25),
        helper.make_node("FusedMatMul", ["ba", "bb"], ["mm_batch"], domain=ms, transBatchA=1, transA=0,
                         transBatchB=0),
    ]
    vi = helper.make_tensor_value_info
    b = "batch"
    m = contrib_model(
        nodes, "ms_fused",
        [vi("x", F, [b, 3, 5, 5]), vi("z", F, [b, 4, 5, 5]), vi("ga", F, [b, 6]), vi("ma", F, [b, 2, 4, 3]),
         vi("mb", F, [b, 2, 5, 4]), vi("ba", F, [3, b, 2, 4]), vi("bb", F, [b, 2, 4, 6])],
        [vi("relu", F, [b, 4, 5, 5]), vi("leaky", F, [b, 4, 5, 5]), vi("clip", F, [b, 4, 5, 5]),
         vi("hsig", F, [b, 4, 5, 5]), vi("gemm", F, [b, 5]), vi("mm", F, [b, 2, 3, 5]), vi("mm_batch", F, [b, 2, 3, 6])],
        [init("w", w), init("cb", cb), init("gw", gw), init("gc", gc)])
    cases = []
    f = lambda a: a.astype(np.float64)  # noqa: E731
    for batch in (1, 2):
        x = rng.standard_normal((batch, 3, 5, 5)).astype(np.float32)
        z = rng.standard_normal((batch, 4, 5, 5)).astype(np.float32)
        ga = rng.standard_normal((batch, 6)).astype(np.float32)
        ma = rng.standard_normal((batch, 2, 4, 3)).astype(np.float32)
        mb = rng.standard_normal((batch, 2, 5, 4)).astype(np.float32)
        ba = rng.standard_normal((3, batch, 2, 4)).astype(np.float32)
        bb = rng.standard_normal((batch, 2, 4, 6)).astype(np.float32)
        c = conv2d_same(f(x), f(w))
        cbias = f(cb)[None, :, None, None]
        g = 0.5 * f(ga) @ f(gw) + 2.0 * f(gc)
        outs = [("relu", np.maximum(c + cbias + f(z), 0)), ("leaky", np.where(c + cbias > 0, c + cbias, 0.2 * (c + cbias))),
                ("clip", np.clip(c, -1, 2)), ("hsig", np.clip(0.3 * (c + cbias) + 0.4, 0, 1)),
                ("gemm", np.where(g > 0, g, 0.1 * g)),
                ("mm", 0.25 * np.swapaxes(f(ma), -1, -2) @ np.swapaxes(f(mb), -1, -2)),
                ("mm_batch", np.transpose(f(ba), (1, 2, 0, 3)) @ f(bb))]
        cases.append(([("x", x), ("z", z), ("ga", ga), ("ma", ma), ("mb", mb), ("ba", ba), ("bb", bb)],
                      [(n, v.astype(np.float32)) for n, v in outs]))
    save_case(out_dir, "ms_fused", m, cases, check=False)
    return [("ms_fused", m, cases)]


def embeddings(out_dir):
    """EmbedLayerNormalization as ONNX Runtime's BERT optimizer writes it
    (word, position and segment embeddings, a mask, all three outputs), and
    BiasAdd. Ids and the mask arrive as floats cast to int32."""
    v, p, h, s = 20, 12, 16, 6
    word = rng.standard_normal((v, h)).astype(np.float32)
    pos = rng.standard_normal((p, h)).astype(np.float32)
    seg = rng.standard_normal((2, h)).astype(np.float32)
    gamma, beta, bias = (rng.standard_normal(h).astype(np.float32) for _ in range(3))
    i32 = TensorProto.INT32
    ms = "com.microsoft"
    nodes = [
        helper.make_node("Cast", ["ids_f"], ["ids"], to=i32),
        helper.make_node("Cast", ["seg_f"], ["segs"], to=i32),
        helper.make_node("Cast", ["mask_f"], ["mask"], to=i32),
        helper.make_node("EmbedLayerNormalization", ["ids", "segs", "word", "pos", "seg", "gamma", "beta", "mask"],
                         ["emb", "mask_index", "emb_sum"], domain=ms, epsilon=1e-5),
        helper.make_node("Cast", ["mask_index"], ["mask_index_f"], to=F),
    ]
    b = "batch"
    vi = helper.make_tensor_value_info
    m = contrib_model(nodes, "ms_embeddings",
                      [vi("ids_f", F, [b, s]), vi("seg_f", F, [b, s]), vi("mask_f", F, [b, s])],
                      [vi("emb", F, [b, s, h]), vi("mask_index_f", F, [b]), vi("emb_sum", F, [b, s, h])],
                      [init("word", word), init("pos", pos), init("seg", seg), init("gamma", gamma), init("beta", beta)])
    cases = []
    for batch in (1, 3):
        ids = rng.integers(0, v, (batch, s))
        segs = rng.integers(0, 2, (batch, s))
        mask = (rng.random((batch, s)) > 0.3).astype(np.int64)
        total = word[ids].astype(np.float64) + pos[np.arange(s)][None].astype(np.float64) + seg[segs].astype(np.float64)
        y, _, _ = layer_norm(total, 1e-5)
        emb = y * gamma + beta
        outs = [("emb", emb), ("mask_index_f", mask.sum(1)), ("emb_sum", total)]
        cases.append(([("ids_f", ids.astype(np.float32)), ("seg_f", segs.astype(np.float32)),
                       ("mask_f", mask.astype(np.float32))], [(n, r.astype(np.float32)) for n, r in outs]))
    save_case(out_dir, "ms_embeddings", m, cases, check=False)
    # BiasAdd: ONNX Runtime has it on GPUs only, so its reference is numpy alone.
    mb = contrib_model([helper.make_node("BiasAdd", ["x", "bias", "skip"], ["y"], domain=ms)], "ms_bias_add",
                       [vi("x", F, [b, s, h]), vi("skip", F, [b, s, h])], [vi("y", F, [b, s, h])], [init("bias", bias)])
    bcases = []
    for batch in (1, 2):
        x, skip = (rng.standard_normal((batch, s, h)).astype(np.float32) for _ in range(2))
        bcases.append(([("x", x), ("skip", skip)], [("y", (x.astype(np.float64) + bias + skip).astype(np.float32))]))
    save_case(out_dir, "ms_bias_add", mb, bcases, check=False)
    return [("ms_embeddings", m, cases)]


def qoperator_ops(out_dir):
    """The QOperator-format ops ONNX Runtime's quantizer writes around
    convolutions: QLinearSigmoid, QLinearLeakyRelu (on uint8 and int8),
    QLinearConcat and QLinearGlobalAveragePool, between QuantizeLinear and
    DequantizeLinear."""
    from onnx import numpy_helper
    arr = numpy_helper.from_array
    sx, zx, sy, zy, sz, zz = (np.float32(0.04), np.uint8(128), np.float32(1 / 255), np.uint8(0), np.float32(0.03),
                              np.uint8(100))
    zs = np.int8(-3)  # int8 values at scale sx
    ms = "com.microsoft"
    q = ["sx", "zx"]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        helper.make_node("QuantizeLinear", ["x2", "sz", "zz"], ["x2q"]),
        helper.make_node("QuantizeLinear", ["x", "sx", "zs"], ["xs"]),
        helper.make_node("QLinearLeakyRelu", ["xs", "sx", "zs", "sx", "zs"], ["leaky_sq"], domain=ms, alpha=0.1),
        helper.make_node("DequantizeLinear", ["leaky_sq", "sx", "zs"], ["leaky_s"]),
        helper.make_node("QLinearSigmoid", ["xq"] + q + ["sy", "zy"], ["sig_q"], domain=ms),
        helper.make_node("QLinearLeakyRelu", ["xq"] + q + ["sx", "zx"], ["leaky_q"], domain=ms, alpha=0.1),
        helper.make_node("QLinearConcat", ["sz", "zz", "xq", "sx", "zx", "x2q", "sz", "zz"], ["cat_q"], domain=ms,
                         axis=1),
        helper.make_node("QLinearGlobalAveragePool", ["xq"] + q + ["sz", "zz"], ["gap_q"], domain=ms),
        helper.make_node("DequantizeLinear", ["sig_q", "sy", "zy"], ["sig"]),
        helper.make_node("DequantizeLinear", ["leaky_q", "sx", "zx"], ["leaky"]),
        helper.make_node("DequantizeLinear", ["cat_q", "sz", "zz"], ["cat"]),
        helper.make_node("DequantizeLinear", ["gap_q", "sz", "zz"], ["gap"]),
    ]
    inits = [arr(np.array(v), n) for n, v in [("sx", sx), ("zx", zx), ("sy", sy), ("zy", zy), ("sz", sz), ("zz", zz),
                                                               ("zs", zs)]]
    vi = helper.make_tensor_value_info
    b = "batch"
    m = contrib_model(nodes, "ms_qoperator", [vi("x", F, [b, 3, 4, 5]), vi("x2", F, [b, 2, 4, 5])],
                      [vi("sig", F, [b, 3, 4, 5]), vi("leaky", F, [b, 3, 4, 5]), vi("cat", F, [b, 5, 4, 5]),
                       vi("gap", F, [b, 3, 1, 1]), vi("leaky_s", F, [b, 3, 4, 5])], inits)
    f32 = np.float32
    quant = lambda v, s_, z: np.clip(np.round(v / s_) + f32(z), *((-128, 127) if z.dtype == np.int8 else (0, 255)))  # noqa: E731,E501
    cases = []
    for batch in (1, 2):
        x = (rng.standard_normal((batch, 3, 4, 5)) * 2).astype(np.float32)
        x2 = (rng.standard_normal((batch, 2, 4, 5)) * 2).astype(np.float32)
        xq, x2q = quant(x, sx, zx), quant(x2, sz, zz)
        dx, dx2 = (xq - f32(zx)).astype(f32) * sx, (x2q - f32(zz)).astype(f32) * sz
        sig_q = quant(1 / (1 + np.exp(-dx.astype(np.float64))), sy, zy)
        leaky_q = quant(np.where(dx >= 0, dx, dx * f32(0.1)), sx, zx)
        cat_q = quant(np.concatenate([dx, dx2], 1), sz, zz)
        gap_q = quant(dx.mean(axis=(2, 3), keepdims=True), sz, zz)
        ds = (quant(x, sx, zs) - f32(zs)).astype(f32) * sx
        leaky_sq = quant(np.where(ds >= 0, ds, ds * f32(0.1)), sx, zs)
        outs = [("sig", (sig_q - f32(zy)) * sy), ("leaky", (leaky_q - f32(zx)) * sx), ("cat", (cat_q - f32(zz)) * sz),
                ("gap", (gap_q - f32(zz)) * sz), ("leaky_s", (leaky_sq - f32(zs)) * sx)]
        cases.append(([("x", x), ("x2", x2)], [(n, v.astype(np.float32)) for n, v in outs]))
    save_case(out_dir, "ms_qoperator", m, cases, check=False)
    return [("ms_qoperator", m, cases)]


def ort_check(name, model, cases):
    """Runs the model on ONNX Runtime (npm peer) and prints its error against the reference."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    runner = os.path.join(root, "bench", "ort_run.js")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        for i, (inputs, outputs) in enumerate(cases):
            specs = []
            for n, v in inputs:
                raw = os.path.join(tmp, n + ".raw")
                v.astype(np.float32).tofile(raw)
                specs.append(f"{n}={'x'.join(str(d) for d in v.shape)}={raw}")
            out = os.path.join(tmp, f"out{i}")
            subprocess.run(["node", runner, path, out] + specs, check=True, cwd=os.path.join(root, "bench"))
            for k, (n, ref) in enumerate(outputs):
                got = np.fromfile(os.path.join(out, f"output_{k}.raw"), np.float32).reshape(ref.shape)
                err = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)
                print(f"{name} set {i} {n}: ONNX Runtime vs reference, relative L2 {err:.2e}")


if __name__ == "__main__":
    out = sys.argv[1]
    built = [activations(out), skip_norms(out), attention_ops(out), rotary_ms(out)] + gqa(out) + matmul_nbits(out) + quant_ops(out) + fused_ops(out) + embeddings(out) + qoperator_ops(out)
    if "--ort" in sys.argv[2:]:
        for b in built:
            ort_check(*b)
