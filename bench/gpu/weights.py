#!/usr/bin/env python3
"""Large float weights out of an ONNX model, and back in.

  weights.py strip IN OUT   drops the data of every float or uint8
                            initializer of at least 1024 elements (the file
                            becomes a few KB to carry to another machine);
                            the tensor keeps its name, type and dims and is
                            marked as stripped.
  weights.py fill IN OUT    gives every stripped initializer deterministic
                            random values: the same on every machine and
                            numpy version (numpy's legacy RandomState stream
                            is frozen), seeded by the tensor's name. Floats
                            have a standard deviation of 1/sqrt(fan-in), so
                            that the activations of deep models stay of
                            order 1; uint8 tensors (MatMulNBits' packed 4-
                            and 8-bit weights) hold codes spread about
                            the zero point as a quantizer's are.

Needs only onnx and numpy.
"""
import sys
import zlib

import numpy as np
import onnx

MARK = "xonnx: stripped weight"
MIN_ELEMENTS = 1024


def elements(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def strip(model):
    count = 0
    for t in model.graph.initializer:
        if t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.UINT8) and elements(t) >= MIN_ELEMENTS:
            t.ClearField("raw_data")
            t.ClearField("float_data")
            t.doc_string = MARK
            count += 1
    return count


# MatMulNBits' codes: normal about the default zero point (8 or 128) with
# this standard deviation, clipped to the symmetric range, as a symmetric
# quantizer's codes of normal weights fall.
CODE_STD = {4: 2.5, 8: 40.0}


def nbits_tensors(model):
    """({packed weight name: bits}, {scale name: the standard deviation
    the weights should have, 1/sqrt(K) over the codes' spread})."""
    codes, scales = {}, {}
    for node in model.graph.node:
        if node.op_type == "MatMulNBits" and len(node.input) > 2:
            attrs = {a.name: a.i for a in node.attribute}
            bits = attrs.get("bits", 4)
            codes[node.input[1]] = bits
            scales[node.input[2]] = 1.0 / (CODE_STD[bits] * np.sqrt(attrs["K"]))
    return codes, scales


def fill_codes(rng, n, bits):
    """n bytes of `bits`-bit codes, two to a byte for 4 bits."""
    half = 1 << (bits - 1)
    per_byte = 8 // bits
    q = np.clip(np.rint(rng.standard_normal(n * per_byte) * CODE_STD[bits]) + half, 1, 2 * half - 1).astype(np.uint8)
    if per_byte == 2:
        q = q[0::2] | (q[1::2] << 4)
    return q.tobytes()


def fill(model):
    count = 0
    codes, scales = nbits_tensors(model)
    for t in model.graph.initializer:
        if t.doc_string != MARK:
            continue
        dims = list(t.dims)
        n = elements(t)
        rng = np.random.RandomState(zlib.crc32(t.name.encode()) & 0xFFFFFFFF)
        t.doc_string = ""
        count += 1
        if t.data_type == onnx.TensorProto.UINT8:
            t.raw_data = fill_codes(rng, n, codes.get(t.name, 8))
            continue
        if t.name in scales:  # positive, as a quantizer writes them
            t.raw_data = (np.abs(rng.standard_normal(n)) * scales[t.name]).astype("<f4").tobytes()
            continue
        if len(dims) >= 3:
            fan = n // dims[0]  # convolution kernels: [out, in, kh, kw]
        elif len(dims) == 2:
            fan = min(dims)  # matrix products store [in, out] or [out, in]
        else:
            fan = 0
        std = 1.0 / np.sqrt(fan) if fan else 0.02
        values = (rng.standard_normal(n) * std).astype("<f4")
        t.raw_data = values.tobytes()
    return count


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("strip", "fill"):
        sys.exit(__doc__)
    what, src, dst = sys.argv[1:]
    model = onnx.load(src)
    count = strip(model) if what == "strip" else fill(model)
    onnx.save(model, dst)
    print(f"{what}: {count} initializers, {dst}", file=sys.stderr)


if __name__ == "__main__":
    main()
