#!/usr/bin/python3
"""Checks torchvision's two-stage detectors against ONNX Runtime.

Faster R-CNN (MobileNetV3-Large 320 FPN) and Mask R-CNN (ResNet-50 FPN)
are exported at opset 17 with weights spread so that scores differ (fresh
random weights give every box the same score), with a score threshold of 0
(a hundred detections) and of 0.99 (none: the empty-result paths). Their
RoI heads branch on shapes (If nodes whose branches give [N] and [N, 1])
and their post-processing is data dependent (NonZero, NonMaxSuppression),
which xonnx runs on the host. The detections are compared as sets: boxes
of equal scores may come in either order.

usage: check_detectors.py OUT_DIR [--build BUILD] [--models a,b]

Prints a line per model and, last, 'detectors: N passed, M failed'.
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "difftest"))

MODELS = {
    "fasterrcnn_mobilenet_v3_large_320_fpn": ("fasterrcnn_mobilenet_v3_large_320_fpn", 0.0, 320),
    "fasterrcnn_mobilenet_v3_large_320_fpn_none": ("fasterrcnn_mobilenet_v3_large_320_fpn", 0.99, 320),
    "maskrcnn_resnet50_fpn": ("maskrcnn_resnet50_fpn", 0.0, 320),
}


def export(name, arch, threshold, size, out_dir):
    path = os.path.join(out_dir, name + ".onnx")
    if os.path.isfile(path):
        return path
    import torch
    import torchvision
    torch.manual_seed(0)
    m = getattr(torchvision.models.detection, arch)(weights=None, weights_backbone=None, num_classes=91,
                                                    box_score_thresh=threshold).eval()
    for mod in m.modules():
        if isinstance(mod, (torch.nn.Conv2d, torch.nn.Linear)):
            torch.nn.init.normal_(mod.weight, 0, 0.05)
            if mod.bias is not None:
                torch.nn.init.normal_(mod.bias, 0, 0.1)
    image = torch.rand(3, size, size)
    os.makedirs(out_dir, exist_ok=True)
    torch.onnx.export(m, ([image],), path + ".part", opset_version=17, input_names=["image"])
    os.replace(path + ".part", path)
    return path


def as_sets(outputs):
    """The detections sorted by score, label and box, so that ties in score
    compare in one order; masks follow their boxes."""
    boxes, labels, scores = outputs[:3]
    if len(scores) == 0:
        return outputs
    order = np.lexsort(tuple(np.round(boxes[:, k], 2) for k in reversed(range(4))) + (labels, -np.round(scores, 5)))
    return [o[order] for o in outputs]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--build", default=os.environ.get("XONNX_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--models", default="")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    import difftest
    import onnx
    import xonnx
    ort = difftest.Ort()
    wanted = set(filter(None, args.models.split(",")))
    passed = failed = 0
    for name, (arch, threshold, size) in MODELS.items():
        if wanted and name not in wanted:
            continue
        t0 = time.monotonic()
        try:
            path = export(name, arch, threshold, size, args.out_dir)
            model = onnx.load(path)
            feeds = {"image": np.random.default_rng(0).random((3, size, size), dtype=np.float32)}
            want = as_sets(ort.run(model, feeds))
            got = as_sets(difftest.Xonnx(xonnx).run(model, feeds))
            problems = []
            for o, a, b in zip(model.graph.output, got, want):
                err, text = difftest.rel_error(a, b)
                if err > args.tolerance:
                    problems.append(f"'{o.name}': {text}")
            result = "; ".join(problems) or f"{len(want[2])} detections agree"
            ok = not problems
        except Exception as e:  # noqa: BLE001 (any failure is this model's)
            ok, result = False, str(e).strip().splitlines()[0]
        passed += ok
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}: {result} ({time.monotonic() - t0:.1f} s)", flush=True)
    ort.close()
    print(f"detectors: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
