"""tiny_llama's decoder written with ONNX's own opset-23 ops, as newer
exporters write it: RMSNormalization, RotaryEmbedding (position ids into
cos/sin caches) and Attention with its key/value cache inputs (past_key,
past_value -> present_key, present_value), grouped over the 3-D form, with
an additive mask built in the graph from attention_mask and the query
positions. Built with onnx.helper from a torch TinyLlama's weights, so that
tiny_llama.greedy on the same module is its reference.

    export(module, path, max_positions=2048)
"""
import numpy as np
import torch
from onnx import TensorProto, helper, numpy_helper


def export(m, path, max_positions=2048):
    c = m.c
    nodes, inits = [], []

    def weight(name, t):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(t.detach().numpy().astype(np.float32)), name))
        return name

    def node(op, ins, outs=None, **attrs):
        outs = outs or [f"{op.lower()}_{len(nodes)}"]
        nodes.append(helper.make_node(op, ins, outs, name=f"{op}_{len(nodes)}", **attrs))
        return outs[0] if len(outs) == 1 else outs

    def const(name, value, dtype=np.int64):
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def linear(x, lin, name):
        return node("MatMul", [x, weight(name, lin.weight.T)])

    # cos/sin caches as tiny_llama computes them: float32 positions times
    # the inverse frequencies.
    with torch.no_grad():
        freqs = torch.arange(max_positions).float()[:, None] * m.inv_freq
    weight("cos_cache", freqs.cos())
    weight("sin_cache", freqs.sin())
    const("zero", 0)
    const("one", 1)
    const("axis1", [1])
    const("axes12", [1, 2])
    const("lowest", np.finfo(np.float32).min, np.float32)
    const("fzero", 0.0, np.float32)
    # Query i sits at past + i; it sees key j when j <= past + i and the mask keeps j.
    total = node("Gather", [node("Shape", ["attention_mask"]), "one"], axis=0)
    steps = node("Gather", [node("Shape", ["input_ids"]), "one"], axis=0)
    past = node("Sub", [total, steps])
    k_at = node("Range", ["zero", total, "one"])
    q_at = node("Unsqueeze", [node("Add", [node("Range", ["zero", steps, "one"]), past]), "axis1"])
    causal = node("LessOrEqual", [k_at, q_at])  # [s, total]
    kept = node("Cast", [node("Unsqueeze", ["attention_mask", "axes12"])], to=TensorProto.BOOL)  # [b, 1, 1, total]
    allowed = node("And", [causal, kept])
    bias = node("Where", [allowed, "fzero", "lowest"])  # [b, 1, s, total]

    x = node("Gather", [weight("embed", m.embed.weight), "input_ids"], axis=0)
    outputs = []
    for i, layer in enumerate(m.layers):
        h = node("RMSNormalization", [x, weight(f"norm1_{i}", layer.norm1.weight)], axis=-1, epsilon=1e-6)
        q, k, v = (linear(h, lin, f"{n}_{i}") for n, lin in (("q", layer.q), ("k", layer.k), ("v", layer.v)))
        q = node("RotaryEmbedding", [q, "cos_cache", "sin_cache", "position_ids"], num_heads=c.heads)
        k = node("RotaryEmbedding", [k, "cos_cache", "sin_cache", "position_ids"], num_heads=c.heads)
        present = [f"present.{i}.key", f"present.{i}.value"]
        y = node("Attention", [q, k, v, bias, f"past_key_values.{i}.key", f"past_key_values.{i}.value"],
                 [f"attn_{i}"] + present, q_num_heads=c.heads, kv_num_heads=c.heads)[0]
        outputs += present
        x = node("Add", [x, linear(y, layer.o, f"o_{i}")])
        h = node("RMSNormalization", [x, weight(f"norm2_{i}", layer.norm2.weight)], axis=-1, epsilon=1e-6)
        g = linear(h, layer.gate, f"gate_{i}")
        silu = node("Mul", [g, node("Sigmoid", [g])])
        x = node("Add", [x, linear(node("Mul", [silu, linear(h, layer.up, f"up_{i}")]), layer.down, f"down_{i}")])
    h = node("RMSNormalization", [x, weight("norm", m.norm.weight)], axis=-1, epsilon=1e-6)
    node("MatMul", [h, weight("head", m.head.weight.T)], ["logits"])

    F, I = TensorProto.FLOAT, TensorProto.INT64
    cache = lambda name, length: helper.make_tensor_value_info(name, F, ["batch", c.heads, length, c.head_dim])
    ins = [helper.make_tensor_value_info("input_ids", I, ["batch", "sequence"]),
           helper.make_tensor_value_info("attention_mask", I, ["batch", "total"]),
           helper.make_tensor_value_info("position_ids", I, ["batch", "sequence"])]
    ins += [cache(f"past_key_values.{i}.{kind}", "past") for i in range(c.layers) for kind in ("key", "value")]
    outs = [helper.make_tensor_value_info("logits", F, ["batch", "sequence", c.vocab])]
    outs += [cache(name, "total") for name in outputs]
    g = helper.make_graph(nodes, "opset23_llama", ins, outs, inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
