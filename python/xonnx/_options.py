"""Session and run options: xonnx's own, and ONNX Runtime's names for them.

ONNX Runtime's settings map onto xonnx's options where they mean something
here; the others are kept (so a script can read back what it set) and change
nothing, and a config entry xonnx does not know is accepted with a warning.
"""

import enum
import logging

from . import _xonnx
from ._xonnx import InvalidArgument

log = logging.getLogger("xonnx")


class GraphOptimizationLevel(enum.IntEnum):
    """ONNX Runtime's optimization levels. ORT_DISABLE_ALL turns off xonnx's
    HLO optimization pipeline (SessionOptions.optimize = False); the others
    run it (the CPU plugin's own passes always run)."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Kept and reported; xonnx's CPU backend runs independent branches
    concurrently whenever it pays, whatever the mode."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    """Kept and reported; the backend orders the program itself."""
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class OrtMemType(enum.IntEnum):
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1
    DEFAULT = 0


# ONNX Runtime's log severities (0 verbose .. 4 fatal) as Python's levels.
_SEVERITY = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR, 4: logging.CRITICAL}


def set_default_logger_severity(level):
    """Messages below ONNX Runtime's severity `level` (0 verbose, 1 info,
    2 warning (the default), 3 error, 4 fatal) are not shown; they go to the
    Python logger "xonnx"."""
    if level not in _SEVERITY:
        raise InvalidArgument(f"log severity must be 0 (verbose) to 4 (fatal), not {level}")
    log.setLevel(_SEVERITY[level])


def set_default_logger_verbosity(level):
    """Kept for ONNX Runtime's scripts: xonnx has no verbose sub-levels."""
    if not isinstance(level, int) or level < 0:
        raise InvalidArgument(f"log verbosity must be a non-negative int, not {level!r}")


_DATA_TYPES = {"f32": _xonnx.DataType.float32, "float32": _xonnx.DataType.float32,
               "f16": _xonnx.DataType.float16, "float16": _xonnx.DataType.float16,
               "bf16": _xonnx.DataType.bfloat16, "bfloat16": _xonnx.DataType.bfloat16}


def _flag(value):
    if str(value).lower() in ("1", "true"):
        return True
    if str(value).lower() in ("0", "false"):
        return False
    raise InvalidArgument(f"expected 0 or 1, not '{value}'")


# Session config entries with a meaning here: key -> (what it sets, how the
# value string converts). "xonnx.<field>" keys set SessionOptions fields.
_SESSION_ENTRIES = {
    "session.disable_cpu_ep_fallback": ("_no_fallback", _flag),
    "xonnx.max_batch": ("max_batch", int),
    "xonnx.deadline_ms": ("deadline_ms", int),
    "xonnx.use_cache": ("use_cache", _flag),
    "xonnx.cache_dir": ("cache_dir", str),
    "xonnx.compile_threads": ("compile_threads", int),
    "xonnx.check_indices": ("check_indices", _flag),
    "xonnx.allow_tf32": ("allow_tf32", _flag),
    "xonnx.data_type": ("data_type", str),
    "xonnx.io_data_type": ("io_data_type", str),
    "xonnx.program_format": ("program_format", str),
}


# Run config entries with a meaning here, as _SESSION_ENTRIES.
_RUN_ENTRIES = {"xonnx.deadline_ms": ("deadline_ms", int)}


def _set_entry(target, config, known, kind, key, value):
    """Records a config entry, setting the option it maps to in `known`."""
    key, value = str(key), str(value)
    if key in known:
        field, convert = known[key]
        try:
            converted = convert(value)
        except (ValueError, InvalidArgument) as e:
            raise InvalidArgument(f"{kind} config entry {key}: {e}") from None
        setattr(target, field, converted)
    else:
        log.warning("%s config entry '%s' has no meaning in xonnx: kept, but it changes nothing", kind, key)
    config[key] = value


def _get_entry(config, kind, key):
    if key not in config:
        raise InvalidArgument(f"{kind} config entry '{key}' is not set")
    return config[key]


