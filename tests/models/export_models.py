#!/usr/bin/python3
"""Exports the real-model test set with Debian's torch/torchvision (random
weights, fixed seed): for each model and opset, OUT/<name>_op<opset>/model.onnx
(dynamic batch) plus reference inputs/outputs from torch at batch 1 and 4 in
test_data_set_b<batch>/{input_0.pb, output_0.pb}.

usage: export_models.py OUT_DIR [--models resnet18,mobilenet_v2,...] [--opsets 13,17]
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


def main():
    torch.set_num_threads(2)
    p = argparse.ArgumentParser()
    p.add_argument("out_dir")
    p.add_argument("--models", default="resnet18,mobilenet_v2,efficientnet_b0,transformer_encoder,lstm_tagger,vit_b_16")
    p.add_argument("--opsets", default="13,17")
    a = p.parse_args()
    for name in a.models.split(","):
        opsets = [int(o) for o in a.opsets.split(",")]
        if name in SINGLE_OPSET:
            opsets = [SINGLE_OPSET[name]] if SINGLE_OPSET[name] in opsets else opsets[-1:]
        for opset in opsets:
            export(name, opset, a.out_dir)


if __name__ == "__main__":
    main()
