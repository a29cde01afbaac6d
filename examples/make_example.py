#!/usr/bin/python3
"""Writes examples/tiny_cnn.onnx: a small image classifier with fixed random
weights (Conv-BN-Relu blocks, pooling, Gemm, Softmax), dynamic batch.
Regenerate with: /usr/bin/python3 examples/make_example.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)


def weight(name, *shape, scale=0.2):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


inits = [
    weight("c1_w", 8, 3, 3, 3), weight("c1_b", 8),
    weight("bn_scale", 8, scale=0.1), weight("bn_bias", 8), weight("bn_mean", 8),
    numpy_helper.from_array((rng.random(8) + 0.5).astype(np.float32), "bn_var"),
    weight("c2_w", 16, 8, 3, 3), weight("c2_b", 16),
    weight("fc_w", 10, 16), weight("fc_b", 10),
]
nodes = [
    helper.make_node("Conv", ["image", "c1_w", "c1_b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["bn1"], name="bn1"),
    helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
    helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p1", "c2_w", "c2_b"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
    helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
    helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
    helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
    helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
]
graph = helper.make_graph(
    nodes, "tiny_cnn",
    [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])],
    inits)
model = helper.make_model(graph, producer_name="xonnx-examples", opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny_cnn.onnx"))
