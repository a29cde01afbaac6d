#!/usr/bin/python3
"""Exports the real-model test set with Debian's torch/torchvision (random
weights, fixed seed): for each model and opset, OUT/<name>_op<opset>/model.onnx
(dynamic batch) plus reference inputs/outputs from torch at batch 1 and 4 in
test_data_set_b<batch>/{input_0.pb, output_0.pb}.

usage: export_models.py OUT_DIR [--models resnet18,mobilenet_v2,...] [--opsets 13,17]

gpt_generate is a greedy generation loop over a decoder with a key/value
cache (an ONNX Loop whose cache grows), with references at two batch sizes,
step counts and cache lengths.
"""
import argparse
import os
import sys
import warnings

import numpy as np
import torch
from onnx import numpy_helper

warnings.filterwarnings("ignore")


class Encoder(torch.nn.Module):
    """A 4-layer Transformer encoder, d=256, 4 heads, on token embeddings."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=4)

    def forward(self, x):
        return self.encoder(x)


class LstmTagger(torch.nn.Module):
    """A 2-layer bidirectional LSTM sequence tagger over 32 features, seq 20."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(32, 64, num_layers=2, bidirectional=True, batch_first=True)
        self.head = torch.nn.Linear(128, 10)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y)


def build(name):
    if name == "transformer_encoder":
        return Encoder(), (64, 256)
    if name == "lstm_tagger":
        return LstmTagger(), (20, 32)
    import torchvision  # only here: bench/gpu/torch_bench.py imports Encoder where torchvision may be missing

    ctor = getattr(torchvision.models, name)
    model = ctor(weights=None)
    if name.startswith("vit"):
        # torchvision zero-initializes the classifier: its outputs would be all
        # zeros, and a comparison against zeros cannot fail.
        torch.nn.init.normal_(model.heads.head.weight, std=0.02)
        torch.nn.init.normal_(model.heads.head.bias, std=0.02)
    return model, (3, 224, 224)


# Large models are exported at one opset only, to keep the test time down.
SINGLE_OPSET = {"vit_b_16": 17}


def save(tensor, path, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(tensor), name).SerializeToString())


def export(name, opset, out_dir):
    torch.manual_seed(0)
    model, sample_shape = build(name)
    model.eval()
    folder = os.path.join(out_dir, f"{name}_op{opset}")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    example = torch.randn(1, *sample_shape)
    # Outside no_grad: the fused Transformer fast path has no ONNX export.
    torch.onnx.export(model, example, path, opset_version=opset, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, do_constant_folding=True)
    for batch in (1, 4):
        gen = torch.Generator().manual_seed(100 + batch)
        x = torch.randn(batch, *sample_shape, generator=gen)
        with torch.no_grad():
            # The fast path is numerically the same as the exported graph.
            y = model(x)
        data = os.path.join(folder, f"test_data_set_b{batch}")
        os.makedirs(data, exist_ok=True)
        save(x.numpy(), os.path.join(data, "input_0.pb"), "input")
        save(y.numpy(), os.path.join(data, "output_0.pb"), "output")
    print(f"exported {folder}", file=sys.stderr)


class Generate(torch.nn.Module):
    """Greedy generation: a GPT-2-style decoder step with a key/value cache
    (bench/corpus.py's GptKvStep) run n times in a loop, each step's argmax
    token embedded as the next input. Scripted, so that the export is an
    ONNX Loop whose carried cache grows by one token per iteration."""

    def __init__(self):
        super().__init__()
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
        import corpus

        self.step = corpus.GptKvStep(d=96, heads=2, layers=2)
        self.head = torch.nn.Linear(96, 50)
        self.emb = torch.nn.Embedding(50, 96)

    def forward(self, x, past, n: int):
        tokens = []
        for _ in range(n):
            y, past = self.step(x, past)
            tok = self.head(y).argmax(-1)
            tokens.append(tok)
            x = self.emb(tok)
        return torch.cat(tokens, 1), past


def export_generation(out_dir, opset):
    torch.manual_seed(0)
    model = Generate().eval()
    folder = os.path.join(out_dir, f"gpt_generate_op{opset}")
    os.makedirs(folder, exist_ok=True)
    x, past = torch.randn(1, 1, 96), torch.randn(1, 4, 2, 8, 48)
    torch.onnx.export(torch.jit.script(model), (x, past, 5), os.path.join(folder, "model.onnx"), opset_version=opset,
                      input_names=["x", "past", "n"], output_names=["tokens", "present"],
                      dynamic_axes={"x": {0: "batch"}, "past": {0: "batch", 3: "cached"}})
    for batch, steps, cached in ((1, 5, 8), (2, 3, 12)):
        gen = torch.Generator().manual_seed(200 + batch)
        x = torch.randn(batch, 1, 96, generator=gen)
        past = torch.randn(batch, 4, 2, cached, 48, generator=gen)
        with torch.no_grad():
            tokens, present = model(x, past, steps)
        data = os.path.join(folder, f"test_data_set_b{batch}")
        os.makedirs(data, exist_ok=True)
        save(x.numpy(), os.path.join(data, "input_0.pb"), "x")
        save(past.numpy(), os.path.join(data, "input_1.pb"), "past")
        save(np.array(steps, np.int64), os.path.join(data, "input_2.pb"), "n")
        save(tokens.numpy(), os.path.join(data, "output_0.pb"), "tokens")
        save(present.numpy(), os.path.join(data, "output_1.pb"), "present")
    print(f"exported {folder}", file=sys.stderr)


def main():
    torch.set_num_threads(2)
    p = argparse.ArgumentParser()
    p.add_argument("out_dir")
    p.add_argument("--models",
                   default="resnet18,mobilenet_v2,efficientnet_b0,transformer_encoder,lstm_tagger,vit_b_16,gpt_generate")
    p.add_argument("--opsets", default="13,17")
    a = p.parse_args()
    for name in a.models.split(","):
        opsets = [int(o) for o in a.opsets.split(",")]
        if name == "gpt_generate":
            for opset in opsets:
                export_generation(a.out_dir, opset)
            continue
        if name in SINGLE_OPSET:
            opsets = [SINGLE_OPSET[name]] if SINGLE_OPSET[name] in opsets else opsets[-1:]
        for opset in opsets:
            export(name, opset, a.out_dir)


if __name__ == "__main__":
    main()
