#!/usr/bin/python3
"""Exports the benchmark corpus's architectures (bench/corpus.py: detection,
segmentation, video, speech, text encoders and decoders, ...) as test models
with torch references: OUT/<name>_op<opset>/model.onnx (dynamic batch) and
test_data_set_b<batch>/{input_<k>.pb, output_<k>.pb} at each batch size,
the references computed by torch on the same inputs. The random weights'
BatchNorm statistics are calibrated on random inputs first, and each model
must give different outputs for different inputs (else a comparison could
not fail). Models already exported are kept; the exports run in parallel
processes.

usage: export_corpus.py OUT_DIR [--models a,b,...] [--opsets 13,17] [--batches 1,2] [--jobs N]
"""
import argparse
import concurrent.futures
import importlib.util
import os
import sys
import warnings

import numpy as np
import torch
from onnx import numpy_helper

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
# Models torch cannot export below an opset (GPT's causal mask uses triu,
# which ONNX has from opset 14): asked for less, they are exported at this.
MIN_OPSET = {"gpt_like": 14}


def corpus():
    spec = importlib.util.spec_from_file_location("corpus", os.path.join(HERE, "..", "..", "bench", "corpus.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def save(array, path, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(array), name).SerializeToString())


def inputs_for(name, shapes, batch):
    gen = torch.Generator().manual_seed(1000 + batch)
    out = []
    for k, (n, shape) in enumerate(shapes.items()):
        if n == "mask":  # a padding mask: the last positions of some rows are padding
            mask = torch.ones(batch, *shape)
            for row in range(batch):
                mask[row, shape[0] - 7 * row - 5:] = 0
            out.append(mask)
        else:
            out.append(torch.randn(batch, *shape, generator=gen))
    return out


def calibrate(model, shapes):
    """Sets every BatchNorm's running statistics to those of random inputs.
    With random weights, a deep net's activations otherwise shrink layer by
    layer until its output is its last bias whatever the input, and a
    comparison could not catch a wrong kernel."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average over the calibration batches
        m.train()
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for _ in range(4):
            model(*(torch.randn(4, *shape, generator=gen) for shape in shapes.values()))
    model.eval()


def outputs_of(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def export(name, opset, out_dir, batches):
    folder = os.path.join(out_dir, f"{name}_op{opset}")
    done = os.path.join(folder, "test_data_set_b%d" % batches[-1], "input_0.pb")
    if os.path.exists(os.path.join(folder, "model.onnx")) and os.path.exists(done):
        return f"kept {folder}"
    torch.set_num_threads(1)
    family, make, shapes = corpus().MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    calibrate(model, shapes)
    os.makedirs(folder, exist_ok=True)
    names = list(shapes)
    example = tuple(torch.rand(1, *shape) for shape in shapes.values())
    with torch.no_grad():
        n_out = len(outputs_of(model(*example)))
        out_names = [f"output_{k}" for k in range(n_out)]
        axes = {n: {0: "batch"} for n in names + out_names}
        path = os.path.join(folder, "model.onnx")
        torch.onnx.export(model, example, path + ".tmp", opset_version=opset, input_names=names,
                          output_names=out_names, dynamic_axes=axes, do_constant_folding=True)
    os.replace(path + ".tmp", path)
    for batch in batches:
        xs = inputs_for(name, shapes, batch)
        with torch.no_grad():
            ys = [y.numpy() for y in outputs_of(model(*xs))]
        if batch > 1:
            # Different inputs must give different outputs, or the
            # comparison proves nothing.
            for k, y in enumerate(ys):
                spread = np.linalg.norm(y[1] - y[0]) / max(np.linalg.norm(y[0]), 1e-30)
                if spread < 1e-3:
                    raise RuntimeError(f"{name}: output {k} hardly depends on the input (rows differ by {spread:.1e})")
        data = os.path.join(folder, f"test_data_set_b{batch}")
        os.makedirs(data, exist_ok=True)
        for k, (n, x) in enumerate(zip(names, xs)):
            save(x.numpy(), os.path.join(data, f"input_{k}.pb"), n)
        for k, y in enumerate(ys):
            save(y, os.path.join(data, f"output_{k}.pb"), out_names[k])
    return f"exported {folder} ({family}) with references at batch {batches}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--models", default="")
    p.add_argument("--opsets", default="13,17")
    p.add_argument("--batches", default="1,2")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = p.parse_args()
    names = a.models.split(",") if a.models else list(corpus().MODELS)
    batches = [int(b) for b in a.batches.split(",")]
    work = sorted({(n, max(int(o), MIN_OPSET.get(n, 0))) for n in names for o in a.opsets.split(",")})
    failed = 0
    if a.jobs <= 1:  # in this process (check_corpus.py runs one model per call)
        for n, o in work:
            try:
                print(export(n, o, a.out_dir, batches), file=sys.stderr)
            except Exception as e:
                failed += 1
                print(f"FAILED ({n}, {o}): {e}", file=sys.stderr)
        sys.exit(1 if failed else 0)
    with concurrent.futures.ProcessPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(export, n, o, a.out_dir, batches): (n, o) for n, o in work}
        for f in concurrent.futures.as_completed(futures):
            try:
                print(f.result(), file=sys.stderr)
            except Exception as e:  # report every model, then fail
                failed += 1
                print(f"FAILED {futures[f]}: {e}", file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
