"""RunOptions: config entries, log levels, terminate."""
import os
import tempfile

import numpy as np
import onnxruntime as ort

import models

# Removed when the script exits, as a user's script would leave nothing behind.
scratch = tempfile.TemporaryDirectory()

path = models.mul_add(os.path.join(scratch.name, "mul_add.onnx"))
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
x = np.ones((3, 4), np.float32)

ro = ort.RunOptions()
ro.log_severity_level = 3
ro.logid = "script"
ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
assert ro.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
np.testing.assert_allclose(sess.run(None, {"x": x}, ro)[0], models.mul_add_reference(x)[0], rtol=1e-5)

# A terminated RunOptions fails the calls made with it (ONNX Runtime raises
# its own Fail class, an Exception)...
ro.terminate = True
failed = False
try:
    sess.run(None, {"x": x}, ro)
except Exception:
    failed = True
assert failed, "a run with terminate set must fail"
# ...until it is cleared again.
ro.terminate = False
assert sess.run(None, {"x": x}, ro)[0].shape == (3, 3)
