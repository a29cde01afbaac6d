"""A session from bytes, and one session used from several threads."""
import concurrent.futures
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

import models

# Removed when the script exits, as a user's script would leave nothing behind.
scratch = tempfile.TemporaryDirectory()

path = models.two_inputs(os.path.join(scratch.name, "two.onnx"))
sess = ort.InferenceSession(onnx.load(path).SerializeToString(), providers=["CPUExecutionProvider"])
assert [i.name for i in sess.get_inputs()] == ["a", "b"]
assert sess.get_outputs()[1].type == "tensor(int64)"


def call(k):
    rng = np.random.RandomState(k)
    a, b = rng.randn(2, 3).astype(np.float32), rng.randn(2, 3).astype(np.float32)
    s, c = sess.run(None, {"a": a, "b": b})
    np.testing.assert_allclose(s, a + b, rtol=1e-6)
    np.testing.assert_array_equal(c, (a < b).astype(np.int64))
    return c.dtype


with concurrent.futures.ThreadPoolExecutor(4) as pool:
    assert all(t == np.int64 for t in pool.map(call, range(32)))
