#!/usr/bin/python3
"""The benchmark corpus: real architectures of many families, exported with
the machine's torch (random weights: speed does not depend on their values).

    bench/corpus.py OUT_DIR [--models a,b,...] [--opsets 13,17] [--list]

Each model is written to OUT_DIR/<name>_op<opset>/model.onnx with a dynamic
batch dim, beside `inputs.txt`: one line per input, NAME=DxDx... without the
batch dim (bench/compare.sh prepends the batch it measures). Models already
exported are kept. Every input is float32, so both engines can make random
data for it. The larger architectures are written in bench/corpus_nets.py;
the small ones here.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn

# Loaded by path too (tests/models/export_corpus.py), so its folder may not be on the path.
if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_nets import (Crnn, DbTextDetector, GptKvStep, GptLike, MidasLike, T5EncoderLike,  # noqa: E402
                         U2NetP, UNet, UNetCrossAttn, Wav2VecLike, YoloLike)


class Espcn(nn.Module):
    """ESPCN super-resolution (x3): convolutions and a pixel shuffle (DepthToSpace)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 64, 5, padding=2), nn.Tanh(), nn.Conv2d(64, 32, 3, padding=1), nn.Tanh(),
                                  nn.Conv2d(32, 3 * 9, 3, padding=1), nn.PixelShuffle(3))

    def forward(self, x):
        return self.body(x)


class SpeechGru(nn.Module):
    """A speech acoustic model: 1-D convolutions subsampling filterbank
    frames, a 2-layer bidirectional GRU, per-frame token scores."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(80, 256, 3, 2, 1), nn.ReLU(), nn.Conv1d(256, 256, 3, 2, 1), nn.ReLU())
        self.gru = nn.GRU(256, 192, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(384, 64)

    def forward(self, x):  # [B, 80, T]
        return self.fc(self.gru(self.conv(x).transpose(1, 2))[0])


class Tcn(nn.Module):
    """A temporal convolutional network (keyword spotting, audio): dilated
    causal 1-D convolutions with residuals, global pooling."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Conv1d(40, 128, 1)
        self.blocks = nn.ModuleList([nn.Sequential(nn.ConstantPad1d((2 * d, 0), 0.0), nn.Conv1d(128, 128, 3, dilation=d),
                                                   nn.BatchNorm1d(128), nn.ReLU()) for d in (1, 2, 4, 8, 16)])
        self.fc = nn.Linear(128, 12)

    def forward(self, x):
        x = self.inp(x)
        for b in self.blocks:
            x = x + b(x)
        return self.fc(x.mean(-1))


class MaskedEncoder(nn.Module):
    """A BERT-style text encoder on token embeddings with a padding mask
    (1 = token, 0 = padding) turned into an additive attention bias."""

    def __init__(self, d=256, heads=4, layers=4):
        super().__init__()
        self.heads = heads
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(d, heads, 4 * d, 0.0, activation="gelu",
                                                                batch_first=True) for _ in range(layers)])

    def forward(self, x, mask):
        b, t, _ = x.shape
        bias = ((1.0 - mask) * -10000.0)[:, None, None, :].expand(b, self.heads, t, t).reshape(b * self.heads, t, t)
        for layer in self.layers:
            x = layer(x, src_mask=bias)
        return x


class DcganGenerator(nn.Module):
    """A DCGAN generator: a latent vector through a stack of transposed
    convolutions (4x4, stride 2) with batch norm and ReLU to a 128x128 image."""

    def __init__(self, nz=100, ngf=64):
        super().__init__()

        def up(i, o, s=2, p=1):
            return [nn.ConvTranspose2d(i, o, 4, s, p, bias=False), nn.BatchNorm2d(o), nn.ReLU()]

        self.net = nn.Sequential(*up(nz, ngf * 16, 1, 0), *up(ngf * 16, ngf * 8), *up(ngf * 8, ngf * 4),
                                 *up(ngf * 4, ngf * 2), *up(ngf * 2, ngf), nn.ConvTranspose2d(ngf, 3, 4, 2, 1),
                                 nn.Tanh())

    def forward(self, z):
        return self.net(z)


def tv(name, **kw):
    def make():
        import torchvision

        return getattr(torchvision.models, name)(weights=None, **kw)

    return make


def tv_seg(name):
    def make():
        import torchvision

        m = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None)

        class Out(nn.Module):
            def __init__(self):
                super().__init__()
                self.m = m

            def forward(self, x):
                return self.m(x)["out"]

        return Out()

    return make


def tv_video(name):
    def make():
        import torchvision

        return getattr(torchvision.models.video, name)(weights=None)

    return make


