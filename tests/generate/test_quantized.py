"""Decoders with 4- and 8-bit weights (MatMulNBits, as ONNX Runtime's
weight-only quantizer writes them; tests/generate/nbits.py): `xonnx
generate` gives the tokens of the torch reference whose Linear weights are
the quantized model's own dequantized values, for blocks of 16, 32 and 128,
with and without zero points; and every product by quantized weights runs
on the packed weights (the CPU backend's packed-matmul kernel), with
nothing of their unpacking left to run."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nbits  # noqa: E402
import tiny_llama  # noqa: E402
from test_generate import PROMPTS, XONNX, generate  # noqa: E402

FORMS = [(4, 32, False), (4, 16, True), (4, 128, True), (8, 32, False), (8, 64, True)]


def packed_kernel_here():
    """Whether this CPU runs products on packed weights: the kernel needs
    AVX-512 F, BW, VL and DQ; elsewhere the unpacking runs as written."""
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    return all(x in flags for x in ("avx512f", "avx512bw", "avx512vl", "avx512dq"))


def quantize_model(m, path, out, bits, block, zero_points, accuracy_level=0):
    """The decoder at `path` (built from torch module `m`) with its products
    by weights quantized, saved to `out`; `m`'s Linear weights become what
    the quantized weights stand for, so that it is the reference."""
    import onnx
    import torch
    from onnx import numpy_helper
    model = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    # Each MatMul's [K, N] weights are a Linear's weight transposed.
    linears = [mod for mod in m.modules() if isinstance(mod, torch.nn.Linear)]
    owner = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in inits:
            w = inits[node.input[1]]
            match = [mod for mod in linears if np.array_equal(mod.weight.detach().numpy().T, w)]
            assert len(match) == 1, node.name
            owner[node.input[1]] = match[0]
    assert nbits.rewrite(model, bits, block, zero_points, accuracy_level) == len(owner)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    attrs = lambda n: {a.name: a.i for a in n.attribute}
    with torch.no_grad():
        for node in model.graph.node:
            if node.op_type != "MatMulNBits":
                continue
            source = node.input[1][:-len(f"_q{bits}")]
            zp = inits[node.input[3]] if len(node.input) > 3 and node.input[3] else None
            w = nbits.dequantize(inits[node.input[1]], inits[node.input[2]], zp, bits, block, attrs(node)["K"])
            owner[source].weight.copy_(torch.from_numpy(w.astype(np.float32)))
    onnx.save(model, out)
    return out


def quantized(folder, bits, block, zero_points, accuracy_level=0):
    """The test decoder quantized: (its torch reference, the model's path)."""
    m, path = tiny_llama.exported(folder)
    out = os.path.join(str(folder), f"q{bits}_{block}_{int(zero_points)}_{accuracy_level}.onnx")
    return m, quantize_model(m, path, out, bits, block, zero_points, accuracy_level)


def int8_kernel_here():
    """Whether xonnx's CPU backend rounds activations to int8 where
    accuracy_level 4 allows it: it needs AVX-512 VNNI besides F, BW, VL, DQ."""
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    return packed_kernel_here() and "avx512_vnni" in flags


def round_linear_inputs(m, block):
    """Makes torch module `m`'s Linear layers round their input as the int8
    kernel does: each block of `block` values along K becomes
    round(v * 127 / max|v|) * (max|v| / 127), in f32, ties to even."""
    import torch

    def rounded(x):
        k = x.shape[-1]
        pad = -k % block
        v = torch.nn.functional.pad(x, (0, pad)).reshape(*x.shape[:-1], -1, block)
        amax = v.abs().amax(-1, keepdim=True)
        inverse = torch.where(amax > 0, 127 / amax, torch.zeros_like(amax))
        v = torch.round(v * inverse) * (amax / 127)
        return v.reshape(*x.shape[:-1], -1)[..., :k]

    for mod in m.modules():
        if isinstance(mod, torch.nn.Linear):
            mod.forward = lambda x, mod=mod: torch.nn.functional.linear(rounded(x), mod.weight, mod.bias)


@pytest.mark.parametrize("bits,block,zero_points", FORMS)
def test_greedy_matches_the_dequantized_reference(tmp_path, bits, block, zero_points):
    m, path = quantized(tmp_path, bits, block, zero_points)
    assert generate(path, PROMPTS, "--max-new-tokens", "12") == [tiny_llama.greedy(m, p, 12) for p in PROMPTS]


# Forms whose rounded reference's tokens differ from the exact one's, so
# that the test tells which one xonnx computed.
@pytest.mark.parametrize("bits,block,zero_points", [(4, 32, False), (8, 32, True), (8, 128, False)])
def test_accuracy_level_4_rounds_the_activation_per_block(tmp_path, bits, block, zero_points):
    """MatMulNBits at accuracy_level 4: with AVX-512 VNNI, calls of fewer
    than 32 rows (every call here: prompts and 12 tokens, a batch of 3)
    give the tokens of the reference whose Linear layers round their input
    to int8 per block; elsewhere the exact reference's."""
    m, path = quantized(tmp_path, bits, block, zero_points, accuracy_level=4)
    want = [tiny_llama.greedy(m, p, 12) for p in PROMPTS]
    if int8_kernel_here():
        round_linear_inputs(m, block)
        exact, want = want, [tiny_llama.greedy(m, p, 12) for p in PROMPTS]
        assert want != exact
    assert generate(path, PROMPTS, "--max-new-tokens", "12") == want
    for p, w in zip(PROMPTS, want):
        assert generate(path, [p], "--max-new-tokens", "12") == [w], p


def test_products_run_on_the_packed_weights(tmp_path):
    c = tiny_llama.Config()
    for bits, block, zero_points in FORMS:
        _, path = quantized(tmp_path, bits, block, zero_points)
        shapes = ["input_ids=1x1", "attention_mask=1x65", "position_ids=1x1"]
        shapes += [f"past_key_values.{i}.{k}=1x{c.heads}x64x{c.head_dim}" for i in range(c.layers)
                   for k in ("key", "value")]
        trace = str(tmp_path / "trace.json")
        cmd = [XONNX, "bench", path, "--iterations", "1", "--profile", trace]
        for s in shapes:
            cmd += ["--shape", s]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
        kernels = [e["args"]["kernel"] for e in events
                   if e.get("cat") == "kernel" and e["args"].get("op_type") == "MatMulNBits"]
        # Every MatMulNBits's product, in every call, on the packed weights
        # (or, without AVX-512, none of them).
        if packed_kernel_here():
            assert kernels and set(kernels) == {"packed-matmul"}, (bits, block, zero_points, sorted(set(kernels)))
        else:
            assert kernels and "packed-matmul" not in kernels, (bits, block, zero_points, sorted(set(kernels)))
