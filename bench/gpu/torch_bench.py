#!/usr/bin/env python3
"""PyTorch timing of the benchmark models, printed as JSON objects like
`xonnx bench --json`: the peer for xonnx on a GPU.

usage: torch_bench.py --model resnet50|transformer_encoder --batch 1,8,64
                      [--dtype f32|f16|bf16] [--iterations 50] [--warmup 10]
                      [--tf32] [--modes eager,graphs,compile]
                      [--compile-mode default]

One JSON object per mode and batch size, one per line, from one process
(the model is built and moved to the GPU once). The modes:
  eager     the module as it is;
  graphs    the eager module captured once per batch size in a CUDA graph
            and replayed (static input and output buffers on the device; the
            host input is copied into the static input at each call);
  compile   torch.compile(mode=--compile-mode, dynamic=False): one compiled
            program per batch size (its compile time is reported, not timed).

The models are the ones tests/models/export_models.py exports (torchvision's
ResNet-50, or the same bottleneck network defined here when torchvision is
missing; the 4-layer Transformer encoder, d=256, seq 64), with random
weights: the time does not depend on their values. PyTorch runs eagerly
under inference_mode, with cudnn.benchmark on and ResNet-50 in channels-last
layout, its fast settings for 16-bit convolutions. float32 products are
exact float32 (PyTorch's default for matrix products; its convolutions
would otherwise use TF32) unless --tf32 allows TF32 for both, as xonnx's
--allow-tf32 does. Two latencies are
reported, medians over the iterations:
  latency_ms          input from host memory to output in host memory (what
                      `xonnx bench` measures: it uploads the input and reads
                      the output back at every call),
  device_latency_ms   input already on the device, output left there.
"""
import argparse
import json
import os
import sys
import time

import torch

# The exported test models' definitions, so that both engines run the same.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "models"))
from export_models import Encoder  # noqa: E402


class Bottleneck(torch.nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        nn = torch.nn
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return torch.relu(self.body(x) + (self.down(x) if self.down is not None else x))


def resnet50():
    try:
        import torchvision
        return torchvision.models.resnet50(weights=None)
    except ImportError:
        pass
    nn = torch.nn
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000)]
    return nn.Sequential(*layers)


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True, choices=["resnet50", "transformer_encoder"])
    p.add_argument("--batch", default="1", help="batch sizes, comma-separated")
    p.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--tf32", action="store_true", help="allow TF32 in float32 matrix products and convolutions")
    p.add_argument("--modes", default="eager", help="comma list of eager, graphs, compile")
    p.add_argument("--compile-mode", default="default", help="torch.compile's mode for --modes compile")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[a.dtype]
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    if a.model == "resnet50":
        model, layout = resnet50(), torch.channels_last
    else:
        model, layout = Encoder(), torch.contiguous_format
    model = model.eval().to(device=device, dtype=dtype, memory_format=layout)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    def timed(fn):
        for _ in range(a.warmup):
            fn()
        sync()
        ms = []
        for _ in range(a.iterations):
            t = time.perf_counter()
            fn()
            sync()
            ms.append((time.perf_counter() - t) * 1e3)
        return ms

    def graphed(batch, shape):
        """A CUDA graph of the module on a static input: (run, static input)."""
        static_in = torch.zeros(*shape, dtype=dtype, device=device).contiguous(memory_format=layout)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # cudnn.benchmark picks its kernels before the capture
                model(static_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = model(static_in)
        return (lambda: (graph.replay(), static_out)[1]), static_in

    compiled = {}
    for mode in a.modes.split(","):
        for batch in (int(b) for b in a.batch.split(",")):
            shape = (batch, 3, 224, 224) if a.model == "resnet50" else (batch, 64, 256)
            host = torch.randn(*shape).to(dtype)
            extra = {}
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            with torch.inference_mode() if mode != "compile" else torch.no_grad():
                on_device = host.to(device).contiguous(memory_format=layout)
                if mode == "eager":
                    run = model
                    from_host = timed(lambda: model(host.to(device).contiguous(memory_format=layout)).cpu())
                    device_only = timed(lambda: model(on_device))
                elif mode == "graphs":
                    replay, static_in = graphed(batch, shape)
                    from_host = timed(lambda: (static_in.copy_(host), replay())[1].cpu())
                    static_in.copy_(on_device)
                    device_only = timed(replay)
                elif mode == "compile":
                    if "fn" not in compiled:
                        compiled["fn"] = torch.compile(model, mode=a.compile_mode, dynamic=False)
                    run = compiled["fn"]
                    t = time.perf_counter()
                    run(on_device)
                    sync()
                    extra["compile_s"] = time.perf_counter() - t
                    from_host = timed(lambda: run(host.to(device).contiguous(memory_format=layout)).cpu())
                    device_only = timed(lambda: run(on_device))
                else:
                    sys.exit(f"unknown mode {mode}")
            engine = f"pytorch {torch.__version__} {mode}" + (f" ({a.compile_mode})" if mode == "compile" else "")
            print(json.dumps({
                "engine": engine, "mode": mode,
                "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                "model": a.model, "batch": batch, "dtype": a.dtype, "tf32": a.tf32, "iterations": a.iterations,
                "latency_ms": {"min": min(from_host), "median": median(from_host)},
                "device_latency_ms": {"min": min(device_only), "median": median(device_only)},
                "peak_device_mb": torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else 0,
                **extra}), flush=True)


if __name__ == "__main__":
    main()
