"""Building blocks of the hostile-input tests: one-graph models, sessions
without the compile cache, value infos and initializers."""
import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

import xonnx

I64_MIN, I64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = h.make_graph(nodes, "hostile", inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def session(m, **options):
    o = xonnx.SessionOptions()
    o.use_cache = False
    for k, v in options.items():
        setattr(o, k, v)
    return xonnx.InferenceSession(m.SerializeToString(), o)


def f32(name, shape):
    return h.make_tensor_value_info(name, T.FLOAT, shape)


def i64(name, shape):
    return h.make_tensor_value_info(name, T.INT64, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)
