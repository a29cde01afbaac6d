#!/usr/bin/python3
"""Quantized variants of float ONNX models, in the two forms ONNX Runtime's
quantizers write.

Dynamic (the default; QOperator, as its dynamic quantizer writes): each
Conv, MatMul and Gemm whose weights are an initializer gets uint8 weights
(symmetric about the zero point 128, per tensor: ONNX Runtime's ConvInteger
takes uint8 weights only; with --asymmetric-weights over the weights' own
range and zero point, as its quantizer does for uint8 weights) and an
activation quantized at run time by
DynamicQuantizeLinear to uint8, multiplied by ConvInteger or MatMulInteger
into int32, converted back to float and scaled by the product of the two
scales (then the bias added).

Static (--static; QDQ, as its static quantizer writes): the same nodes read
their activation through a QuantizeLinear -> DequantizeLinear pair (uint8,
per tensor, range calibrated on random inputs) and their weights through a
DequantizeLinear of int8 weights with one scale per output channel; their
result goes through another pair. The calibration runs the float model with
xonnx (`--xonnx`, default build/bin/xonnx) on inputs of the shapes in
`--inputs` (an inputs.txt of bench/corpus.py: NAME=DIMS without the batch).

    bench/quantize.py IN.onnx OUT.onnx
    bench/quantize.py --static --inputs DIR/inputs.txt IN.onnx OUT.onnx

Other nodes are kept as they are. Prints how many nodes it quantized.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto


class Rewriter:
    def __init__(self, model, asymmetric=False):
        self.asymmetric = asymmetric
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
        """uint8 weights and their scale and zero point, per tensor: about 128
        (symmetric), or over the weights' own range (asymmetric)."""
        if self.asymmetric:
            lo, hi = min(float(w.min()), 0.0), max(float(w.max()), 0.0)
            scale = max((hi - lo) / 255.0, 1e-12)
            zp = int(np.clip(np.round(-lo / scale), 0, 255))
            return np.clip(np.round(w / scale) + zp, 0, 255).astype(np.uint8), np.float32(scale), zp
        scale = max(float(np.abs(w).max()) / 127.0, 1e-12)
        q = (np.clip(np.round(w / scale), -127, 127) + 128).astype(np.uint8)
        return q, np.float32(scale), 128

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
        q, scale, zp = self.quantize_weights(w)
        nodes = []
        xq, xs, xz = self.dynamic_input(node.input[0], nodes)
        wq = self.add_init(self.fresh(node.input[1] + "_u8"), q)
        wz = self.add_init(self.fresh("w_zp"), np.array(zp, dtype=np.uint8))
        y = self.fresh(node.output[0] + "_i32")
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        nodes.append(helper.make_node("ConvInteger", [xq, wq, xz, wz], [y], name=self.fresh("convint"), **attrs))
        bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
        shape = [1, w.shape[0]] + [1] * (w.ndim - 2)
        self.rescale(y, xs, scale, node.output[0], nodes, bias, shape if bias else None)
        return nodes

    def matmul(self, node, w, bias=None):
        q, scale, zp = self.quantize_weights(w)
        nodes = []
        xq, xs, xz = self.dynamic_input(node.input[0], nodes)
        wq = self.add_init(self.fresh("w_u8"), q)
        wz = self.add_init(self.fresh("w_zp"), np.array(zp, dtype=np.uint8))
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


