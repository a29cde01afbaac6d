"""xonnx: run ONNX models on any XLA device through PjRT plugins.

Where its API overlaps ONNX Runtime's, a script written for onnxruntime runs
with ``import xonnx as ort``::

    import numpy as np
    import xonnx as ort

    session = ort.InferenceSession("model.onnx")
    name = session.get_inputs()[0].name
    probs, = session.run(None, {name: np.zeros((1, 3, 224, 224), np.float32)})

Errors raise ``xonnx.Error`` (a RuntimeError) or one of its subclasses,
with the message the C++ API gives (the file, node and op concerned):
``InvalidArgument`` (also a ValueError), ``NoSuchFile`` (also a
FileNotFoundError), ``NotImplemented`` (also a NotImplementedError),
``Cancelled`` and ``DeadlineExceeded`` (also a TimeoutError). Each has a
``code`` attribute, the status code's name ("INVALID_ARGUMENT", ...).
"""

import concurrent.futures
import os

from . import _xonnx
from ._xonnx import (  # noqa: F401  (re-exported)
    CancelToken,
    Cancelled,
    DataType,
    DeadlineExceeded,
    Error,
    InvalidArgument,
    NoSuchFile,
    NotImplemented,
)

__all__ = [
    "InferenceSession", "SessionOptions", "RunOptions", "NodeArg", "CancelToken", "DataType",
    "Error", "InvalidArgument", "NoSuchFile", "NotImplemented", "Cancelled", "DeadlineExceeded",
    "get_available_providers", "get_device", "plugins",
]

# ONNX Runtime's execution providers, as xonnx's plugins by name.
_PROVIDERS = {
    "CPUExecutionProvider": "cpu",
    "CUDAExecutionProvider": "cuda",
    "TensorrtExecutionProvider": "cuda",
    "ROCMExecutionProvider": "rocm",
}

# ONNX Runtime's type strings, by xonnx's type names.
_ORT_TYPES = {
    "float32": "tensor(float)", "float16": "tensor(float16)", "bfloat16": "tensor(bfloat16)",
    "float64": "tensor(double)", "int8": "tensor(int8)", "int16": "tensor(int16)",
    "int32": "tensor(int32)", "int64": "tensor(int64)", "uint8": "tensor(uint8)",
    "uint16": "tensor(uint16)", "uint32": "tensor(uint32)", "uint64": "tensor(uint64)",
    "bool": "tensor(bool)", "string": "tensor(string)",
}

_DATA_TYPES = {"f32": DataType.float32, "float32": DataType.float32, "f16": DataType.float16,
               "float16": DataType.float16, "bf16": DataType.bfloat16, "bfloat16": DataType.bfloat16}


class SessionOptions(_xonnx.SessionOptions):
    """The C++ SessionOptions (xonnx/options.h), field for field: plugin,
    device, max_batch, batch_buckets, dim_buckets, data_type, io_data_type,
    allow_tf32, deadline_ms, use_cache, cache_dir, compile_threads,
    profile_file, optimize, allow_unsupported, program_format ("auto", "hlo"
    or "stablehlo"); add_create_option("name=value")
    and set_xonnx_flags("--dump_to=DIR ...").

    data_type and io_data_type also take "f32", "f16" or "bf16".
    intra_op_num_threads sets the threads of xonnx's CPU plugin (its create
    option `threads`). Other settings of ONNX Runtime's SessionOptions
    (graph_optimization_level, ...) may be set and are kept, but change
    nothing.
    """

    def __setattr__(self, name, value):
        if name in ("data_type", "io_data_type") and isinstance(value, str):
            if value not in _DATA_TYPES:
                raise InvalidArgument(f"{name} takes f32, f16 or bf16, not '{value}'")
            value = _DATA_TYPES[value]
        if name == "program_format" and value not in ("auto", "hlo", "stablehlo"):
            raise InvalidArgument(f"program_format takes auto, hlo or stablehlo, not '{value}'")
        if hasattr(_xonnx.SessionOptions, name):
            super().__setattr__(name, value)
        else:
            self.__dict__[name] = value


class RunOptions:
    """Bounds on one call: ``deadline_ms`` (-1: the session's; 0: none) and
    ``terminate`` (set it to True, from any thread, to cancel the calls made
    with these options, as ONNX Runtime's RunOptions.terminate does)."""

    def __init__(self):
        self.deadline_ms = -1
        self._cancel = CancelToken()

    @property
    def terminate(self):
        return self._cancel.cancelled

    @terminate.setter
    def terminate(self, value):
        if value:
            self._cancel.cancel()
        elif self._cancel.cancelled:
            self._cancel = CancelToken()


