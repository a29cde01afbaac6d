"""ONNX Runtime's OrtValue, OrtDevice and IOBinding over host memory.

xonnx's sessions take and return host arrays (on its CPU plugin the program
reads its inputs in place); an OrtValue here holds a numpy array, and its
device is the CPU. Values on another device (device_type "cuda") are not
supported and say so.
"""

import ctypes

import numpy as np

from ._xonnx import InvalidArgument

# numpy's types as ONNX's TensorProto element types and ONNX Runtime's names.
_ONNX_TYPES = {
    np.dtype(np.float32): (1, "tensor(float)"), np.dtype(np.uint8): (2, "tensor(uint8)"),
    np.dtype(np.int8): (3, "tensor(int8)"), np.dtype(np.uint16): (4, "tensor(uint16)"),
    np.dtype(np.int16): (5, "tensor(int16)"), np.dtype(np.int32): (6, "tensor(int32)"),
    np.dtype(np.int64): (7, "tensor(int64)"), np.dtype(np.bool_): (9, "tensor(bool)"),
    np.dtype(np.float16): (10, "tensor(float16)"), np.dtype(np.float64): (11, "tensor(double)"),
    np.dtype(np.uint32): (12, "tensor(uint32)"), np.dtype(np.uint64): (13, "tensor(uint64)"),
}
_BY_ONNX_TYPE = {code: dtype for dtype, (code, _) in _ONNX_TYPES.items()}


def _check_device(device_type, device_id=0):
    kind = str(device_type).lower()
    if kind != "cpu":
        raise NotImplementedError(
            f"xonnx's OrtValues live in host memory: device '{device_type}' values are not supported "
            "(a session copies its inputs to its own device on each run)")
    if device_id != 0:
        raise InvalidArgument(f"the CPU has device id 0, not {device_id}")


def _dtype(element_type):
    """A numpy dtype from a numpy type, dtype or ONNX element type code."""
    if isinstance(element_type, int) and not isinstance(element_type, bool):
        if element_type not in _BY_ONNX_TYPE:
            raise InvalidArgument(f"ONNX element type {element_type} is not supported here")
        return _BY_ONNX_TYPE[element_type]
    dtype = np.dtype(element_type)
    if dtype not in _ONNX_TYPES:
        raise InvalidArgument(f"element type {dtype} has no ONNX tensor type")
    return dtype


class OrtDevice:
    """A device as ONNX Runtime names one; xonnx's values are on the CPU."""

    _CPU = 0

    def __init__(self, device_type=0, memory_type=0, device_id=0):
        if device_type != OrtDevice._CPU:
            raise NotImplementedError("xonnx's OrtValues live in host memory: only OrtDevice.cpu() is supported")
        self._id = device_id

    @staticmethod
    def cpu():
        return OrtDevice._CPU

    @staticmethod
    def default_memory():
        return 0

    def device_id(self):
        return self._id

    def device_type(self):
        return OrtDevice._CPU


class OrtValue:
    """A tensor in host memory, as ONNX Runtime's OrtValue: made by
    ortvalue_from_numpy (which shares the array's memory, as ONNX Runtime
    does for CPU values) or ortvalue_from_shape_and_type; read with numpy()."""

    def __init__(self, array):
        if not isinstance(array, np.ndarray):
            raise InvalidArgument(f"an OrtValue holds a numpy array, not {type(array).__name__}")
        _dtype(array.dtype)
        self._array = array

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0):
        _check_device(device_type, device_id)
        array = numpy_obj if isinstance(numpy_obj, np.ndarray) else np.asarray(numpy_obj)
        # Shared, as ONNX Runtime shares a contiguous CPU array.
        return OrtValue(np.ascontiguousarray(array))

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0):
        _check_device(device_type, device_id)
        dims = [int(d) for d in shape]
        if any(d < 0 for d in dims):
            raise InvalidArgument(f"shape {list(shape)} has a negative dimension")
        return OrtValue(np.zeros(dims, _dtype(element_type)))

    def numpy(self):
        """The value as an array (the OrtValue's own memory, as ONNX
        Runtime returns for CPU values)."""
        return self._array

    def update_inplace(self, np_arr):
        """Copies `np_arr` (same shape and type) into the value's memory."""
        src = np.asarray(np_arr)
        if src.shape != self._array.shape or src.dtype != self._array.dtype:
            raise InvalidArgument(f"update_inplace needs {self._array.dtype}{list(self._array.shape)}, "
                                  f"got {src.dtype}{list(src.shape)}")
        np.copyto(self._array, src)

    def shape(self):
        return list(self._array.shape)

    def data_type(self):
        return _ONNX_TYPES[self._array.dtype][1]

    def element_type(self):
        return _ONNX_TYPES[self._array.dtype][0]

    def device_name(self):
        return "cpu"

    def data_ptr(self):
        return self._array.ctypes.data

    def has_value(self):
        return True

    def is_tensor(self):
        return True

    def is_sparse_tensor(self):
        return False

    def is_tensor_sequence(self):
        return False

    def __repr__(self):
        return f"OrtValue({self.data_type()}, shape={self.shape()}, device=cpu)"


