#!/usr/bin/python3
"""One-stage detectors against ONNX Runtime: torchvision's RetinaNet and
FCOS (ResNet-50 FPN, 320x320, 91 classes, opset 17; random weights spread so
that scores differ), whose graphs run TopK over the anchors' scores, NonZero
and NonMaxSuppression between programs. Each round runs `xonnx bench` and
ONNX Runtime (bench/ort_bench.js) back to back with the same threads; the
table gives the median over rounds of each engine's median latency and the
ratio xonnx / ONNX Runtime.

    bench/detectors.py [--models retinanet_resnet50_fpn,fcos_resnet50_fpn]
                       [--rounds 3] [--iterations 10] [--threads 2] [--work DIR]
"""
import argparse
import os
import statistics
import sys

from ops import run_json  # bench/ops.py: one engine's median latency from its JSON line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZE = 320


def export(arch, path):
    if os.path.exists(path):
        return
    import torch
    import torchvision

    torch.manual_seed(0)
    m = getattr(torchvision.models.detection, arch)(weights=None, weights_backbone=None, num_classes=91,
                                                    min_size=SIZE, max_size=SIZE).eval()
    for mod in m.modules():
        if isinstance(mod, (torch.nn.Conv2d, torch.nn.Linear)):
            torch.nn.init.normal_(mod.weight, 0, 0.05)
            if mod.bias is not None:
                torch.nn.init.normal_(mod.bias, 0, 0.1)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.onnx.export(m, ([torch.rand(3, SIZE, SIZE)],), path + ".part", opset_version=17, input_names=["image"])
    os.replace(path + ".part", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="retinanet_resnet50_fpn,fcos_resnet50_fpn")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench_models"))
    args = ap.parse_args()
    xonnx = os.environ.get("XONNX", os.path.join(ROOT, "build", "bin", "xonnx"))
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    shape = f"image=3x{SIZE}x{SIZE}"
    print(f"{'model':<26} {'xonnx ms':>10} {'ORT ms':>10} {'ratio':>7}")
    for arch in args.models.split(","):
        path = os.path.join(args.work, f"{arch}_{SIZE}.onnx")
        export(arch, path)
        xs, os_ = [], []
        for _ in range(args.rounds):
            xs.append(run_json([xonnx, "bench", path, "--shape", shape, "--json", "--no-cache", "--iterations",
                                      str(args.iterations)], env))
            os_.append(run_json(["node", os.path.join(ROOT, "bench", "ort_bench.js"), path, shape, "--threads",
                                       str(args.threads), "--iterations", str(args.iterations)]))
        x, o = statistics.median(xs), statistics.median(os_)
        print(f"{arch:<26} {x:10.1f} {o:10.1f} {x / o:7.2f}", flush=True)
    print(f"({args.rounds} rounds x {args.iterations} iterations, {args.threads} threads, {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
