"""The module's own functions: version, logging, enums, devices."""
import onnxruntime as ort

assert isinstance(ort.__version__, str) and ort.__version__.count(".") >= 1, ort.__version__
ort.set_default_logger_severity(3)
ort.set_default_logger_severity(2)
ort.set_default_logger_verbosity(0)
try:
    ort.set_default_logger_severity(7)
    raise AssertionError("severity 7 does not exist")
except Exception:
    pass
assert int(ort.GraphOptimizationLevel.ORT_DISABLE_ALL) == 0
assert int(ort.GraphOptimizationLevel.ORT_ENABLE_BASIC) == 1
assert int(ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED) == 2
assert int(ort.GraphOptimizationLevel.ORT_ENABLE_ALL) == 99
assert int(ort.ExecutionMode.ORT_SEQUENTIAL) == 0 and int(ort.ExecutionMode.ORT_PARALLEL) == 1
assert ort.SessionOptions().graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
assert ort.SessionOptions().log_severity_level == 2
assert ort.RunOptions().terminate is False
