#!/usr/bin/python3
"""The benchmark corpus: real architectures of many families, exported with
the machine's torch (random weights: speed does not depend on their values).

    bench/corpus.py OUT_DIR [--models a,b,...] [--opsets 13,17] [--list]

Each model is written to OUT_DIR/<name>_op<opset>/model.onnx with a dynamic
batch dim, beside `inputs.txt`: one line per input, NAME=DxDx... without the
batch dim (bench/compare.sh prepends the batch it measures). Models already
exported are kept. Every input is float32, so both engines can make random
data for it.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn_act(cin, cout, k=3, s=1, act=nn.ReLU):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), act())


class DbTextDetector(nn.Module):
    """A DB-style text detector: ResNet-18 features, an FPN merged by nearest
    upsampling and concatenation, and a head of transposed convolutions."""

    def __init__(self):
        super().__init__()
        import torchvision

        r = torchvision.models.resnet18(weights=None)
        self.stem = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool)
        self.stages = nn.ModuleList([r.layer1, r.layer2, r.layer3, r.layer4])
        self.lateral = nn.ModuleList([nn.Conv2d(c, 64, 1) for c in (64, 128, 256, 512)])
        self.smooth = nn.ModuleList([nn.Conv2d(64, 16, 3, padding=1) for _ in range(4)])
        self.head = nn.Sequential(conv_bn_act(64, 16), nn.ConvTranspose2d(16, 16, 2, 2), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.ConvTranspose2d(16, 1, 2, 2), nn.Sigmoid())

    def forward(self, x):
        x = self.stem(x)
        feats = []
        for s in self.stages:
            x = s(x)
            feats.append(x)
        lat = [l(f) for l, f in zip(self.lateral, feats)]
        for i in range(3, 0, -1):
            lat[i - 1] = lat[i - 1] + F.interpolate(lat[i], scale_factor=2, mode="nearest")
        outs = [F.interpolate(s(l), scale_factor=2**i, mode="nearest") for i, (s, l) in enumerate(zip(self.smooth, lat))]
        return self.head(torch.cat(outs, 1))


class YoloLike(nn.Module):
    """A YOLO-style detector: strided conv-BN-SiLU stages, a top-down path by
    nearest upsampling and concatenation, 1x1 prediction heads."""

    def __init__(self):
        super().__init__()
        act = nn.SiLU
        self.s1 = nn.Sequential(conv_bn_act(3, 16, 3, 2, act), conv_bn_act(16, 32, 3, 2, act), conv_bn_act(32, 32, 3, 1, act))
        self.s2 = nn.Sequential(conv_bn_act(32, 64, 3, 2, act), conv_bn_act(64, 64, 3, 1, act))
        self.s3 = nn.Sequential(conv_bn_act(64, 128, 3, 2, act), conv_bn_act(128, 128, 3, 1, act))
        self.s4 = nn.Sequential(conv_bn_act(128, 256, 3, 2, act), conv_bn_act(256, 256, 1, 1, act))
        self.up4 = conv_bn_act(256 + 128, 128, 3, 1, act)
        self.up3 = conv_bn_act(128 + 64, 64, 3, 1, act)
        self.heads = nn.ModuleList([nn.Conv2d(c, 3 * 85, 1) for c in (64, 128, 256)])

    def forward(self, x):
        p2 = self.s2(self.s1(x))
        p3 = self.s3(p2)
        p4 = self.s4(p3)
        t3 = self.up4(torch.cat([F.interpolate(p4, scale_factor=2, mode="nearest"), p3], 1))
        t2 = self.up3(torch.cat([F.interpolate(t3, scale_factor=2, mode="nearest"), p2], 1))
        return [h(f).flatten(2) for h, f in zip(self.heads, (t2, t3, p4))]


class UNet(nn.Module):
    """A U-Net (segmentation, diffusion and super-resolution backbones):
    max-pool down, transposed-convolution up, skip concatenations."""

    def __init__(self, c=(32, 64, 128, 256)):
        super().__init__()
        self.down = nn.ModuleList()
        cin = 3
        for co in c:
            self.down.append(nn.Sequential(conv_bn_act(cin, co), conv_bn_act(co, co)))
            cin = co
        self.up = nn.ModuleList([nn.ConvTranspose2d(c[i], c[i - 1], 2, 2) for i in range(len(c) - 1, 0, -1)])
        self.merge = nn.ModuleList([nn.Sequential(conv_bn_act(2 * c[i - 1], c[i - 1]), conv_bn_act(c[i - 1], c[i - 1]))
                                    for i in range(len(c) - 1, 0, -1)])
        self.out = nn.Conv2d(c[0], 2, 1)

    def forward(self, x):
        skips = []
        for i, d in enumerate(self.down):
            x = d(x if i == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips[:-1])):
            x = merge(torch.cat([up(x), skip], 1))
        return self.out(x)


class ResidualConvUnit(nn.Module):
    """RefineNet's residual unit, as MiDaS writes it (in-place ReLUs)."""

    def __init__(self, f):
        super().__init__()
        self.conv1 = nn.Conv2d(f, f, 3, padding=1)
        self.conv2 = nn.Conv2d(f, f, 3, padding=1)

    def forward(self, x):
        out = F.relu(x, inplace=True)
        out = self.conv2(F.relu(self.conv1(out), inplace=True))
        return out + x


