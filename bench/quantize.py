#!/usr/bin/python3
"""Dynamically quantized variants of float ONNX models, in the form ONNX
Runtime's dynamic quantizer writes (QOperator): each Conv, MatMul and Gemm
whose weights are an initializer gets uint8 weights (symmetric about the
zero point 128, per tensor: ONNX Runtime's ConvInteger takes uint8 weights
only) and an activation quantized at run time by DynamicQuantizeLinear to uint8,
multiplied by ConvInteger or MatMulInteger into int32, converted back to
float and scaled by the product of the two scales (then the bias added).

    bench/quantize.py IN.onnx OUT.onnx

Other nodes are kept as they are. Prints how many nodes it quantized.
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto


class Rewriter:
    def __init__(self, model):
        self.model = model
        self.graph = model.graph
        self.inits = {i.name: i for i in self.graph.initializer}
        # The exporter shares equal initializers through Identity nodes.
        for n in self.graph.node:
            if n.op_type == "Identity" and n.input[0] in self.inits:
                self.inits[n.output[0]] = self.inits[n.input[0]]
        self.count = 0

    def fresh(self, base):
        self.count += 1
        return f"{base}_q{self.count}"

    def add_init(self, name, array):
        t = numpy_helper.from_array(array, name)
        self.graph.initializer.append(t)
        self.inits[name] = t
        return name

    def weights(self, name):
        return numpy_helper.to_array(self.inits[name]).astype(np.float32)

    def quantize_weights(self, w):
        """uint8 weights about zero point 128, per tensor, and their scale."""
        scale = max(float(np.abs(w).max()) / 127.0, 1e-12)
        q = (np.clip(np.round(w / scale), -127, 127) + 128).astype(np.uint8)
        return q, np.float32(scale)

    def dynamic_input(self, x, nodes):
        """x quantized at run time: (uint8 value, scale, zero point)."""
        q, s, z = self.fresh(x + "_u8"), self.fresh(x + "_scale"), self.fresh(x + "_zp")
        nodes.append(helper.make_node("DynamicQuantizeLinear", [x], [q, s, z], name=self.fresh("dql")))
        return q, s, z

    def rescale(self, y_int, x_scale, w_scale, out, nodes, bias=None, bias_shape=None):
        """float(y_int) * x_scale * w_scale (+ bias) into `out`."""
        f = self.fresh(out + "_f")
        nodes.append(helper.make_node("Cast", [y_int], [f], to=TensorProto.FLOAT, name=self.fresh("cast")))
        ws = self.add_init(self.fresh("w_scale"), np.array(w_scale, dtype=np.float32))
        sc = self.fresh("scale")
        nodes.append(helper.make_node("Mul", [x_scale, ws], [sc], name=self.fresh("mul")))
        scaled = out if bias is None else self.fresh(out + "_nobias")
        nodes.append(helper.make_node("Mul", [f, sc], [scaled], name=self.fresh("mul")))
        if bias is not None:
            b = bias
            if bias_shape is not None:
                b = self.add_init(self.fresh("bias"), self.weights(bias).reshape(bias_shape))
            nodes.append(helper.make_node("Add", [scaled, b], [out], name=self.fresh("add")))

    def conv(self, node):
        if len(node.input) < 2 or node.input[1] not in self.inits:
            return None
        w = self.weights(node.input[1])
        q, scale = self.quantize_weights(w)
        nodes = []
        xq, xs, xz = self.dynamic_input(node.input[0], nodes)
        wq = self.add_init(self.fresh(node.input[1] + "_u8"), q)
        wz = self.add_init(self.fresh("w_zp"), np.array(128, dtype=np.uint8))
        y = self.fresh(node.output[0] + "_i32")
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        nodes.append(helper.make_node("ConvInteger", [xq, wq, xz, wz], [y], name=self.fresh("convint"), **attrs))
        bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
        shape = [1, w.shape[0]] + [1] * (w.ndim - 2)
        self.rescale(y, xs, scale, node.output[0], nodes, bias, shape if bias else None)
        return nodes

    def matmul(self, node, w, bias=None):
        q, scale = self.quantize_weights(w)
        nodes = []
        xq, xs, xz = self.dynamic_input(node.input[0], nodes)
        wq = self.add_init(self.fresh("w_u8"), q)
        wz = self.add_init(self.fresh("w_zp"), np.array(128, dtype=np.uint8))
        y = self.fresh(node.output[0] + "_i32")
        nodes.append(helper.make_node("MatMulInteger", [xq, wq, xz, wz], [y], name=self.fresh("matmulint")))
        self.rescale(y, xs, scale, node.output[0], nodes, bias)
        return nodes

    def node(self, node):
        if node.op_type == "Conv":
            return self.conv(node)
        if node.op_type == "MatMul" and node.input[1] in self.inits and len(self.inits[node.input[1]].dims) == 2:
            return self.matmul(node, self.weights(node.input[1]))
        if node.op_type == "Gemm" and node.input[1] in self.inits:
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
                return None
            w = self.weights(node.input[1])
            if attrs.get("transB", 0):
                w = w.T.copy()
            bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
            return self.matmul(node, w, bias)
        return None

    def run(self):
        out, quantized = [], 0
        for n in self.graph.node:
            repl = self.node(n)
            if repl is None:
                out.append(n)
            else:
                out.extend(repl)
                quantized += 1
        del self.graph.node[:]
        self.graph.node.extend(out)
        used = {i for n in self.graph.node for i in n.input}
        keep = [i for i in self.graph.initializer if i.name in used]
        del self.graph.initializer[:]
        self.graph.initializer.extend(keep)
        return quantized


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input")
    p.add_argument("output")
    a = p.parse_args()
    model = onnx.load(a.input)
    n = Rewriter(model).run()
    onnx.checker.check_model(model)
    onnx.save(model, a.output)
    print(f"quantized {n} nodes of {a.input} into {a.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
