"""OrtValue: from numpy, from shape and type, and run_with_ort_values."""
import os
import tempfile

import numpy as np
import onnxruntime as ort

import models

# Removed when the script exits, as a user's script would leave nothing behind.
scratch = tempfile.TemporaryDirectory()

path = models.mul_add(os.path.join(scratch.name, "mul_add.onnx"))
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])

x = np.random.RandomState(1).rand(2, 4).astype(np.float32)
value = ort.OrtValue.ortvalue_from_numpy(x)
assert value.shape() == [2, 4]
assert value.data_type() == "tensor(float)"
assert value.device_name().lower() == "cpu"
assert value.is_tensor() and value.has_value()
np.testing.assert_array_equal(value.numpy(), x)
assert value.data_ptr() != 0

outputs = sess.run_with_ort_values(["y", "z"], {"x": value})
assert len(outputs) == 2 and all(isinstance(o, ort.OrtValue) for o in outputs)
want_y, want_z = models.mul_add_reference(x)
np.testing.assert_allclose(outputs[0].numpy(), want_y, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(outputs[1].numpy(), want_z, rtol=1e-5, atol=1e-6)

empty = ort.OrtValue.ortvalue_from_shape_and_type([3, 2], np.int64)
assert empty.shape() == [3, 2] and empty.data_type() == "tensor(int64)"
empty.update_inplace(np.arange(6, dtype=np.int64).reshape(3, 2))
assert empty.numpy()[2, 1] == 5
