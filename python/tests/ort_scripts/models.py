"""Small models the scripts build with onnx.helper, as ONNX Runtime's own
Python tests build theirs."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def mul_add(path, batch="N"):
    """y = x @ W + b, z = relu(y): x float[batch, 4] -> y, z float[batch, 3]."""
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, "W")
    b = numpy_helper.from_array(np.array([0.5, -1.0, 0.25], np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"]),
             helper.make_node("Relu", ["y"], ["z"])]
    graph = helper.make_graph(nodes, "mul_add", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [batch, 3])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return save(model, path)


def mul_add_reference(x):
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    y = x @ w + np.array([0.5, -1.0, 0.25], np.float32)
    return y, np.maximum(y, 0)


def two_inputs(path):
    """s = a + b (float[2, 3]), c = cast(a < b) as int64."""
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Less", ["a", "b"], ["lt"]),
             helper.make_node("Cast", ["lt"], ["c"], to=TensorProto.INT64)]
    graph = helper.make_graph(nodes, "two_inputs",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("s", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("c", TensorProto.INT64, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return save(model, path)
