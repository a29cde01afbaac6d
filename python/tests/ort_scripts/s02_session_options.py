"""SessionOptions as ONNX Runtime's tutorials set them; one options object
serves several sessions and is not changed by them."""
import logging
import os
import tempfile

import numpy as np
import onnxruntime as ort

import models

# Removed when the script exits, as a user's script would leave nothing behind.
scratch = tempfile.TemporaryDirectory()

path = models.mul_add(os.path.join(scratch.name, "mul_add.onnx"))
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
so.intra_op_num_threads = 2
so.inter_op_num_threads = 1
so.log_severity_level = 3
so.enable_mem_pattern = True
so.add_session_config_entry("session.intra_op.allow_spinning", "0")
assert so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
try:
    so.get_session_config_entry("session.not.set")
    raise AssertionError("reading an entry never set must raise")
except Exception:
    pass

x = np.ones((2, 4), np.float32)
results = []
for _ in range(3):
    sess = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])
    results.append(sess.run(["z"], {"x": x})[0])
    assert sess.get_session_options().intra_op_num_threads == 2
for r in results[1:]:
    np.testing.assert_array_equal(r, results[0])

# Unchanged by the sessions made with it.
assert so.intra_op_num_threads == 2
assert so.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
assert so.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL

# Optimizations off: the same results.
so2 = ort.SessionOptions()
so2.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
assert so2.graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL
sess = ort.InferenceSession(path, so2, providers=["CPUExecutionProvider"])
np.testing.assert_allclose(sess.run(["z"], {"x": x})[0], results[0], rtol=1e-6)
logging.getLogger(__name__).info("ok")