class NodeArg:
    """A model input or output: ``name``, ``shape`` (ints, with a string for
    a named dynamic dimension and None for an unnamed one) and ``type``
    (ONNX Runtime's "tensor(float)" form; ``dtype`` is xonnx's name)."""

    def __init__(self, spec):
        self.name = spec["name"]
        self.shape = spec["shape"]
        self.dtype = spec["dtype"]
        self.type = _ORT_TYPES.get(self.dtype, self.dtype)
        if spec["sequence"]:
            self.type = f"seq({self.type})"
        if spec["optional"]:
            self.type = f"optional({self.type})"

    def __repr__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


def _check_call(output_names, input_feed):
    """One-line errors for arguments of the wrong kind (the binding's own
    would list every overload)."""
    if not isinstance(input_feed, dict):
        raise InvalidArgument(
            f"input_feed must be a dict of input names to arrays, not {type(input_feed).__name__}")
    for name in input_feed:
        if not isinstance(name, str):
            raise InvalidArgument(f"input_feed keys must be input names (str), not {type(name).__name__}")
    if output_names is not None and (isinstance(output_names, str) or
                                     not all(isinstance(n, str) for n in output_names)):
        raise InvalidArgument("output_names must be None or a list of output names (str)")


class InferenceSession:
    """Opens a model (a path, or the bytes of a serialized ModelProto) and
    runs it. ``plugin`` names the PjRT plugin ("cpu", "cuda", "tpu" or a
    path); ``providers`` (ONNX Runtime's names) choose one when ``plugin``
    is not given. Calls may come from several threads at once."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, plugin=None,
                 external_data_dir=None):
        options = sess_options if sess_options is not None else SessionOptions()
        if plugin is None and providers:
            names = [p[0] if isinstance(p, (tuple, list)) else p for p in providers]
            unknown = [n for n in names if n not in _PROVIDERS]
            if unknown:
                raise InvalidArgument(f"unknown providers {unknown}; xonnx maps {sorted(_PROVIDERS)} to its plugins")
            plugin = _PROVIDERS[names[0]]
        if plugin is not None:
            options.plugin = plugin
        # ONNX Runtime's intra-op thread count is the CPU plugin's `threads`.
        threads = options.__dict__.get("intra_op_num_threads", 0)
        if threads and options.plugin in ("", "cpu"):
            options.add_create_option(f"threads={int(threads)}")
        self._providers = providers or ["CPUExecutionProvider"]
        self._profile_file = options.profile_file
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._session = _xonnx.Session.open_bytes(bytes(path_or_bytes), options, external_data_dir or "")
            self._model_path = None
        else:
            self._model_path = os.fspath(path_or_bytes)
            self._session = _xonnx.Session.open(self._model_path, options)
        self._inputs = [NodeArg(s) for s in self._session.inputs()]
        self._outputs = [NodeArg(s) for s in self._session.outputs()]

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_providers(self):
        return list(self._providers)

    def get_device(self):
        """The plugin, platform and device, in one line."""
        return self._session.device_summary()

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model: a list of numpy arrays, one per name in
        ``output_names`` (None: every output, in model order)."""
        _check_call(output_names, input_feed)
        deadline, cancel = self._bounds(run_options)
        return self._session.run(output_names, input_feed, deadline, cancel)

    def run_async(self, output_names, input_feed, run_options=None, callback=None, user_data=None):
        """Starts a run on the session's worker threads and returns a
        concurrent.futures.Future of its outputs. With ``callback``, it is
        also called as ONNX Runtime's run_async calls it:
        callback(outputs, user_data, error_message_or_empty)."""
        _check_call(output_names, input_feed)
        future = concurrent.futures.Future()
        deadline, cancel = self._bounds(run_options)

        def done(error, outputs):
            if error is None:
                future.set_result(outputs)
            else:
                future.set_exception(error)
            if callback is not None:
                callback(outputs, user_data, "" if error is None else str(error))

        self._session.run_async(output_names, input_feed, done, deadline, cancel)
        return future

    def end_profiling(self):
        """Writes the profile (SessionOptions.profile_file) and returns its path."""
        self._session.write_profile()
        return self._profile_file

    @staticmethod
    def _bounds(run_options):
        if run_options is None:
            return -1, None
        return run_options.deadline_ms, run_options._cancel


def get_available_providers():
    """ONNX Runtime's names of the plugins that load here."""
    found = {p["name"] for p in _xonnx.plugins() if not p["refused"]}
    return [name for name, plugin in _PROVIDERS.items() if plugin in found]


def get_device():
    return "CPU"


def plugins():
    """Every plugin xonnx can find by name: dicts of name, path, source and
    refused (why it cannot be used; empty when it loads)."""
    return _xonnx.plugins()
