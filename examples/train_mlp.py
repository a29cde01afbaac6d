#!/usr/bin/env python3
"""Trains a small classifier with xonnx, from ONNX alone.

The training step is one ONNX graph: the forward pass of a two-layer
perceptron, its softmax cross-entropy loss, ONNX's Gradient operator
(ai.onnx.preview.training) for the gradients of the loss with respect to
the weights, and a gradient-descent update. xonnx compiles it once; each
step feeds the weights it returned back in. The trained weights are then
written into an inference model (the forward pass with the weights as
initializers), which is checked on the data.

The data are two interleaved spirals made here (no downloads).

usage: train_mlp.py [--steps N] [--out trained.onnx]
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import xonnx

HIDDEN = 32


def spirals(n, seed=0):
    """n points of each of two spirals, labelled 0 and 1, with a little noise."""
    rng = np.random.default_rng(seed)
    t = np.sqrt(rng.uniform(0.05, 1, n)) * 3 * np.pi
    a = np.stack([t * np.cos(t), t * np.sin(t)], 1) / (3 * np.pi)
    x = np.concatenate([a, -a]) + rng.normal(0, 0.02, (2 * n, 2))
    y = np.concatenate([np.zeros(n), np.ones(n)]).astype(np.int64)
    return x.astype(np.float32), y


def forward_nodes():
    """x, W1, b1, W2, b2 -> logits (tanh hidden layer)."""
    return [
        helper.make_node("MatMul", ["x", "W1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Tanh", ["h1"], ["h"]),
        helper.make_node("MatMul", ["h", "W2"], ["z0"]),
        helper.make_node("Add", ["z0", "b2"], ["logits"]),
    ]


WEIGHTS = {"W1": (2, HIDDEN), "b1": (HIDDEN,), "W2": (HIDDEN, 2), "b2": (2,)}
OPSETS = [helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.preview.training", 1)]


def training_step_model(batch, lr):
    """(x, labels, weights) -> (loss, updated weights)."""
    f = TensorProto.FLOAT
    nodes = forward_nodes() + [
        helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"], reduction="mean"),
        helper.make_node("Gradient", list(WEIGHTS), [f"d{w}" for w in WEIGHTS], domain="ai.onnx.preview.training",
                         xs=list(WEIGHTS), y="loss"),
    ]
    for w in WEIGHTS:
        nodes += [helper.make_node("Mul", [f"d{w}", "lr"], [f"s{w}"]), helper.make_node("Sub", [w, f"s{w}"], [f"{w}_new"])]
    inputs = [helper.make_tensor_value_info("x", f, [batch, 2]),
              helper.make_tensor_value_info("labels", TensorProto.INT64, [batch])]
    inputs += [helper.make_tensor_value_info(w, f, list(s)) for w, s in WEIGHTS.items()]
    outputs = [helper.make_tensor_value_info("loss", f, [])]
    outputs += [helper.make_tensor_value_info(f"{w}_new", f, list(s)) for w, s in WEIGHTS.items()]
    graph = helper.make_graph(nodes, "train_step", inputs, outputs,
                              [numpy_helper.from_array(np.array(lr, np.float32), "lr")])
    return helper.make_model(graph, opset_imports=OPSETS)


def inference_model(weights):
    """x -> logits, the weights as initializers."""
    f = TensorProto.FLOAT
    graph = helper.make_graph(forward_nodes(), "mlp", [helper.make_tensor_value_info("x", f, ["n", 2])],
                              [helper.make_tensor_value_info("logits", f, ["n", 2])],
                              [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=OPSETS[:1])


def initial_weights(seed=1):
    """Normal weights, zero biases."""
    rng = np.random.default_rng(seed)
    return {k: (rng.standard_normal(s) * (1.0 if k.startswith("W") else 0.0)).astype(np.float32)
            for k, s in WEIGHTS.items()}


def train(steps, out_path, lr=0.5, log=print):
    """Trains for `steps` full-batch steps; writes the inference model to
    out_path and returns the losses of every step, the accuracy of the
    trained model on the data and the milliseconds per step."""
    x, labels = spirals(256)
    weights = initial_weights()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "train_step.onnx")
        onnx.save(training_step_model(len(x), lr), path)
        options = xonnx.SessionOptions()
        options.use_cache = False
        step = xonnx.InferenceSession(path, options)
        names = ["loss"] + [f"{w}_new" for w in WEIGHTS]
        losses = []
        start = time.perf_counter()
        for k in range(steps):
            out = step.run(names, {"x": x, "labels": labels, **weights})
            losses.append(float(out[0]))
            weights = dict(zip(WEIGHTS, out[1:]))
            if log and (k % max(1, steps // 10) == 0 or k == steps - 1):
                log(f"step {k:5d}  loss {losses[-1]:.4f}")
        ms = (time.perf_counter() - start) * 1000 / max(1, steps)
    onnx.save(inference_model(weights), out_path)
    (logits,) = xonnx.InferenceSession(out_path, options).run(None, {"x": x})
    accuracy = float((logits.argmax(1) == labels).mean())
    return losses, accuracy, ms


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--out", default="mlp_trained.onnx")
    a = p.parse_args(argv)
    losses, accuracy, ms = train(a.steps, a.out)
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}; accuracy {accuracy:.3f} on the training data; "
          f"{ms:.2f} ms per step; wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
