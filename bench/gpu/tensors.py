#!/usr/bin/env python3
"""Tensor files (TensorProto .pb) for bench/gpu: the kit's input, and the
checks of outputs against the reference.

  tensors.py input OUT 2x3x224x224           a fixed random f32 input named "input"
  tensors.py compare REF GOT LABEL DTYPE     relative L2 error of GOT against REF,
                                             ok or FAIL against DTYPE's bar
  tensors.py ort MODEL INPUT REF LABEL       ONNX Runtime (CPU) on MODEL against REF,
                                             when the onnxruntime package is there
  tensors.py refs DIR                        writes output_<i>.pb of every data set of
                                             the model DIR/model.onnx with ONNX Runtime
                                             (CPU): the expected outputs of a model whose
                                             weights weights.py filled in

Needs only onnx and numpy.
"""
import sys

import numpy as np
from onnx import TensorProto, numpy_helper

# f32 on a GPU may use TF32 matrix units; 16-bit types keep 8 or 11 bits.
BARS = {"f32": 1e-2, "f16": 2e-2, "bf16": 5e-2}


def load(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def rel_error(got, ref):
    got, ref = got.astype(np.float64), ref.astype(np.float64)
    return np.linalg.norm(got - ref) / np.linalg.norm(ref)


def write_refs(folder):
    import glob
    import os

    import onnxruntime as ort
    s = ort.InferenceSession(os.path.join(folder, "model.onnx"), providers=["CPUExecutionProvider"])
    names = [i.name for i in s.get_inputs()]
    for data_set in sorted(glob.glob(os.path.join(folder, "test_data_set_*"))):
        feeds = {}
        for k in range(len(glob.glob(os.path.join(data_set, "input_*.pb")))):
            t = TensorProto()
            with open(os.path.join(data_set, f"input_{k}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            feeds[t.name if t.name in names else names[k]] = numpy_helper.to_array(t)
        for k, (out, y) in enumerate(zip(s.get_outputs(), s.run(None, feeds))):
            with open(os.path.join(data_set, f"output_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(y), out.name).SerializeToString())


def main():
    what, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if what == "input" and len(args) == 2:
        dims = [int(d) for d in args[1].split("x")]
        x = np.random.RandomState(7).standard_normal(dims).astype(np.float32)
        with open(args[0], "wb") as f:
            f.write(numpy_helper.from_array(x, "input").SerializeToString())
    elif what == "compare" and len(args) == 4:
        ref, got = load(args[0]), load(args[1])
        label, bar = f"{args[2]} {args[3]}", BARS[args[3]]
        if ref.shape != got.shape:
            print(f"{label}: FAIL, shape {got.shape}, expected {ref.shape}")
        else:
            err = rel_error(got, ref)
            print(f"{label}: rel error {err:.2e} (bar {bar:.0e}) {'ok' if err <= bar else 'FAIL'}")
    elif what == "ort" and len(args) == 4:
        try:
            import onnxruntime as ort
        except ImportError:
            print(f"{args[3]}: onnxruntime not installed; reference not cross-checked")
            return
        s = ort.InferenceSession(args[0], providers=["CPUExecutionProvider"])
        got = s.run(None, {"input": load(args[1])})[0]
        print(f"{args[3]}: ONNX Runtime {ort.__version__} (CPU) against the reference: "
              f"rel error {rel_error(got, load(args[2])):.2e}")
    elif what == "refs" and len(args) == 1:
        write_refs(args[0])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
