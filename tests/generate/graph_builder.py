"""What opset23_llama.py and genai_llama.py share: an onnx.helper graph
built from a torch TinyLlama's weights (initializers, nodes, its Linear
layers as MatMuls, tiny_llama's rotary cos/sin caches) and saved as a
decoder with Hugging Face's input and output names."""
import numpy as np
import torch
from onnx import TensorProto, helper, numpy_helper


class Graph:
    def __init__(self, m):
        self.m, self.nodes, self.inits = m, [], []

    def weight(self, name, t):
        """A float initializer from a tensor; its name."""
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(t.detach().numpy().astype(np.float32)), name))
        return name

    def const(self, name, value, dtype=np.int64):
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def node(self, op, ins, outs=None, domain="", **attrs):
        """Adds a node; its outputs (generated names unless given)."""
        outs = outs or [f"{op.lower()}_{len(self.nodes)}"]
        self.nodes.append(helper.make_node(op, ins, outs, name=f"{op}_{len(self.nodes)}", domain=domain, **attrs))
        return outs

    def op(self, op, ins, **attrs):
        """Adds a node of one output; that output."""
        return self.node(op, ins, **attrs)[0]

    def linear(self, x, lin, name):
        return self.op("MatMul", [x, self.weight(name, lin.weight.T)])

    def rotary_caches(self, max_positions):
        """cos_cache and sin_cache [max_positions, head_dim / 2], as
        tiny_llama computes them: float32 positions times its inverse
        frequencies."""
        with torch.no_grad():
            freqs = torch.arange(max_positions).float()[:, None] * self.m.inv_freq
        self.weight("cos_cache", freqs.cos())
        self.weight("sin_cache", freqs.sin())

    def save(self, path, name, opsets, ir_version, positions):
        """Saved with inputs input_ids, attention_mask, [position_ids,]
        past_key_values.N.key/value and outputs logits, present.N.key/value
        (which the nodes must write)."""
        c = self.m.c
        F, I = TensorProto.FLOAT, TensorProto.INT64
        cache = lambda n, length: helper.make_tensor_value_info(n, F, ["batch", c.heads, length, c.head_dim])
        ins = [helper.make_tensor_value_info("input_ids", I, ["batch", "sequence"]),
               helper.make_tensor_value_info("attention_mask", I, ["batch", "total"])]
        if positions:
            ins.append(helper.make_tensor_value_info("position_ids", I, ["batch", "sequence"]))
        kinds = [(i, kind) for i in range(c.layers) for kind in ("key", "value")]
        ins += [cache(f"past_key_values.{i}.{kind}", "past") for i, kind in kinds]
        outs = [helper.make_tensor_value_info("logits", F, ["batch", "sequence", c.vocab])]
        outs += [cache(f"present.{i}.{kind}", "total") for i, kind in kinds]
        g = helper.make_graph(self.nodes, name, ins, outs, self.inits)
        model = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
        model.ir_version = ir_version
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
