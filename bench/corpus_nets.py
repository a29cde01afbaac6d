"""The architectures of the benchmark corpus (bench/corpus.py) that take
more than a few lines: each models a real network of its family, at a size
that keeps the export quick (random weights: speed does not depend on their
values). bench/corpus.py names them in its MODELS table and exports them.
"""
import math

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


class Attention(nn.Module):
    """Multi-head attention written out (projections, scores, softmax),
    self-attention or cross-attention to a context of `kv_dim` features,
    with an optional additive bias on the scores. `scaled=False` leaves out
    the 1/sqrt(head dim) factor, as T5 does."""

    def __init__(self, d, heads, kv_dim=None, qkv_bias=True, out_bias=True, scaled=True):
        super().__init__()
        self.heads, self.scale = heads, (d // heads) ** -0.5 if scaled else 1.0
        self.q = nn.Linear(d, d, bias=qkv_bias)
        self.k = nn.Linear(kv_dim or d, d, bias=qkv_bias)
        self.v = nn.Linear(kv_dim or d, d, bias=qkv_bias)
        self.out = nn.Linear(d, d, bias=out_bias)

    def forward(self, x, context=None, bias=None):
        context = x if context is None else context
        b, t, d = x.shape
        q, k, v = (z.reshape(b, -1, self.heads, d // self.heads).transpose(1, 2)
                   for z in (self.q(x), self.k(context), self.v(context)))
        scores = q @ k.transpose(-1, -2)
        if self.scale != 1.0:
            scores = scores * self.scale
        if bias is not None:
            scores = scores + bias
        y = scores.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class Wav2VecLayer(nn.Module):
    """A wav2vec 2.0 Base encoder layer: post-norm (attention, residual,
    layer norm, then a GELU feed-forward, residual, layer norm)."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.attn = Attention(d, heads)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.ff(x))


class Wav2VecLike(nn.Module):
    """A wav2vec 2.0 Base-style speech encoder on the raw waveform (16 kHz):
    seven 1-D convolutions of 512 channels (kernels 10,3,3,3,3,2,2, strides
    5,2,2,2,2,2,2; GELU; a per-channel group norm after the first), a feature
    projection (layer norm, linear), the convolutional relative positional
    embedding (grouped, kernel 128, its last frame dropped, GELU), a layer
    norm, and post-norm transformer layers: 49 frames for one second."""

    def __init__(self, d=384, heads=6, ff=1536, layers=4, c=512):
        super().__init__()
        convs = []
        for i, (k, s) in enumerate(zip((10, 3, 3, 3, 3, 2, 2), (5, 2, 2, 2, 2, 2, 2))):
            convs += [nn.Conv1d(1 if i == 0 else c, c, k, s, bias=False)]
            convs += [nn.GroupNorm(c, c)] if i == 0 else []
            convs += [nn.GELU()]
        self.features = nn.Sequential(*convs)
        self.project = nn.Sequential(nn.LayerNorm(c), nn.Linear(c, d))
        self.pos_conv = nn.Conv1d(d, d, 128, padding=64, groups=16)
        self.ln = nn.LayerNorm(d)
        self.layers = nn.Sequential(*[Wav2VecLayer(d, heads, ff) for _ in range(layers)])

    def forward(self, wave):  # [B, samples]
        x = self.project(self.features(wave[:, None, :]).transpose(1, 2))
        pos = F.gelu(self.pos_conv(x.transpose(1, 2))[:, :, :-1])
        return self.layers(self.ln(x + pos.transpose(1, 2)))


class RmsNorm(nn.Module):
    """T5's layer norm: scales by the root mean square, no mean subtracted, no bias."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def t5_buckets(t, buckets=32, max_distance=128):
    """T5's bidirectional relative-position buckets of a [t, t] grid: half the
    buckets for keys after the query; distances below a quarter of the
    buckets each have their own, longer ones share log-spaced buckets up to
    max_distance. (Distances are raised to the first log-spaced one before
    the log, so that it never sees 0; those are the exact buckets anyway.)"""
    pos = torch.arange(t)
    rel = pos[None, :] - pos[:, None]
    half = buckets // 2
    exact = half // 2
    dist = rel.abs()
    ratio = torch.log(dist.clamp(min=exact).float() / exact) / math.log(max_distance / exact)
    far = (exact + (ratio * (half - exact)).long()).clamp(max=half - 1)
    return (rel > 0).long() * half + torch.where(dist < exact, dist, far)


class T5Layer(nn.Module):
    """A T5 v1.1 encoder layer: pre-norm (RMS) attention without the
    1/sqrt(d) scaling and without biases, then a gated-GELU feed-forward
    (wi_0 through tanh GELU, times wi_1, then wo)."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.ln1, self.ln2 = RmsNorm(d), RmsNorm(d)
        self.attn = Attention(d, heads, qkv_bias=False, out_bias=False, scaled=False)
        self.wi_0, self.wi_1 = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.wo = nn.Linear(ff, d, bias=False)

    def forward(self, x, bias):
        x = x + self.attn(self.ln1(x), bias=bias)
        h = self.ln2(x)
        return x + self.wo(F.gelu(self.wi_0(h), approximate="tanh") * self.wi_1(h))


class T5EncoderLike(nn.Module):
    """A T5 v1.1-style text encoder on token embeddings: a relative position
    bias (32 bidirectional buckets up to distance 128, a learned value per
    bucket and head) computed once from the positions and added to every
    layer's scores, RMS norms, gated-GELU feed-forwards, a final RMS norm."""

    def __init__(self, d=384, heads=6, ff=1024, layers=4):
        super().__init__()
        self.rel_bias = nn.Embedding(32, heads)
        self.layers = nn.ModuleList([T5Layer(d, heads, ff) for _ in range(layers)])
        self.ln = RmsNorm(d)

    def forward(self, x):
        bias = self.rel_bias(t5_buckets(x.shape[1])).permute(2, 0, 1)[None]
        for layer in self.layers:
            x = layer(x, bias)
        return self.ln(x)


def group_norm(c):
    return nn.GroupNorm(32, c, eps=1e-6)


class SdResBlock(nn.Module):
    """Stable Diffusion's U-Net residual block: group norm, SiLU, 3x3
    convolution, twice, and the input (through a 1x1 convolution where the
    channels change) added back. (No timestep embedding.)"""

    def __init__(self, cin, cout):
        super().__init__()
        self.body = nn.Sequential(group_norm(cin), nn.SiLU(), nn.Conv2d(cin, cout, 3, padding=1), group_norm(cout),
                                  nn.SiLU(), nn.Conv2d(cout, cout, 3, padding=1))
        self.skip = nn.Identity() if cin == cout else nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        return self.skip(x) + self.body(x)


class SpatialTransformer(nn.Module):
    """Stable Diffusion's spatial transformer: group norm, 1x1 projection
    in, the pixels as tokens through self-attention, cross-attention to the
    text context and a GEGLU feed-forward (each pre-norm with a residual),
    1x1 projection out, and the input added back."""

    def __init__(self, c, heads, context_dim):
        super().__init__()
        self.norm, self.proj_in, self.proj_out = group_norm(c), nn.Conv2d(c, c, 1), nn.Conv2d(c, c, 1)
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(c), nn.LayerNorm(c), nn.LayerNorm(c)
        self.attn1 = Attention(c, heads, qkv_bias=False)
        self.attn2 = Attention(c, heads, kv_dim=context_dim, qkv_bias=False)
        self.geglu, self.ff_out = nn.Linear(c, 8 * c), nn.Linear(4 * c, c)

    def forward(self, x, context):
        b, c, h, w = x.shape
        t = self.proj_in(self.norm(x)).flatten(2).transpose(1, 2)
        t = t + self.attn1(self.ln1(t))
        t = t + self.attn2(self.ln2(t), context)
        a, gate = self.geglu(self.ln3(t)).chunk(2, dim=-1)
        t = t + self.ff_out(a * F.gelu(gate))
        return x + self.proj_out(t.transpose(1, 2).reshape(b, c, h, w))


class UNetCrossAttn(nn.Module):
    """A Stable Diffusion-style denoising U-Net on a latent (4 channels),
    conditioned on a text context (77 tokens) by cross-attention: residual
    blocks and spatial transformers at 128 channels (32x32) and 256 (16x16,
    after a stride-2 convolution), a middle block, then nearest x2
    upsampling and a convolution, the skip concatenated, and a group norm,
    SiLU and 3x3 convolution to 4 channels."""

    def __init__(self, c=(128, 256), context_dim=256, head_dim=32):
        super().__init__()
        self.conv_in = nn.Conv2d(4, c[0], 3, padding=1)
        self.res0, self.attn0 = SdResBlock(c[0], c[0]), SpatialTransformer(c[0], c[0] // head_dim, context_dim)
        self.down = nn.Conv2d(c[0], c[0], 3, 2, 1)
        self.res1, self.attn1 = SdResBlock(c[0], c[1]), SpatialTransformer(c[1], c[1] // head_dim, context_dim)
        self.mid = SdResBlock(c[1], c[1])
        self.up = nn.Conv2d(c[1], c[1], 3, padding=1)
        self.res_up = SdResBlock(c[1] + c[0], c[0])
        self.attn_up = SpatialTransformer(c[0], c[0] // head_dim, context_dim)
        self.out = nn.Sequential(group_norm(c[0]), nn.SiLU(), nn.Conv2d(c[0], 4, 3, padding=1))

    def forward(self, x, context):
        skip = self.attn0(self.res0(self.conv_in(x)), context)
        h = self.mid(self.attn1(self.res1(self.down(skip)), context))
        h = self.up(F.interpolate(h, scale_factor=2, mode="nearest"))
        return self.out(self.attn_up(self.res_up(torch.cat([h, skip], 1)), context))
