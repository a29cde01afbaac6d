"""Named dynamic dimensions: reported by name, fixed by an override."""
import os
import tempfile

import numpy as np
import onnxruntime as ort

import models

# Removed when the script exits, as a user's script would leave nothing behind.
scratch = tempfile.TemporaryDirectory()

path = models.mul_add(os.path.join(scratch.name, "mul_add.onnx"), batch="batch_size")
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
assert sess.get_inputs()[0].shape == ["batch_size", 4]
for n in (1, 3, 8):
    x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
    np.testing.assert_allclose(sess.run(["y"], {"x": x})[0], models.mul_add_reference(x)[0], rtol=1e-5)

so = ort.SessionOptions()
so.add_free_dimension_override_by_name("batch_size", 2)
sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
assert sess.get_inputs()[0].shape == [2, 4], sess.get_inputs()[0].shape
x = np.ones((2, 4), np.float32)
np.testing.assert_allclose(sess.run(["z"], {"x": x})[0], models.mul_add_reference(x)[1], rtol=1e-5)
try:
    sess.run(["z"], {"x": np.ones((3, 4), np.float32)})
    raise AssertionError("the overridden dimension is fixed")
except AssertionError:
    raise
except Exception:
    pass
