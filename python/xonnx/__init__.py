"""xonnx: run ONNX models on any XLA device through PjRT plugins.

Where its API overlaps ONNX Runtime's, a script written for onnxruntime runs
with ``import xonnx as ort``::

    import numpy as np
    import xonnx as ort

    session = ort.InferenceSession("model.onnx")
    name = session.get_inputs()[0].name
    probs, = session.run(None, {name: np.zeros((1, 3, 224, 224), np.float32)})

docs/api.md lists ONNX Runtime's Python API row by row with what xonnx does
for each.

Errors raise ``xonnx.Error`` (a RuntimeError) or one of its subclasses,
with the message the C++ API gives (the file, node and op concerned):
``InvalidArgument`` (also a ValueError), ``NoSuchFile`` (also a
FileNotFoundError), ``NotImplemented`` (also a NotImplementedError),
``Cancelled`` and ``DeadlineExceeded`` (also a TimeoutError). Each has a
``code`` attribute, the status code's name ("INVALID_ARGUMENT", ...).
Warnings (a provider skipped, a config entry without a meaning here) go to
the Python logger "xonnx".
"""

from . import _xonnx
from ._options import (  # noqa: F401  (re-exported)
    ExecutionMode,
    ExecutionOrder,
    GraphOptimizationLevel,
    OrtMemType,
    RunOptions,
    SessionOptions,
    set_default_logger_severity,
    set_default_logger_verbosity,
)
from ._generate import Generator  # noqa: F401
from ._xonnx import Tokenizer  # noqa: F401
from ._session import (  # noqa: F401
    InferenceSession,
    ModelMetadata,
    NodeArg,
    get_all_providers,
    get_available_providers,
)
from ._values import IOBinding, OrtDevice, OrtValue  # noqa: F401
from ._xonnx import (  # noqa: F401
    CancelToken,
    Cancelled,
    DataType,
    DeadlineExceeded,
    Error,
    InvalidArgument,
    NoSuchFile,
    NotImplemented,
)

__version__ = _xonnx.version()

__all__ = [
    "InferenceSession", "SessionOptions", "RunOptions", "NodeArg", "ModelMetadata", "OrtValue", "OrtDevice",
    "IOBinding", "GraphOptimizationLevel", "ExecutionMode", "ExecutionOrder", "OrtMemType", "CancelToken",
    "DataType", "Error", "InvalidArgument", "NoSuchFile", "NotImplemented", "Cancelled", "DeadlineExceeded",
    "Generator", "Tokenizer", "get_available_providers", "get_all_providers", "get_device", "plugins",
    "set_default_logger_severity", "set_default_logger_verbosity", "set_seed", "__version__",
]


def get_device():
    """ONNX Runtime's build device: "CPU" (the built-in plugin; others load
    at run time)."""
    return "CPU"


def set_seed(seed):
    """Kept for ONNX Runtime's scripts: xonnx's random ops take their seed
    from the model's attributes."""
    if not isinstance(seed, int):
        raise InvalidArgument(f"the seed must be an int, not {type(seed).__name__}")


def plugins():
    """Every plugin xonnx can find by name: dicts of name, path, source and
    refused (why it cannot be used; empty when it loads)."""
    return _xonnx.plugins()
