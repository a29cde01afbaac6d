"""Profiling: enable_profiling, end_profiling's file, the start time."""
import json
import os
import tempfile

import numpy as np
import onnxruntime as ort

import models

# Removed when the script exits, as a user's script would leave nothing behind.
scratch = tempfile.TemporaryDirectory()

folder = scratch.name
path = models.mul_add(os.path.join(folder, "mul_add.onnx"))
so = ort.SessionOptions()
so.enable_profiling = True
so.profile_file_prefix = os.path.join(folder, "trace")
sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
assert sess.get_profiling_start_time_ns() > 0
for _ in range(3):
    sess.run(None, {"x": np.ones((2, 4), np.float32)})
written = sess.end_profiling()
assert os.path.basename(written).startswith("trace") and written.endswith(".json"), written
assert os.path.exists(written), written
with open(written) as f:
    trace = json.load(f)
assert trace, "the trace has events"

# Profiling was asked of the session, not of the options object.
assert so.enable_profiling is True
# Without profiling there is no file: an empty name.
plain = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
assert plain.end_profiling() == ""