class FusionBlock(nn.Module):
    """MiDaS's feature fusion block: the coarser path plus a residual unit
    of the skip, another unit, then x2 bilinear (align_corners) upsampling."""

    def __init__(self, f):
        super().__init__()
        self.skip = ResidualConvUnit(f)
        self.unit = ResidualConvUnit(f)

    def forward(self, *xs):
        out = xs[0]
        if len(xs) == 2:
            out = out + self.skip(xs[1])
        return F.interpolate(self.unit(out), scale_factor=2, mode="bilinear", align_corners=True)


class MidasLike(nn.Module):
    """A MiDaS-style monocular depth network: a ResNet-34 encoder, 3x3
    projections of its four stages, RefineNet fusion blocks coarse to fine,
    and a head with one more x2 bilinear upsampling."""

    def __init__(self, f=256):
        super().__init__()
        import torchvision

        r = torchvision.models.resnet34(weights=None)
        self.stages = nn.ModuleList([nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1), r.layer2, r.layer3,
                                     r.layer4])
        self.project = nn.ModuleList([nn.Conv2d(c, f, 3, padding=1, bias=False) for c in (64, 128, 256, 512)])
        self.fuse = nn.ModuleList([FusionBlock(f) for _ in range(4)])
        self.head = nn.Sequential(nn.Conv2d(f, f // 2, 3, padding=1),
                                  nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
                                  nn.Conv2d(f // 2, 32, 3, padding=1), nn.ReLU(True), nn.Conv2d(32, 1, 1))

    def forward(self, x):
        feats = []
        for stage, proj in zip(self.stages, self.project):
            x = stage(x)
            feats.append(proj(x))
        p = self.fuse[3](feats[3])
        for k in (2, 1, 0):
            p = self.fuse[k](p, feats[k])
        return self.head(p).squeeze(1)


class Espcn(nn.Module):
    """ESPCN super-resolution (x3): convolutions and a pixel shuffle (DepthToSpace)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 64, 5, padding=2), nn.Tanh(), nn.Conv2d(64, 32, 3, padding=1), nn.Tanh(),
                                  nn.Conv2d(32, 3 * 9, 3, padding=1), nn.PixelShuffle(3))

    def forward(self, x):
        return self.body(x)


class Crnn(nn.Module):
    """A CRNN text recognizer: a conv stack to a feature sequence, a
    bidirectional LSTM, per-step class scores."""

    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(conv_bn_act(3, 32), nn.MaxPool2d(2), conv_bn_act(32, 64), nn.MaxPool2d(2),
                                 conv_bn_act(64, 128), conv_bn_act(128, 128), nn.MaxPool2d((2, 1)), conv_bn_act(128, 256),
                                 nn.MaxPool2d((2, 1)))
        self.rnn = nn.LSTM(256 * 3, 128, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(256, 97)

    def forward(self, x):
        f = self.cnn(x)  # [B, 256, 3, W/4]
        b, c, h, w = f.shape
        seq = f.permute(0, 3, 1, 2).reshape(b, w, c * h)
        return self.fc(self.rnn(seq)[0])


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


class CausalBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / (d // self.heads) ** 0.5
        causal = torch.triu(torch.full((t, t), float("-inf")), 1)
        y = (att + causal).softmax(-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GptLike(nn.Module):
    """A GPT-2-style decoder stack (causal attention, tanh GELU) on token embeddings."""

    def __init__(self, d=384, heads=6, layers=4):
        super().__init__()
        self.blocks = nn.Sequential(*[CausalBlock(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)

    def forward(self, x):
        return self.ln(self.blocks(x))


class GptKvStep(nn.Module):
    """One generation step of a GPT-2-style decoder with a key/value cache:
    the new token's embedding attends to the cached keys and values of the
    64 tokens before it and its own; returns the hidden state and the cache
    grown by one token (past: [batch, layers * 2, heads, tokens, head dim])."""

    def __init__(self, d=384, heads=6, layers=4):
        super().__init__()
        self.heads = heads
        self.blocks = nn.ModuleList([CausalBlock(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)

    def forward(self, x, past):
        b, t, d = x.shape
        h, dh = self.heads, d // self.heads
        present = []
        for i, blk in enumerate(self.blocks):
            q, k, v = blk.qkv(blk.ln1(x)).split(d, dim=2)
            q, k, v = (z.reshape(b, t, h, dh).transpose(1, 2) for z in (q, k, v))
            k = torch.cat([past[:, 2 * i], k], dim=2)
            v = torch.cat([past[:, 2 * i + 1], v], dim=2)
            present += [k, v]
            y = ((q @ k.transpose(-1, -2)) / dh ** 0.5).softmax(-1) @ v
            x = x + blk.proj(y.transpose(1, 2).reshape(b, t, d))
            x = x + blk.mlp(blk.ln2(x))
        return self.ln(x), torch.stack(present, dim=1)


class Rsu(nn.Module):
    """U^2-Net's residual U-block: an encoder of `depth` conv-BN-ReLU steps
    with max pools between them, a dilated bottom, a decoder that upsamples
    and concatenates, and the input's projection added back. With `dilated`
    (RSU-4F) there are no pools: the steps dilate 1, 2, 4 and 8."""

    def __init__(self, depth, cin, mid, cout, dilated=False):
        super().__init__()
        self.dilated = dilated

        def cbr(i, o, d=1):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=d, dilation=d), nn.BatchNorm2d(o), nn.ReLU())

        self.inp = cbr(cin, cout)
        dil = [1, 2, 4] if dilated else [1] * (depth - 1)
        self.enc = nn.ModuleList([cbr(cout if k == 0 else mid, mid, dil[k]) for k in range(depth - 1)])
        self.bottom = cbr(mid, mid, 8 if dilated else 2)
        self.dec = nn.ModuleList([cbr(2 * mid, cout if k == depth - 2 else mid, dil[depth - 2 - k])
                                  for k in range(depth - 1)])

    def forward(self, x):
        hin = self.inp(x)
        h, skips = hin, []
        for k, e in enumerate(self.enc):
            h = e(h)
            skips.append(h)
            if not self.dilated and k < len(self.enc) - 1:
                h = F.max_pool2d(h, 2, 2, ceil_mode=True)
        h = self.bottom(h)
        for d, s in zip(self.dec, reversed(skips)):
            if h.shape[-2:] != s.shape[-2:]:
                h = F.interpolate(h, size=s.shape[-2:], mode="bilinear", align_corners=False)
            h = d(torch.cat([h, s], 1))
        return h + hin


class U2NetP(nn.Module):
    """U^2-Net-P (salient object segmentation, background removal): six
    stages of RSU blocks, the two deepest dilated (RSU-4F), a decoder of
    RSU blocks and six side outputs fused into one mask."""

    def __init__(self):
        super().__init__()
        self.enc = nn.ModuleList([Rsu(7, 3, 16, 64), Rsu(6, 64, 16, 64), Rsu(5, 64, 16, 64), Rsu(4, 64, 16, 64),
                                  Rsu(4, 64, 16, 64, True), Rsu(4, 64, 16, 64, True)])
        self.dec = nn.ModuleList([Rsu(4, 128, 16, 64, True), Rsu(4, 128, 16, 64), Rsu(5, 128, 16, 64),
                                  Rsu(6, 128, 16, 64), Rsu(7, 128, 16, 64)])
        self.side = nn.ModuleList([nn.Conv2d(64, 1, 3, padding=1) for _ in range(6)])
        self.fuse = nn.Conv2d(6, 1, 1)

    def forward(self, x):
        size = x.shape[-2:]
        feats, h = [], x
        for k, e in enumerate(self.enc):
            h = e(h)
            feats.append(h)
            if k < 5:
                h = F.max_pool2d(h, 2, 2, ceil_mode=True)
        outs = [h]
        for d, s in zip(self.dec, reversed(feats[:-1])):
            h = F.interpolate(h, size=s.shape[-2:], mode="bilinear", align_corners=False)
            h = d(torch.cat([h, s], 1))
            outs.append(h)
        sides = [F.interpolate(sd(o), size=size, mode="bilinear", align_corners=False)
                 for sd, o in zip(self.side, reversed(outs))]
        return torch.sigmoid(self.fuse(torch.cat(sides, 1)))


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
