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
from onnx import TensorProto

from graph_builder import Graph


def export(m, path, max_positions=2048):
    c, g = m.c, Graph(m)
    g.rotary_caches(max_positions)
    for name, value in (("zero", 0), ("one", 1), ("axis1", [1]), ("axes12", [1, 2])):
        g.const(name, value)
    g.const("lowest", np.finfo(np.float32).min, np.float32)
    g.const("fzero", 0.0, np.float32)
    # Query i sits at past + i; it sees key j when j <= past + i and the mask keeps j.
    total = g.op("Gather", [g.op("Shape", ["attention_mask"]), "one"], axis=0)
    steps = g.op("Gather", [g.op("Shape", ["input_ids"]), "one"], axis=0)
    k_at = g.op("Range", ["zero", total, "one"])
    q_at = g.op("Unsqueeze", [g.op("Add", [g.op("Range", ["zero", steps, "one"]), g.op("Sub", [total, steps])]),
                              "axis1"])
    kept = g.op("Cast", [g.op("Unsqueeze", ["attention_mask", "axes12"])], to=TensorProto.BOOL)  # [b, 1, 1, total]
    allowed = g.op("And", [g.op("LessOrEqual", [k_at, q_at]), kept])
    bias = g.op("Where", [allowed, "fzero", "lowest"])  # [b, 1, s, total]
    norm = lambda x, w, name: g.op("RMSNormalization", [x, g.weight(name, w)], axis=-1, epsilon=1e-6)

    x = g.op("Gather", [g.weight("embed", m.embed.weight), "input_ids"], axis=0)
    for i, layer in enumerate(m.layers):
        h = norm(x, layer.norm1.weight, f"norm1_{i}")
        q, k, v = (g.linear(h, lin, f"{n}_{i}") for n, lin in (("q", layer.q), ("k", layer.k), ("v", layer.v)))
        q, k = (g.op("RotaryEmbedding", [t, "cos_cache", "sin_cache", "position_ids"], num_heads=c.heads)
                for t in (q, k))
        y = g.node("Attention", [q, k, v, bias, f"past_key_values.{i}.key", f"past_key_values.{i}.value"],
                   [f"attn_{i}", f"present.{i}.key", f"present.{i}.value"], q_num_heads=c.heads,
                   kv_num_heads=c.heads)[0]
        x = g.op("Add", [x, g.linear(y, layer.o, f"o_{i}")])
        h = norm(x, layer.norm2.weight, f"norm2_{i}")
        gate = g.linear(h, layer.gate, f"gate_{i}")
        silu = g.op("Mul", [gate, g.op("Sigmoid", [gate])])
        x = g.op("Add", [x, g.linear(g.op("Mul", [silu, g.linear(h, layer.up, f"up_{i}")]), layer.down, f"down_{i}")])
    g.node("MatMul", [norm(x, m.norm.weight, "norm"), g.weight("head", m.head.weight.T)], ["logits"])
    g.save(path, "opset23_llama", [("", 23)], 10, positions=True)
