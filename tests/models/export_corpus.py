#!/usr/bin/python3
"""Exports the benchmark corpus (bench/corpus.py: detection, segmentation,
video, speech, text encoders and decoders, ...) as test models with torch
references: OUT/<name>_op<opset>/model.onnx (dynamic batch) and
test_data_set_b<batch>/{input_<k>.pb, output_0.pb} at each batch size, the
references computed by torch on the same inputs. Models already exported
are kept; the exports run in parallel processes.

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


def export(name, opset, out_dir, batches):
    folder = os.path.join(out_dir, f"{name}_op{opset}")
    done = os.path.join(folder, "test_data_set_b%d" % batches[-1], "output_0.pb")
    if os.path.exists(done):
        return f"kept {folder}"
    torch.set_num_threads(1)
    c = corpus()
    c.export(name, opset, out_dir)  # the model, as the benchmarks use it
    family, make, shapes = c.MODELS[name]
    torch.manual_seed(0)  # the same weights as the export
    model = make().eval()
    for batch in batches:
        xs = inputs_for(name, shapes, batch)
        with torch.no_grad():
            y = model(*xs)
        data = os.path.join(folder, f"test_data_set_b{batch}")
        os.makedirs(data, exist_ok=True)
        for k, (n, x) in enumerate(zip(shapes, xs)):
            save(x.numpy(), os.path.join(data, f"input_{k}.pb"), n)
        save(y.numpy(), os.path.join(data, "output_0.pb"), "output")
    return f"references for {folder} at batch {batches}"


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
    work = [(n, int(o)) for n in names for o in a.opsets.split(",")]
    failed = 0
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
