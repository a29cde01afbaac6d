"""IO binding as ONNX Runtime's performance tutorial uses it."""
import os
import tempfile

import numpy as np
import onnxruntime as ort

import models

# Removed when the script exits, as a user's script would leave nothing behind.
scratch = tempfile.TemporaryDirectory()

path = models.mul_add(os.path.join(scratch.name, "mul_add.onnx"))
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
x = np.random.RandomState(2).randn(4, 4).astype(np.float32)
want_y, want_z = models.mul_add_reference(x)

# Inputs from the CPU, outputs allocated by the session.
binding = sess.io_binding()
binding.bind_cpu_input("x", x)
binding.bind_output("y")
binding.bind_output("z")
sess.run_with_iobinding(binding)
y, z = binding.copy_outputs_to_cpu()
np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(z, want_z, rtol=1e-5, atol=1e-6)
assert [o.shape() for o in binding.get_outputs()] == [[4, 3], [4, 3]]

# An output written into a value allocated beforehand.
z_value = ort.OrtValue.ortvalue_from_shape_and_type([4, 3], np.float32, "cpu", 0)
binding = sess.io_binding()
binding.bind_ortvalue_input("x", ort.OrtValue.ortvalue_from_numpy(x))
binding.bind_ortvalue_output("z", z_value)
sess.run_with_iobinding(binding)
np.testing.assert_allclose(z_value.numpy(), want_z, rtol=1e-5, atol=1e-6)

# An input given by its address, as bind_input takes a device buffer.
x2 = np.ascontiguousarray(x[:2] * 2)
binding = sess.io_binding()
binding.bind_input("x", "cpu", 0, np.float32, list(x2.shape), x2.ctypes.data)
binding.bind_output("y", "cpu")
sess.run_with_iobinding(binding)
np.testing.assert_allclose(binding.copy_outputs_to_cpu()[0], models.mul_add_reference(x2)[0], rtol=1e-5, atol=1e-6)

# Rebinding the input reuses the binding for the next call.
binding.bind_cpu_input("x", x)
sess.run_with_iobinding(binding)
np.testing.assert_allclose(binding.copy_outputs_to_cpu()[0], want_y, rtol=1e-5, atol=1e-6)
binding.clear_binding_inputs()
binding.clear_binding_outputs()
