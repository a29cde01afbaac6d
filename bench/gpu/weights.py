#!/usr/bin/env python3
"""Large float weights out of an ONNX model, and back in.

  weights.py strip IN OUT   drops the data of every float initializer of at
                            least 1024 elements (the file becomes a few KB to
                            carry to another machine); the tensor keeps its
                            name, type and dims and is marked as stripped.
  weights.py fill IN OUT    gives every stripped initializer deterministic
                            random values: the same on every machine and
                            numpy version (numpy's legacy RandomState stream
                            is frozen), seeded by the tensor's name, with a
                            standard deviation of 1/sqrt(fan-in) so that the
                            activations of deep models stay of order 1.

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
        if t.data_type == onnx.TensorProto.FLOAT and elements(t) >= MIN_ELEMENTS:
            t.ClearField("raw_data")
            t.ClearField("float_data")
            t.doc_string = MARK
            count += 1
    return count


def fill(model):
    count = 0
    for t in model.graph.initializer:
        if t.doc_string != MARK:
            continue
        dims = list(t.dims)
        n = elements(t)
        if len(dims) >= 3:
            fan = n // dims[0]  # convolution kernels: [out, in, kh, kw]
        elif len(dims) == 2:
            fan = min(dims)  # matrix products store [in, out] or [out, in]
        else:
            fan = 0
        std = 1.0 / np.sqrt(fan) if fan else 0.02
        rng = np.random.RandomState(zlib.crc32(t.name.encode()) & 0xFFFFFFFF)
        values = (rng.standard_normal(n) * std).astype("<f4")
        t.raw_data = values.tobytes()
        t.doc_string = ""
        count += 1
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
