"""A LLaMA-style decoder with random weights (RMSNorm, rotary positions,
SwiGLU, a key/value cache), exported as Hugging Face / Optimum models are:
input_ids, attention_mask, position_ids and past_key_values.N.key/value in;
logits and present.N.key/value out. `greedy` is the reference: the same
module in torch, its cache concatenated step by step, one prompt alone."""
import os

import torch

import dataclasses


@dataclasses.dataclass
class Config:
    vocab: int = 97
    hidden: int = 64
    heads: int = 4
    layers: int = 2
    ffn: int = 128

    @property
    def head_dim(self):
        return self.hidden // self.heads


LAYERS = Config().layers


class RMSNorm(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(1 + 0.1 * torch.randn(n))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], -1)


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.norm1, self.norm2 = RMSNorm(c.hidden), RMSNorm(c.hidden)
        self.q, self.k, self.v, self.o = (torch.nn.Linear(c.hidden, c.hidden, bias=False) for _ in range(4))
        self.gate, self.up = torch.nn.Linear(c.hidden, c.ffn, bias=False), torch.nn.Linear(c.hidden, c.ffn, bias=False)
        self.down = torch.nn.Linear(c.ffn, c.hidden, bias=False)

    def forward(self, x, cos, sin, bias, past_k, past_v):
        b, t, _ = x.shape
        c = self.c
        h = self.norm1(x)
        split = lambda y: y.view(b, t, c.heads, c.head_dim).transpose(1, 2)
        q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
        a = torch.softmax(q @ k.transpose(2, 3) / c.head_dim ** 0.5 + bias, -1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(b, t, c.hidden))
        h = self.norm2(x)
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h)), k, v


class TinyLlama(torch.nn.Module):
    def __init__(self, c=None):
        super().__init__()
        self.c = c = c or Config()
        self.embed = torch.nn.Embedding(c.vocab, c.hidden)
        self.layers = torch.nn.ModuleList(Layer(c) for _ in range(c.layers))
        self.norm = RMSNorm(c.hidden)
        self.head = torch.nn.Linear(c.hidden, c.vocab, bias=False)
        d = c.head_dim
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, d, 2).float() / d))

    def forward(self, input_ids, attention_mask, position_ids, *past):
        t, past_len = input_ids.shape[1], past[0].shape[2]
        freqs = position_ids[..., None].float() * self.inv_freq
        emb = torch.cat([freqs, freqs], -1)[:, None]
        cos, sin = emb.cos(), emb.sin()
        # Query i sits at past_len + i; it sees the keys before it that the mask keeps.
        q_at = torch.arange(t)[:, None] + past_len
        k_at = torch.arange(past_len + t)[None, :]
        allowed = (k_at <= q_at)[None, None] & (attention_mask[:, None, None, :] == 1)
        bias = torch.where(allowed, torch.tensor(0.0), torch.tensor(torch.finfo(torch.float32).min))
        x, present = self.embed(input_ids), []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, bias, past[2 * i], past[2 * i + 1])
            present += [k, v]
        return (self.head(self.norm(x)),) + tuple(present)


class CountsFromPast(TinyLlama):
    """GPT-2's exports' way: no position_ids; positions count from the
    past's length, which a cache of fixed capacity gets wrong."""

    def forward(self, input_ids, attention_mask, *past):
        t, past_len = input_ids.shape[1], past[0].shape[2]
        return super().forward(input_ids, attention_mask, (torch.arange(t) + past_len)[None], *past)


class IgnoresMask(TinyLlama):
    """A model that attends to every slot of its cache (the mask taken as
    all ones): right when the past is exactly the tokens so far, wrong for
    a masked cache or a padded batch."""

    def forward(self, input_ids, attention_mask, position_ids, *past):
        return super().forward(input_ids, torch.ones_like(attention_mask), position_ids, *past)


def build(seed=0, config=None):
    torch.manual_seed(seed)
    m = TinyLlama(config).eval()
    with torch.no_grad():  # logits far apart: argmax is not decided by rounding
        m.head.weight.mul_(8)
    return m


def export(model, path, positions=True, index_dtype=torch.int64):
    c = model.c
    names = [f"past_key_values.{i}.{kind}" for i in range(c.layers) for kind in ("key", "value")]
    outs = ["logits"] + [f"present.{i}.{kind}" for i in range(c.layers) for kind in ("key", "value")]
    b, t, p = 2, 3, 4
    args = (torch.randint(0, c.vocab, (b, t), dtype=index_dtype), torch.ones(b, p + t, dtype=index_dtype))
    args += (torch.arange(p, p + t, dtype=index_dtype).repeat(b, 1),) if positions else ()
    args += tuple(torch.randn(b, c.heads, p, c.head_dim) for _ in names)
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total"},
            "position_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    axes.update({n: {0: "batch", 2: "past"} for n in names})
    axes.update({n: {0: "batch", 2: "total"} for n in outs[1:]})
    inputs = ["input_ids", "attention_mask"] + (["position_ids"] if positions else []) + names
    if not positions:
        del axes["position_ids"]
    torch.onnx.export(model, args, path, opset_version=17, input_names=inputs, output_names=outs, dynamic_axes=axes)


def exported(folder):
    """The test suites' decoder: built with seed 0 and exported to
    folder/model.onnx; (module, path)."""
    m = build()
    path = os.path.join(str(folder), "model.onnx")
    export(m, path)
    return m, path


@torch.no_grad()
def greedy(model, prompt, n, stop=()):
    ids = torch.tensor([prompt])
    c = model.c
    past = [torch.zeros(1, c.heads, 0, c.head_dim) for _ in range(2 * c.layers)]
    out, at = [], 0
    for _ in range(n):
        t = ids.shape[1]
        mask = torch.ones(1, at + t, dtype=torch.int64)
        logits, *past = model(ids, mask, torch.arange(at, at + t)[None], *past)
        at += t
        out.append(int(logits[0, -1].argmax()))
        if out[-1] in stop:
            break
        ids = torch.tensor([[out[-1]]])
    return out


if __name__ == "__main__":
    import sys
    export(build(), sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.getcwd(), "tiny_llama.onnx"))