class StaticRewriter(Rewriter):
    """QDQ pairs around each quantizable node, with calibrated ranges."""

    def __init__(self, model, ranges):
        super().__init__(model)
        self.ranges = ranges

    def qdq(self, x, nodes):
        """x through QuantizeLinear -> DequantizeLinear (uint8, per tensor)."""
        lo, hi = self.ranges[x]
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        scale = max((hi - lo) / 255.0, 1e-8)
        zp = int(np.clip(np.round(-lo / scale), 0, 255))
        s = self.add_init(self.fresh(x + "_scale"), np.array(scale, dtype=np.float32))
        z = self.add_init(self.fresh(x + "_zp"), np.array(zp, dtype=np.uint8))
        q, dq = self.fresh(x + "_q"), self.fresh(x + "_dq")
        nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [q], name=self.fresh("q")))
        nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [dq], name=self.fresh("dq")))
        return dq

    def weights_dq(self, name, axis, nodes):
        """int8 weights, symmetric, one scale per slice along `axis`."""
        w = self.weights(name)
        other = tuple(d for d in range(w.ndim) if d != axis)
        scale = np.maximum(np.abs(w).max(axis=other) / 127.0, 1e-12).astype(np.float32)
        shape = [1] * w.ndim
        shape[axis] = -1
        q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
        wq = self.add_init(self.fresh(name + "_s8"), q)
        s = self.add_init(self.fresh(name + "_scale"), scale)
        z = self.add_init(self.fresh(name + "_zp"), np.zeros(scale.shape, dtype=np.int8))
        out = self.fresh(name + "_dq")
        nodes.append(helper.make_node("DequantizeLinear", [wq, s, z], [out], axis=axis, name=self.fresh("dqw")))
        return out

    def node(self, node):
        axis = None
        if node.op_type == "Conv" and len(node.input) > 1 and node.input[1] in self.inits:
            axis = 0
        elif node.op_type == "MatMul" and node.input[1] in self.inits and len(self.inits[node.input[1]].dims) == 2:
            axis = 1
        elif node.op_type == "Gemm" and node.input[1] in self.inits:
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            axis = 0 if attrs.get("transB", 0) else 1
        if axis is None or node.input[0] not in self.ranges or node.output[0] not in self.ranges:
            return None
        nodes = []
        x = self.qdq(node.input[0], nodes)
        w = self.weights_dq(node.input[1], axis, nodes)
        y = self.fresh(node.output[0] + "_f")
        copy = helper.make_node(node.op_type, [x, w] + list(node.input[2:]), [y], name=node.name)
        copy.attribute.extend(node.attribute)
        nodes.append(copy)
        q = self.qdq_named(y, node.output[0], nodes)
        return nodes

    def qdq_named(self, y, out, nodes):
        """y through a QDQ pair into `out`, with out's calibrated range."""
        self.ranges[y] = self.ranges[out]
        dq = self.qdq(y, nodes)
        nodes.append(helper.make_node("Identity", [dq], [out], name=self.fresh("id")))
        return out


def calibrate(model_path, inputs_txt, xonnx):
    """min and max of every input and output of the quantizable nodes, over
    one run of the float model on random inputs (batch 1)."""
    model = onnx.shape_inference.infer_shapes(onnx.load(model_path))
    infos = {v.name: v for v in model.graph.value_info}
    names = []
    for n in model.graph.node:
        if n.op_type in ("Conv", "MatMul", "Gemm"):
            names += [n.input[0], n.output[0]]
    outputs = {o.name for o in model.graph.output}
    for x in dict.fromkeys(names):
        if x not in outputs and x in infos and infos[x].type.tensor_type.HasField("shape"):
            model.graph.output.append(infos[x])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "calibrate.onnx")
        onnx.save(model, path)
        cmd = [xonnx, "run", path, "--seed", "1", "--no-cache", "--output-dir", os.path.join(tmp, "out")]
        with open(inputs_txt) as f:
            for line in f:
                name, dims = line.strip().split("=")
                cmd += ["--shape", f"{name}=1x{dims}"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ranges = {}
        all_names = [o.name for o in model.graph.output]
        for i, x in enumerate(all_names):
            t = numpy_helper.to_array(onnx.load_tensor(os.path.join(tmp, "out", f"output_{i}.pb")))
            ranges[x] = (float(t.min()), float(t.max()))
    return ranges


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--static", action="store_true", help="QDQ pairs with calibrated ranges (else dynamic)")
    p.add_argument("--asymmetric-weights", action="store_true",
                   help="dynamic: uint8 weights over their own range, with their own zero point (else about 128)")
    p.add_argument("--inputs", help="with --static: the inputs.txt that gives the calibration input shapes")
    p.add_argument("--xonnx", default=os.environ.get("XONNX", "build/bin/xonnx"), help="xonnx, to calibrate")
    a = p.parse_args()
    model = onnx.load(a.input)
    if a.static:
        if not a.inputs:
            p.error("--static needs --inputs")
        n = StaticRewriter(model, calibrate(a.input, a.inputs, a.xonnx)).run()
    else:
        n = Rewriter(model, a.asymmetric_weights).run()
    onnx.checker.check_model(model)
    onnx.save(model, a.output)
    print(f"quantized {n} nodes of {a.input} into {a.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