class SessionOptions(_xonnx.SessionOptions):
    """The C++ SessionOptions (xonnx/options.h), field for field: plugin,
    device, max_batch, batch_buckets, dim_buckets, data_type, io_data_type,
    allow_tf32, check_indices, deadline_ms, use_cache, cache_dir,
    compile_threads, profile_file, optimize, allow_unsupported,
    program_format ("auto", "hlo" or "stablehlo"); add_create_option("name=value")
    and set_xonnx_flags("--dump_to=DIR ...").

    And ONNX Runtime's: intra_op_num_threads (the threads of xonnx's CPU
    plugin), graph_optimization_level (ORT_DISABLE_ALL turns `optimize`
    off), enable_profiling with profile_file_prefix (the trace is written
    to PREFIX_DATE_TIME.json), log_severity_level, add_session_config_entry,
    add_free_dimension_override_by_name (a dynamic dimension's size). Other
    settings (inter_op_num_threads, execution_mode, enable_mem_pattern, ...)
    may be set and are kept, but change nothing.

    Making a session never changes its options: one object may serve many
    sessions.
    """

    def __init__(self):
        super().__init__()
        d = self.__dict__
        d.update(intra_op_num_threads=0, inter_op_num_threads=0, execution_mode=ExecutionMode.ORT_SEQUENTIAL,
                 execution_order=ExecutionOrder.DEFAULT, enable_profiling=False,
                 profile_file_prefix="onnxruntime_profile_", optimized_model_filepath="", log_severity_level=2,
                 log_verbosity_level=0, logid="", enable_cpu_mem_arena=True, enable_mem_pattern=True,
                 enable_mem_reuse=True, use_deterministic_compute=False)
        d["_config"] = {}
        d["_no_fallback"] = False
        d["_free_dims"] = {}

    def __setattr__(self, name, value):
        if name in ("data_type", "io_data_type") and isinstance(value, str):
            if value not in _DATA_TYPES:
                raise InvalidArgument(f"{name} takes f32, f16 or bf16, not '{value}'")
            value = _DATA_TYPES[value]
        if name == "program_format" and value not in ("auto", "hlo", "stablehlo"):
            raise InvalidArgument(f"program_format takes auto, hlo or stablehlo, not '{value}'")
        if name == "graph_optimization_level":
            value = GraphOptimizationLevel(value)
            super().__setattr__("optimize", value != GraphOptimizationLevel.ORT_DISABLE_ALL)
            self.__dict__["_level"] = value
            return
        if name in ("intra_op_num_threads", "inter_op_num_threads") and (not isinstance(value, int) or value < 0):
            raise InvalidArgument(f"{name} must be a non-negative int, not {value!r}")
        if hasattr(_xonnx.SessionOptions, name):
            super().__setattr__(name, value)
        else:
            self.__dict__[name] = value

    @property
    def graph_optimization_level(self):
        level = self.__dict__.get("_level", GraphOptimizationLevel.ORT_ENABLE_ALL)
        if (level == GraphOptimizationLevel.ORT_DISABLE_ALL) == self.optimize:  # optimize set since
            level = GraphOptimizationLevel.ORT_ENABLE_ALL if self.optimize else GraphOptimizationLevel.ORT_DISABLE_ALL
        return level

    def add_session_config_entry(self, key, value):
        """Sets a config entry (ONNX Runtime's session.* keys, or
        xonnx.<option> for one of xonnx's options). Keys without a meaning
        here are kept, with a warning."""
        _set_entry(self, self._config, _SESSION_ENTRIES, "session", key, value)

    def get_session_config_entry(self, key):
        return _get_entry(self._config, "session", key)

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        """Fixes the model's dynamic dimension `dim_name` to `dim_value`, as
        ONNX Runtime does: the inputs report that size, and a call with
        another fails."""
        if not isinstance(dim_value, int) or dim_value <= 0:
            raise InvalidArgument(f"free dimension '{dim_name}' must get a positive int, not {dim_value!r}")
        self._free_dims[str(dim_name)] = dim_value

    def add_free_dimension_override_by_denotation(self, denotation, dim_value):
        raise NotImplementedError("xonnx does not read dimension denotations; use "
                                  "add_free_dimension_override_by_name with the dimension's name")

    def register_custom_ops_library(self, path):
        raise NotImplementedError(f"custom op libraries ({path}) are ONNX Runtime kernels; xonnx cannot load them")

    def add_initializer(self, name, value):
        raise NotImplementedError(f"overriding initializer '{name}' is not supported by xonnx")

    @staticmethod
    def _copy_of(options):
        """A copy for one session of `options` (this package's or the
        binding's own class): the caller's object stays as it is."""
        copy = SessionOptions()
        _xonnx.SessionOptions._assign(copy, options)
        extra = options.__dict__ if isinstance(options, SessionOptions) else {}
        copy.__dict__.update({k: (dict(v) if isinstance(v, dict) else v) for k, v in extra.items()})
        return copy


class RunOptions:
    """Bounds on one call: ``deadline_ms`` (-1: the session's; 0: none) and
    ``terminate`` (set it to True, from any thread, to cancel the calls made
    with these options, as ONNX Runtime's RunOptions.terminate does).
    ONNX Runtime's log_severity_level, log_verbosity_level, logid and
    only_execute_path_to_fetches are kept; add_run_config_entry takes
    "xonnx.deadline_ms" and keeps other keys with a warning."""

    def __init__(self):
        self.deadline_ms = -1
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.only_execute_path_to_fetches = False
        self._cancel = _xonnx.CancelToken()
        self._config = {}

    @property
    def terminate(self):
        return self._cancel.cancelled

    @terminate.setter
    def terminate(self, value):
        if value:
            self._cancel.cancel()
        elif self._cancel.cancelled:
            self._cancel = _xonnx.CancelToken()

    def add_run_config_entry(self, key, value):
        _set_entry(self, self._config, _RUN_ENTRIES, "run", key, value)

    def get_run_config_entry(self, key):
        return _get_entry(self._config, "run", key)