def _array_at(pointer, element_type, shape):
    """The host memory at `pointer` as an array of `shape` (not copied)."""
    dtype = _dtype(element_type)
    count = int(np.prod(shape, dtype=np.int64))
    buffer = (ctypes.c_byte * (count * dtype.itemsize)).from_address(int(pointer))
    return np.frombuffer(buffer, dtype=dtype, count=count).reshape([int(d) for d in shape])


class IOBinding:
    """ONNX Runtime's IOBinding: inputs bound once and reused across runs,
    outputs into preallocated values or into new ones. Made by
    InferenceSession.io_binding(); run with session.run_with_iobinding."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}
        self._outputs = []  # (name, OrtValue or None)
        self._results = []

    def bind_cpu_input(self, name, arr_on_cpu):
        self._inputs[self._input_name(name)] = np.asarray(arr_on_cpu)

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        _check_device(device_type, device_id)
        self._inputs[self._input_name(name)] = _array_at(buffer_ptr, element_type, shape)

    def bind_ortvalue_input(self, name, ortvalue):
        self._inputs[self._input_name(name)] = ortvalue.numpy()

    def synchronize_inputs(self):
        pass  # host memory: nothing in flight

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        _check_device(device_type, device_id)
        value = None
        if buffer_ptr is not None:
            if element_type is None or shape is None:
                raise InvalidArgument(f"output '{name}' bound to a buffer needs its element_type and shape")
            value = OrtValue(_array_at(buffer_ptr, element_type, shape))
        self._bind_output(name, value)

    def bind_ortvalue_output(self, name, ortvalue):
        self._bind_output(name, ortvalue)

    def synchronize_outputs(self):
        pass

    def get_outputs(self):
        """The outputs of the last run_with_iobinding, as OrtValues (the
        bound ones themselves where an output was bound to a value)."""
        return list(self._results)

    def get_outputs_as_ortvaluevector(self):
        return self.get_outputs()

    def copy_outputs_to_cpu(self):
        return [v.numpy().copy() for v in self._results]

    def clear_binding_inputs(self):
        self._inputs = {}

    def clear_binding_outputs(self):
        self._outputs = []
        self._results = []

    def _input_name(self, name):
        names = [i.name for i in self._session.get_inputs()]
        if name not in names:
            raise InvalidArgument(f"the model has no input named '{name}'; its inputs: {', '.join(names)}")
        return name

    def _bind_output(self, name, value):
        names = [o.name for o in self._session.get_outputs()]
        if name not in names:
            raise InvalidArgument(f"the model has no output named '{name}'; its outputs: {', '.join(names)}")
        self._outputs = [(n, v) for n, v in self._outputs if n != name] + [(name, value)]

    def _run(self, run_options):
        names = [n for n, _ in self._outputs] or None
        arrays = self._session.run(names, dict(self._inputs), run_options)
        results = []
        bound = [v for _, v in self._outputs] or [None] * len(arrays)
        for (array, value), name in zip(zip(arrays, bound), names or [o.name for o in self._session.get_outputs()]):
            if value is None:
                results.append(OrtValue(array))
                continue
            target = value.numpy()
            if target.shape != array.shape or target.dtype != array.dtype:
                raise InvalidArgument(f"output '{name}' is {array.dtype}{list(array.shape)}, but the value bound "
                                      f"to it is {target.dtype}{list(target.shape)}")
            np.copyto(target, array)
            results.append(value)
        self._results = results
