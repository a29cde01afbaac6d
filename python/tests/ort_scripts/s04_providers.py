"""Providers: what is available, preference lists that fall back, options."""
import os
import tempfile
import warnings

import numpy as np
import onnxruntime as ort

import models

# Removed when the script exits, as a user's script would leave nothing behind.
scratch = tempfile.TemporaryDirectory()

path = models.mul_add(os.path.join(scratch.name, "mul_add.onnx"))
available = ort.get_available_providers()
assert "CPUExecutionProvider" in available, available
assert isinstance(ort.get_all_providers(), list)
assert ort.get_device() in ("CPU", "GPU")

x = np.ones((1, 4), np.float32)
# The usual GPU-first list: where CUDA is not available the session falls
# back to the CPU with a warning.
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    sess = ort.InferenceSession(path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
if "CUDAExecutionProvider" not in available:
    assert sess.get_providers() == ["CPUExecutionProvider"], sess.get_providers()
    assert any("CUDAExecutionProvider" in str(w.message) for w in caught), [str(w.message) for w in caught]
assert all(isinstance(p, str) for p in sess.get_providers())
sess.run(None, {"x": x})

# A provider with options: get_providers still gives names only.
sess = ort.InferenceSession(path, providers=[("CPUExecutionProvider", {"arena_extend_strategy": "kSameAsRequested"})])
assert sess.get_providers() == ["CPUExecutionProvider"]
options = sess.get_provider_options()
assert isinstance(options, dict) and "CPUExecutionProvider" in options
assert isinstance(options["CPUExecutionProvider"], dict)

# The parallel-list form, and set_providers.
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"], provider_options=[{}])
sess.set_providers(["CPUExecutionProvider"])
assert sess.get_providers() == ["CPUExecutionProvider"]
np.testing.assert_allclose(sess.run(["y"], {"x": x})[0], models.mul_add_reference(x)[0], rtol=1e-5)
