"""The quick start of ONNX Runtime's Python docs: open, inspect, run."""
import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort

import models

# Removed when the script exits, as a user's script would leave nothing behind.
scratch = tempfile.TemporaryDirectory()

path = models.mul_add(os.path.join(scratch.name, "mul_add.onnx"))
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])

inputs, outputs = sess.get_inputs(), sess.get_outputs()
assert [i.name for i in inputs] == ["x"]
assert inputs[0].type == "tensor(float)" and inputs[0].shape == ["N", 4], inputs[0]
assert [o.name for o in outputs] == ["y", "z"]
assert outputs[1].shape == ["N", 3] and outputs[1].type == "tensor(float)"

x = np.random.RandomState(0).randn(5, 4).astype(np.float32)
want_y, want_z = models.mul_add_reference(x)
y, z = sess.run(None, {"x": x})
np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(z, want_z, rtol=1e-5, atol=1e-6)
assert isinstance(z, np.ndarray) and z.dtype == np.float32 and z.shape == (5, 3)

# Only the outputs asked for, in the order asked.
(only_z,) = sess.run(["z"], {"x": x})
np.testing.assert_allclose(only_z, want_z, rtol=1e-5, atol=1e-6)
z2, y2 = sess.run(["z", "y"], {"x": x})
np.testing.assert_allclose(y2, want_y, rtol=1e-5, atol=1e-6)
# An empty list means every output, as None does.
assert len(sess.run([], {"x": x})) == 2

# The same session runs other batch sizes of the dynamic dimension.
(y1,) = sess.run(["y"], {"x": x[:1]})
np.testing.assert_allclose(y1, want_y[:1], rtol=1e-5, atol=1e-6)
print("ok", file=sys.stderr)
