#!/usr/bin/python3
"""Weight-only quantization of a float ONNX model, as ONNX Runtime's
MatMulNBits quantizer writes it: every MatMul whose second input is a 2-D
float initializer [K, N] becomes a com.microsoft MatMulNBits with the
weights transposed to [N, K], cut into blocks of --block along K, each
block stored as 4- or 8-bit unsigned integers with its own scale and
(with --zero-points) its own zero point.

    nbits.py IN.onnx OUT.onnx [--bits 4] [--block 32] [--zero-points]
                              [--accuracy-level 4]

Without zero points the blocks are symmetric about the default zero point
(8 for 4 bits, 128 for 8). --accuracy-level 4 lets the engine round the
activation to int8 per block (onnxruntime-genai's default for the CPU).
Prints how many MatMuls it replaced.
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def quantize(w, bits, block, zero_points):
    """w [N, K] float -> (packed uint8 [N, blocks, block * bits / 8],
    scales float32 [N * blocks], packed zero points or None)."""
    n, k = w.shape
    blocks = (k + block - 1) // block
    padded = np.zeros((n, blocks * block), np.float32)
    padded[:, :k] = w
    b = padded.reshape(n, blocks, block)
    top = (1 << bits) - 1
    if zero_points:
        lo = np.minimum(b.min(2), 0.0)
        hi = np.maximum(b.max(2), 0.0)
        scale = np.maximum((hi - lo) / top, 1e-12).astype(np.float32)
        zp = np.clip(np.round(-lo / scale), 0, top).astype(np.int64)
    else:
        half = 1 << (bits - 1)
        scale = np.maximum(np.abs(b).max(2) / (half - 1), 1e-12).astype(np.float32)
        zp = np.full((n, blocks), half, np.int64)
    q = np.clip(np.round(b / scale[:, :, None]) + zp[:, :, None], 0, top).astype(np.int64)
    if bits == 4:
        packed = (q[:, :, 0::2] | (q[:, :, 1::2] << 4)).astype(np.uint8)
    else:
        packed = q.astype(np.uint8)
    zbytes = None
    if zero_points:
        if bits == 4:
            z = np.concatenate([zp, np.zeros((n, blocks % 2), np.int64)], 1)
            zbytes = (z[:, 0::2] | (z[:, 1::2] << 4)).astype(np.uint8).reshape(-1)
        else:
            zbytes = zp.astype(np.uint8).reshape(-1)
    return packed, scale.reshape(-1), zbytes


def dequantize(packed, scales, zbytes, bits, block, k):
    """The float [N, K] weights the quantized form stands for (float64)."""
    n, blocks = packed.shape[0], packed.shape[1]
    if bits == 4:
        q = np.stack([packed & 15, packed >> 4], 3).reshape(n, blocks, block).astype(np.int64)
    else:
        q = packed.astype(np.int64)
    if zbytes is None:
        zp = np.full((n, blocks), 1 << (bits - 1), np.int64)
    elif bits == 4:
        z = zbytes.reshape(n, -1)
        zp = np.stack([z & 15, z >> 4], 2).reshape(n, -1)[:, :blocks].astype(np.int64)
    else:
        zp = zbytes.reshape(n, blocks).astype(np.int64)
    w = (q - zp[:, :, None]) * scales.reshape(n, blocks, 1).astype(np.float64)
    return w.reshape(n, blocks * block)[:, :k]


def rewrite(model, bits=4, block=32, zero_points=False, accuracy_level=0):
    """Replaces the model's MatMuls by constant weights in place; returns
    how many."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    nodes, count, dropped = [], 0, set()
    for node in g.node:
        w = inits.get(node.input[1]) if node.op_type == "MatMul" else None
        arr = numpy_helper.to_array(w) if w is not None else None
        if arr is None or arr.ndim != 2 or arr.dtype != np.float32:
            nodes.append(node)
            continue
        k, n = arr.shape
        packed, scales, zbytes = quantize(arr.T.astype(np.float32), bits, block, zero_points)
        base = f"{node.input[1]}_q{bits}"
        new = [numpy_helper.from_array(packed, base), numpy_helper.from_array(scales, base + "_scales")]
        ins = [node.input[0], base, base + "_scales"]
        if zbytes is not None:
            new.append(numpy_helper.from_array(zbytes, base + "_zp"))
            ins.append(base + "_zp")
        g.initializer.extend(new)
        dropped.add(node.input[1])
        nodes.append(helper.make_node("MatMulNBits", ins, list(node.output), name=(node.name or base) + "_nbits",
                                      domain="com.microsoft", K=k, N=n, bits=bits, block_size=block,
                                      **({"accuracy_level": accuracy_level} if accuracy_level else {})))
        count += 1
    del g.node[:]
    g.node.extend(nodes)
    still = {i for n in g.node for i in n.input}
    keep = [i for i in g.initializer if i.name not in dropped or i.name in still]
    del g.initializer[:]
    g.initializer.extend(keep)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return count


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--bits", type=int, choices=(4, 8), default=4)
    p.add_argument("--block", type=int, default=32, help="a power of two, at least 16 (default 32)")
    p.add_argument("--zero-points", action="store_true", help="asymmetric blocks with a zero point each")
    p.add_argument("--accuracy-level", type=int, choices=(0, 1, 2, 3, 4), default=0,
                   help="MatMulNBits's accuracy_level (4: int8 activations allowed)")
    a = p.parse_args()
    if a.block < 16 or a.block & (a.block - 1):
        sys.exit("--block must be a power of two of at least 16")
    m = onnx.load(a.input)
    n = rewrite(m, a.bits, a.block, a.zero_points, a.accuracy_level)
    onnx.save(m, a.output)
    print(f"{n} MatMuls became MatMulNBits ({a.bits} bits, blocks of {a.block})")


if __name__ == "__main__":
    main()
