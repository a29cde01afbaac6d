"""tiny_llama's decoder written the way onnxruntime-genai's model builder
writes decoders: com.microsoft GroupQueryAttention (rotary inside, from cos
and sin caches; seqlens_k and total_sequence_length computed from
attention_mask), SimplifiedLayerNormalization and com.microsoft
SkipSimplifiedLayerNormalization (the residual adds fused into the norms),
no position_ids input. Built with onnx.helper from a torch TinyLlama's
weights, so that tiny_llama.greedy on the same module is its reference; its
MatMuls can then be quantized to MatMulNBits (nbits.py).

    export(module, path, max_positions=2048)
"""
from onnx import TensorProto

from graph_builder import Graph

MS = "com.microsoft"


def export(m, path, max_positions=2048):
    c, g = m.c, Graph(m)
    g.rotary_caches(max_positions)
    g.const("axis1", [1])
    g.const("one", 1)
    # seqlens_k: each sequence's length less one; total_sequence_length: the mask's width.
    lengths = g.op("ReduceSum", ["attention_mask", "axis1"], keepdims=0)
    seqlens = g.op("Cast", [g.op("Sub", [lengths, "one"])], to=TensorProto.INT32)
    width = g.op("Cast", [g.op("Gather", [g.op("Shape", ["attention_mask"]), "one"], axis=0)], to=TensorProto.INT32)

    x = g.op("Gather", [g.weight("embed", m.embed.weight), "input_ids"], axis=0)
    h = g.op("SimplifiedLayerNormalization", [x, g.weight("norm1_0", m.layers[0].norm1.weight)], axis=-1,
             epsilon=1e-6)
    for i, layer in enumerate(m.layers):
        q, k, v = (g.linear(h, lin, f"{n}_{i}") for n, lin in (("q", layer.q), ("k", layer.k), ("v", layer.v)))
        y = g.node("GroupQueryAttention",
                   [q, k, v, f"past_key_values.{i}.key", f"past_key_values.{i}.value", seqlens, width, "cos_cache",
                    "sin_cache"], [f"attn_{i}", f"present.{i}.key", f"present.{i}.value"], domain=MS,
                   num_heads=c.heads, kv_num_heads=c.heads, do_rotary=1, rotary_interleaved=0)[0]
        # x + attention, normed for the MLP; the sum is the residual.
        h, _, _, x = g.node("SkipSimplifiedLayerNormalization",
                            [g.linear(y, layer.o, f"o_{i}"), x, g.weight(f"norm2_{i}", layer.norm2.weight)],
                            [f"h2_{i}", "", "", f"x2_{i}"], domain=MS, epsilon=1e-6)
        gate = g.linear(h, layer.gate, f"gate_{i}")
        silu = g.op("Mul", [gate, g.op("Sigmoid", [gate])])
        down = g.linear(g.op("Mul", [silu, g.linear(h, layer.up, f"up_{i}")]), layer.down, f"down_{i}")
        last = i + 1 == len(m.layers)
        norm = m.norm.weight if last else m.layers[i + 1].norm1.weight
        h, _, _, x = g.node("SkipSimplifiedLayerNormalization",
                            [down, x, g.weight("norm" if last else f"norm1_{i + 1}", norm)],
                            [f"h1_{i + 1}", "", "", f"x1_{i + 1}"], domain=MS, epsilon=1e-6)
    g.node("MatMul", [h, g.weight("head", m.head.weight.T)], ["logits"])
    g.save(path, "genai_llama", [("", 17), (MS, 1)], 8, positions=False)
