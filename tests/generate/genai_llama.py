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
import numpy as np
import torch
from onnx import TensorProto, helper, numpy_helper


def export(m, path, max_positions=2048):
    c = m.c
    nodes, inits = [], []

    def weight(name, t):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(t.detach().numpy().astype(np.float32)), name))
        return name

    def node(op, ins, outs=None, domain="", **attrs):
        outs = outs or [f"{op.lower()}_{len(nodes)}"]
        nodes.append(helper.make_node(op, ins, outs, name=f"{op}_{len(nodes)}", domain=domain, **attrs))
        return outs

    def linear(x, lin, name):
        return node("MatMul", [x, weight(name, lin.weight.T)])[0]

    with torch.no_grad():
        freqs = torch.arange(max_positions).float()[:, None] * m.inv_freq
    weight("cos_cache", freqs.cos())
    weight("sin_cache", freqs.sin())
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "axis1"))
    inits.append(numpy_helper.from_array(np.array(1, np.int64), "one"))
    # seqlens_k: each sequence's length less one; total_sequence_length: the mask's width.
    lengths = node("ReduceSum", ["attention_mask", "axis1"], keepdims=0)[0]
    seqlens = node("Cast", [node("Sub", [lengths, "one"])[0]], to=TensorProto.INT32)[0]
    width = node("Cast", [node("Gather", [node("Shape", ["attention_mask"])[0], "one"], axis=0)[0]],
                 to=TensorProto.INT32)[0]

    x = node("Gather", [weight("embed", m.embed.weight), "input_ids"], axis=0)[0]
    h = node("SimplifiedLayerNormalization", [x, weight("norm1_0", m.layers[0].norm1.weight)], axis=-1,
             epsilon=1e-6)[0]
    outputs = []
    for i, layer in enumerate(m.layers):
        q, k, v = (linear(h, lin, f"{n}_{i}") for n, lin in (("q", layer.q), ("k", layer.k), ("v", layer.v)))
        present = [f"present.{i}.key", f"present.{i}.value"]
        y = node("GroupQueryAttention",
                 [q, k, v, f"past_key_values.{i}.key", f"past_key_values.{i}.value", seqlens, width, "cos_cache",
                  "sin_cache"], [f"attn_{i}"] + present, domain="com.microsoft", num_heads=c.heads,
                 kv_num_heads=c.heads, do_rotary=1, rotary_interleaved=0)[0]
        outputs += present
        # x + attention, normed for the MLP; the sum is the residual.
        h, _, _, x = node("SkipSimplifiedLayerNormalization",
                          [linear(y, layer.o, f"o_{i}"), x, weight(f"norm2_{i}", layer.norm2.weight)],
                          [f"h2_{i}", "", "", f"x2_{i}"], domain="com.microsoft", epsilon=1e-6)
        g = linear(h, layer.gate, f"gate_{i}")
        silu = node("Mul", [g, node("Sigmoid", [g])[0]])[0]
        down = linear(node("Mul", [silu, linear(h, layer.up, f"up_{i}")])[0], layer.down, f"down_{i}")
        last = i + 1 == len(m.layers)
        norm = m.norm.weight if last else m.layers[i + 1].norm1.weight
        h, _, _, x = node("SkipSimplifiedLayerNormalization",
                          [down, x, weight("norm" if last else f"norm1_{i + 1}", norm)],
                          [f"h1_{i + 1}", "", "", f"x1_{i + 1}"], domain="com.microsoft", epsilon=1e-6)
    node("MatMul", [h, weight("head", m.head.weight.T)], ["logits"])

    F, I = TensorProto.FLOAT, TensorProto.INT64
    cache = lambda name, length: helper.make_tensor_value_info(name, F, ["batch", c.heads, length, c.head_dim])
    ins = [helper.make_tensor_value_info("input_ids", I, ["batch", "sequence"]),
           helper.make_tensor_value_info("attention_mask", I, ["batch", "total"])]
    ins += [cache(f"past_key_values.{i}.{kind}", "past") for i in range(c.layers) for kind in ("key", "value")]
    outs = [helper.make_tensor_value_info("logits", F, ["batch", "sequence", c.vocab])]
    outs += [cache(name, "total") for name in outputs]
    g = helper.make_graph(nodes, "genai_llama", ins, outs, inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
