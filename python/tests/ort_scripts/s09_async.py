"""run_async with ONNX Runtime's callback(results, user_data, err)."""
import os
import tempfile
import threading

import numpy as np
import onnxruntime as ort

import models

# Removed when the script exits, as a user's script would leave nothing behind.
scratch = tempfile.TemporaryDirectory()

path = models.mul_add(os.path.join(scratch.name, "mul_add.onnx"))
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])


class Box:
    def __init__(self):
        self.event = threading.Event()
        self.results, self.err = None, None


def callback(results, user_data, err):
    user_data.results, user_data.err = results, err
    user_data.event.set()


xs = [np.full((2, 4), k, np.float32) for k in range(4)]
boxes = [Box() for _ in xs]
for x, box in zip(xs, boxes):
    sess.run_async(["y"], {"x": x}, callback, box)
for x, box in zip(xs, boxes):
    assert box.event.wait(60), "the callback never came"
    assert box.err == "", box.err
    np.testing.assert_allclose(np.asarray(box.results[0]), models.mul_add_reference(x)[0], rtol=1e-5)

# A failing run reports its error: to the callback, or (checked before the
# run starts) raised at once.
box = Box()
try:
    sess.run_async(None, {"x": np.ones((2, 5), np.float32)}, callback, box)
    assert box.event.wait(60)
    assert box.err, "a wrong shape must report an error"
except Exception as e:
    assert not isinstance(e, AssertionError), e
