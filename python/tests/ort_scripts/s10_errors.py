"""Errors a script meets, as ONNX Runtime raises them (every one an
Exception with a message naming what is wrong)."""
import os
import tempfile

import numpy as np
import onnxruntime as ort

import models

# Removed when the script exits, as a user's script would leave nothing behind.
scratch = tempfile.TemporaryDirectory()

folder = scratch.name
path = models.mul_add(os.path.join(folder, "mul_add.onnx"))
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])


def fails(fn, *words):
    try:
        fn()
    except Exception as e:  # ONNX Runtime's own classes differ; each is an Exception
        text = str(e)
        for w in words:
            assert w in text, f"'{w}' not in: {text}"
        return
    raise AssertionError("expected an error")


fails(lambda: sess.run(None, {"nope": np.ones((1, 4), np.float32)}), "nope")
fails(lambda: sess.run(None, {}), "x")
fails(lambda: sess.run(["nope"], {"x": np.ones((1, 4), np.float32)}), "nope")
fails(lambda: sess.run(None, {"x": np.ones((1, 4), np.int32)}))
fails(lambda: sess.run(None, {"x": np.ones((1, 5), np.float32)}))
fails(lambda: sess.run(None, {"x": np.ones((4,), np.float32)}))
fails(lambda: ort.InferenceSession(os.path.join(folder, "missing.onnx"), providers=["CPUExecutionProvider"]),
      "missing.onnx")
fails(lambda: ort.InferenceSession(b"not a model", providers=["CPUExecutionProvider"]))
# A session still runs after its callers' errors.
assert sess.run(None, {"x": np.ones((1, 4), np.float32)})[0].shape == (1, 3)
