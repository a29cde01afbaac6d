"""InferenceSession: ONNX Runtime's session API over xonnx's Session."""

import concurrent.futures
import datetime
import os
import time
import warnings

from . import _xonnx
from ._options import RunOptions, SessionOptions
from ._values import IOBinding, OrtValue
from ._xonnx import InvalidArgument

# ONNX Runtime's execution providers, as xonnx's plugins by name.
PROVIDERS = {
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


def available_plugins():
    """The names of the plugins that load here (the built-in CPU one always)."""
    return {"cpu"} | {p["name"] for p in _xonnx.plugins() if not p["refused"]}


class NodeArg:
    """A model input or output: ``name``, ``shape`` (ints, with a string for
    a named dynamic dimension and None for an unnamed one) and ``type``
    (ONNX Runtime's "tensor(float)" form; ``dtype`` is xonnx's name)."""

    def __init__(self, spec, fixed=None):
        self.name = spec["name"]
        # Dimensions fixed by add_free_dimension_override_by_name read as their size.
        self.shape = [fixed[d] if isinstance(d, str) and fixed and d in fixed else d for d in spec["shape"]]
        self.dtype = spec["dtype"]
        self.type = _ORT_TYPES.get(self.dtype, self.dtype)
        if spec["sequence"]:
            self.type = f"seq({self.type})"
        if spec["optional"]:
            self.type = f"optional({self.type})"

    def __repr__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    """The model's metadata, as ONNX Runtime's get_modelmeta() gives it:
    producer_name, graph_name, graph_description, domain, description,
    version and custom_metadata_map."""

    def __init__(self, d):
        self.producer_name = d["producer_name"]
        self.graph_name = d["graph_name"]
        self.graph_description = d["graph_description"]
        self.domain = d["domain"]
        self.description = d["description"]
        self.version = d["version"]
        self.custom_metadata_map = dict(d["custom_metadata_map"])

    def __repr__(self):
        return (f"ModelMetadata(producer_name='{self.producer_name}', graph_name='{self.graph_name}', "
                f"domain='{self.domain}', version={self.version})")


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
    # ONNX Runtime returns every output for an empty list too.
    return list(output_names) if output_names else None


def _provider_list(providers, provider_options):
    """[(name, options dict)] from ONNX Runtime's two forms: names with a
    parallel list of option dicts, or (name, options) pairs."""
    if isinstance(providers, str):
        raise InvalidArgument("providers must be a list of provider names, not one string")
    if provider_options is not None and len(provider_options) != len(providers):
        raise InvalidArgument(f"{len(providers)} providers but {len(provider_options)} provider_options")
    out = []
    for k, p in enumerate(providers):
        name, opts = (p[0], dict(p[1])) if isinstance(p, (tuple, list)) else (p, {})
        if provider_options is not None:
            opts.update(provider_options[k])
        out.append((name, {str(key): str(value) for key, value in opts.items()}))
    return out


class InferenceSession:
    """Opens a model (a path, or the bytes of a serialized ModelProto) and
    runs it. ``providers`` (ONNX Runtime's names, in order of preference)
    choose the plugin: one whose plugin does not load here is skipped with
    a warning, as ONNX Runtime skips an unavailable provider, down to the
    CPU (config entry session.disable_cpu_ep_fallback=1 makes that an
    error). ``plugin``
    ("cpu", "cuda", "tpu" or a path) names one directly. Calls may come
    from several threads at once."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, plugin=None,
                 external_data_dir=None, **kwargs):
        if kwargs:
            raise InvalidArgument(f"unknown arguments {sorted(kwargs)}")
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_bytes, self._model_path = bytes(path_or_bytes), None
        else:
            self._model_bytes, self._model_path = None, os.fspath(path_or_bytes)
        self._given_options = sess_options if sess_options is not None else SessionOptions()
        self._external_data_dir = external_data_dir or ""
        self._open(providers, provider_options, plugin)

    def _open(self, providers, provider_options, plugin):
        options = SessionOptions._copy_of(self._given_options)
        if plugin is None and providers:
            wanted = _provider_list(providers, provider_options)
            available = get_available_providers()
            chosen = [(n, o) for n, o in wanted if n in available]
            skipped = [n for n, _ in wanted if n not in available]
            if skipped and options.__dict__.get("_no_fallback"):
                raise InvalidArgument(f"providers {skipped} are not available here (available: {available}), "
                                      "and session.disable_cpu_ep_fallback is set")
            for name in skipped:
                # As ONNX Runtime warns, and then goes on with the others.
                why = "no plugin of it loads here" if name in PROVIDERS else "xonnx does not know it"
                warnings.warn(f"Specified provider '{name}' is not in available provider names ({why}). "
                              f"Available providers: '{', '.join(available)}'")
            if not chosen:
                chosen = [("CPUExecutionProvider", {})]
            plugin = PROVIDERS[chosen[0][0]]
            if "device_id" in chosen[0][1]:
                options.device = int(chosen[0][1]["device_id"])
        else:
            # A plugin named directly (or the options' own) is the provider.
            chosen = [(_provider_of(plugin if plugin is not None else options.plugin), {})]
        if plugin is not None:
            options.plugin = plugin
        # ONNX Runtime's intra-op thread count is the CPU plugin's `threads`.
        threads = options.__dict__.get("intra_op_num_threads", 0)
        if threads and options.plugin in ("", "cpu"):
            options.add_create_option(f"threads={int(threads)}")
        if options.__dict__.get("enable_profiling") and not options.profile_file:
            stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
            options.profile_file = f"{options.__dict__['profile_file_prefix']}_{stamp}.json"
        self._profiling_start_ns = time.time_ns() if options.profile_file else 0
        if self._model_bytes is not None:
            session = _xonnx.Session.open_bytes(self._model_bytes, options, self._external_data_dir)
        else:
            session = _xonnx.Session.open(self._model_path, options)
        self._session, self._options, self._providers = session, options, chosen
        fixed = options.__dict__.get("_free_dims", {})
        self._inputs = [NodeArg(s, fixed) for s in session.inputs()]
        self._outputs = [NodeArg(s, fixed) for s in session.outputs()]
        self._fixed = {}  # input name -> [(axis, dimension name, size)]
        for spec in session.inputs():
            for axis, d in enumerate(spec["shape"]):
                if isinstance(d, str) and d in fixed:
                    self._fixed.setdefault(spec["name"], []).append((axis, d, fixed[d]))

    # --- the model ---
    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_modelmeta(self):
        return ModelMetadata(self._session.model_metadata())

    def get_device(self):
        """The plugin, platform and device, in one line."""
        return self._session.device_summary()

    # --- providers and options ---
    def get_providers(self):
        return [name for name, _ in self._providers]

    def get_provider_options(self):
        return {name: dict(opts) for name, opts in self._providers}

    def set_providers(self, providers=None, provider_options=None):
        """Opens the model again on the first available of `providers`
        (the CPU when None)."""
        self._open(providers or ["CPUExecutionProvider"], provider_options, None)

    def get_session_options(self):
        """The options this session was made with (a copy of the caller's,
        with the plugin and profile file it chose)."""
        return self._options

    def disable_fallback(self):
        self._options.__dict__["_no_fallback"] = True

    def enable_fallback(self):
        self._options.__dict__["_no_fallback"] = False

    # --- running ---
    def run(self, output_names, input_feed, run_options=None):
        """Runs the model: a list of numpy arrays, one per name in
        ``output_names`` (None or []: every output, in model order)."""
        names = _check_call(output_names, input_feed)
        self._check_fixed(input_feed)
        deadline, cancel = _bounds(run_options)
        return self._session.run(names, input_feed, deadline, cancel)

    def _check_fixed(self, input_feed):
        for name, dims in self._fixed.items():
            shape = getattr(input_feed.get(name), "shape", None)
            if shape is None:
                continue
            for axis, dim, size in dims:
                if axis < len(shape) and shape[axis] != size:
                    raise InvalidArgument(f"input '{name}': dimension '{dim}' is fixed to {size} (SessionOptions."
                                          f"add_free_dimension_override_by_name), got {shape[axis]}")

    def run_with_ort_values(self, output_names, input_dict_ortvalue, run_options=None):
        """run() on OrtValues: a list of OrtValues."""
        feed = {name: v.numpy() if isinstance(v, OrtValue) else v for name, v in input_dict_ortvalue.items()}
        return [OrtValue(a) for a in self.run(output_names, feed, run_options)]

    def io_binding(self):
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        iobinding._run(run_options)

    def run_async(self, output_names, input_feed, *args, **kwargs):
        """Starts a run on the session's worker threads and returns a
        concurrent.futures.Future of its outputs. Takes ONNX Runtime's
        arguments, run_async(output_names, input_feed, callback, user_data,
        run_options=None), or xonnx's, run_async(output_names, input_feed,
        run_options=None, callback=None, user_data=None); the callback is
        called as ONNX Runtime calls it: callback(outputs, user_data,
        error_message_or_empty)."""
        if args and callable(args[0]) and not isinstance(args[0], RunOptions):
            order = ("callback", "user_data", "run_options")
        else:
            order = ("run_options", "callback", "user_data")
        if len(args) > len(order):
            raise InvalidArgument(f"run_async takes at most {2 + len(order)} positional arguments")
        bound = dict(zip(order, args))
        for key, value in kwargs.items():
            if key not in order or key in bound:
                raise InvalidArgument(f"run_async: unexpected or repeated argument '{key}'")
            bound[key] = value
        callback, user_data = bound.get("callback"), bound.get("user_data")
        if callback is not None and not callable(callback):
            raise InvalidArgument(f"run_async's callback must be callable, not {type(callback).__name__}")
        names = _check_call(output_names, input_feed)
        self._check_fixed(input_feed)
        future = concurrent.futures.Future()
        deadline, cancel = _bounds(bound.get("run_options"))

        def done(error, outputs):
            if error is None:
                future.set_result(outputs)
            else:
                future.set_exception(error)
            if callback is not None:
                callback(outputs, user_data, "" if error is None else str(error))

        self._session.run_async(names, input_feed, done, deadline, cancel)
        return future

    # --- profiling ---
    def end_profiling(self):
        """Writes the profile (a Chrome/Perfetto trace) and returns its path;
        "" when the session does not profile (as ONNX Runtime)."""
        if not self._options.profile_file:
            return ""
        self._session.write_profile()
        return self._options.profile_file

    def get_profiling_start_time_ns(self):
        return self._profiling_start_ns


def _provider_of(plugin):
    """ONNX Runtime's name for a plugin; the plugin's own name (or path)
    when it has none."""
    if plugin in ("", "cpu"):
        return "CPUExecutionProvider"
    for name, p in PROVIDERS.items():
        if p == plugin:
            return name
    return plugin


def _bounds(run_options):
    if run_options is None:
        return -1, None
    return run_options.deadline_ms, run_options._cancel


def get_available_providers():
    """ONNX Runtime's names of the plugins that load here."""
    found = available_plugins()
    return [name for name, plugin in PROVIDERS.items() if plugin in found]


def get_all_providers():
    """Every provider name xonnx maps to a plugin."""
    return list(PROVIDERS)