# name -> (family, constructor, inputs {name: shape without the batch dim})
MODELS = {
    "mobilenet_v3_large": ("classification", tv("mobilenet_v3_large"), {"input": (3, 224, 224)}),
    "mobilenet_v3_small": ("classification", tv("mobilenet_v3_small"), {"input": (3, 224, 224)}),
    "convnext_tiny": ("classification", tv("convnext_tiny"), {"input": (3, 224, 224)}),
    "regnet_y_400mf": ("classification", tv("regnet_y_400mf"), {"input": (3, 224, 224)}),
    "googlenet": ("classification", tv("googlenet", aux_logits=False, init_weights=True), {"input": (3, 224, 224)}),
    "mnasnet1_0": ("classification", tv("mnasnet1_0"), {"input": (3, 224, 224)}),
    "shufflenet_v2": ("classification", tv("shufflenet_v2_x1_0"), {"input": (3, 224, 224)}),
    "densenet121": ("classification", tv("densenet121"), {"input": (3, 224, 224)}),
    "squeezenet1_1": ("classification", tv("squeezenet1_1"), {"input": (3, 224, 224)}),
    "swin_t": ("vision transformer", tv("swin_t"), {"input": (3, 224, 224)}),
    "lraspp_mobilenet_v3": ("segmentation", tv_seg("lraspp_mobilenet_v3_large"), {"input": (3, 320, 320)}),
    "deeplabv3_mobilenet_v3": ("segmentation", tv_seg("deeplabv3_mobilenet_v3_large"), {"input": (3, 320, 320)}),
    "unet": ("segmentation / U-Net", UNet, {"input": (3, 256, 256)}),
    "midas_like": ("depth estimation", MidasLike, {"input": (3, 256, 256)}),
    "r3d_18": ("video", tv_video("r3d_18"), {"input": (3, 8, 112, 112)}),
    "yolo_like": ("detection", YoloLike, {"input": (3, 320, 320)}),
    "db_text_detector": ("detection (text)", DbTextDetector, {"input": (3, 320, 320)}),
    "espcn": ("super-resolution", Espcn, {"input": (3, 128, 128)}),
    "u2netp": ("segmentation (salient objects)", U2NetP, {"input": (3, 320, 320)}),
    "dcgan_generator": ("image generation", DcganGenerator, {"input": (100, 1, 1)}),
    "crnn": ("text recognition", Crnn, {"input": (3, 48, 160)}),
    "speech_gru": ("speech (recurrent)", SpeechGru, {"input": (80, 200)}),
    "tcn": ("speech (convolutional)", Tcn, {"input": (40, 400)}),
    "masked_encoder": ("text encoder", MaskedEncoder, {"input": (64, 256), "mask": (64,)}),
    "gpt_like": ("text decoder", GptLike, {"input": (64, 384)}),
    "gpt_kv_step": ("text decoder (KV cache)", GptKvStep, {"input": (1, 384), "past": (8, 6, 64, 64)}),
    "wav2vec_like": ("speech (raw waveform, transformer)", Wav2VecLike, {"input": (16000,)}),
    "t5_encoder_like": ("text encoder (relative positions)", T5EncoderLike, {"input": (64, 384)}),
    "unet_cross_attn": ("image generation (diffusion U-Net)", UNetCrossAttn, {"input": (4, 32, 32),
                                                                            "context": (77, 256)}),
}


def export(name, opset, out_dir):
    folder = os.path.join(out_dir, f"{name}_op{opset}")
    path = os.path.join(folder, "model.onnx")
    if os.path.exists(path):
        return
    family, make, inputs = MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    os.makedirs(folder, exist_ok=True)
    args = tuple(torch.rand(1, *shape) for shape in inputs.values())
    names = list(inputs)
    axes = {n: {0: "batch"} for n in names}
    with torch.no_grad():
        torch.onnx.export(model, args, path + ".tmp", opset_version=opset, input_names=names, dynamic_axes=axes,
                          do_constant_folding=True)
    os.replace(path + ".tmp", path)
    with open(os.path.join(folder, "inputs.txt"), "w") as f:
        for n, shape in inputs.items():
            f.write(f"{n}={'x'.join(str(d) for d in shape)}\n")
    print(f"exported {folder} ({family})", file=sys.stderr)


def main():
    torch.set_num_threads(2)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", nargs="?")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--opsets", default="17")
    p.add_argument("--list", action="store_true", help="print the models and their families")
    a = p.parse_args()
    if a.list:
        for n, (family, _, inputs) in MODELS.items():
            print(f"{n:24} {family:24} {' '.join(f'{k}=' + 'x'.join(map(str, s)) for k, s in inputs.items())}")
        return
    if not a.out_dir:
        p.error("OUT_DIR is required")
    for name in a.models.split(","):
        if name not in MODELS:
            p.error(f"unknown model {name}; --list shows them")
        for opset in (int(o) for o in a.opsets.split(",")):
            export(name, opset, a.out_dir)


if __name__ == "__main__":
    main()
