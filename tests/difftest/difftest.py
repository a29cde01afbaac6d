#!/usr/bin/python3
"""Differential testing of xonnx's compiled programs.

Generates random valid ONNX graphs (graphgen.py), runs each on xonnx's CPU
plugin as users run it (every pass, layout, fusion, buffer assignment,
in-place and concurrency decision) and on the reference device (the same
plugin running every instruction on the reference evaluator, with no
optimization on either side of the PjRT boundary), and, with --ort, on ONNX
Runtime too. Every disagreement, and every error on a graph that ONNX's
checker accepts, is a finding: it is shrunk to a minimal graph (nodes
bypassed or cut into inputs, outputs dropped, while the finding persists)
and saved under --findings with its inputs and a report.

usage: difftest.py [--seed S] [--budget SECONDS] [--count N] [--ort]
                   [--findings DIR] [--max-nodes N] [--verbose]

Exits 1 when there is a finding, 0 otherwise; the last line counts the
graphs generated, compared and found wrong.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import graphgen  # noqa: E402
import regressions  # noqa: E402
from shrink import shrink  # noqa: E402

# Relative L2 error two correct f32 engines stay under on these graphs.
TOLERANCE = 1e-3


def load_xonnx(build):
    sys.path.insert(0, os.path.join(build, "python"))
    import xonnx
    return xonnx


class Xonnx:
    """xonnx's CPU plugin: as users run it, as the reference device, or
    with every value in memory of its own (`distinct`)."""

    def __init__(self, xonnx, reference=False, distinct=False):
        self.x, self.reference, self.distinct = xonnx, reference, distinct
        self.name = "reference" if reference else "distinct buffers" if distinct else "xonnx"

    def run(self, model, feeds):
        o = self.x.SessionOptions()
        o.use_cache = False
        if self.reference:
            o.optimize = False
            o.add_create_option("reference=true")
            o.add_create_option("optimize=false")
        if self.distinct:
            o.add_create_option("distinct_buffers=true")
        s = self.x.InferenceSession(model.SerializeToString(), o)
        return s.run(None, feeds)


class Ort:
    """ONNX Runtime through one Node.js process (ort_server.js)."""
    name = "onnxruntime"

    def __init__(self):
        modules = os.path.join(ROOT, "bench", "node_modules")
        if not os.path.isdir(os.path.join(modules, "onnxruntime-node")):
            raise RuntimeError("ONNX Runtime is not installed (scripts/install_deps.sh --bench)")
        self.env = dict(os.environ, NODE_PATH=modules)
        self.crashes = 0
        self.start()
        self.tmp = tempfile.TemporaryDirectory()

    def start(self):
        self.proc = subprocess.Popen(["node", os.path.join(HERE, "ort_server.js")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=self.env)

    def run(self, model, feeds):
        # A graph that crashes ONNX Runtime's process is one it refuses; the
        # next graph gets a new process, so the rest of the run is still
        # compared against it.
        if self.proc.poll() is not None:
            self.start()
        try:
            return self.exchange(model, feeds)
        except (BrokenPipeError, json.JSONDecodeError):
            self.proc.kill()
            self.proc.wait()
            self.crashes += 1
            ops = sorted({n.op_type for n in model.graph.node})
            print(f"difftest: ONNX Runtime's process exited (code {self.proc.returncode}) on a graph of "
                  f"{', '.join(ops)}", file=sys.stderr)
            raise RuntimeError(f"ONNX Runtime's process exited (code {self.proc.returncode})") from None

    def exchange(self, model, feeds):
        d = self.tmp.name
        path = os.path.join(d, "model.onnx")
        onnx.save(model, path)
        inputs = []
        for k, (n, v) in enumerate(feeds.items()):
            f = os.path.join(d, f"in{k}.raw")
            v.tofile(f)
            inputs.append({"name": n, "type": str(v.dtype), "dims": list(v.shape), "file": f})
        self.proc.stdin.write(json.dumps({"model": path, "inputs": inputs, "out": os.path.join(d, "out")}) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        if "error" in answer:
            raise RuntimeError(answer["error"])
        dtypes = {"float32": np.float32, "float16": np.float16, "float64": np.float64, "int64": np.int64,
                  "bool": np.bool_, "int32": np.int32, "int8": np.int8, "uint8": np.uint8}
        return [np.fromfile(o["file"], dtypes[o["type"]]).reshape(o["dims"]) for o in answer["outputs"]]

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def rel_error(got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf"), f"shape {list(got.shape)} vs {list(want.shape)}"
    if got.dtype.kind in "iub" or want.dtype.kind in "iub":
        bad = int(np.count_nonzero(got != want))
        return (0.0 if bad == 0 else float("inf")), f"{bad} of {got.size} elements differ"
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)):
        return float("inf"), "NaN in different places"
    g, w = np.nan_to_num(g), np.nan_to_num(w)
    err = np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-6 * np.sqrt(max(w.size, 1)))
    return float(err), f"relative L2 {err:.3g}, max |diff| {np.max(np.abs(g - w), initial=0):.3g}"


def _graph_to_float64(g, keep):
    """Float32 tensors of `g` (and its subgraphs) become float64: weights,
    Constant and ConstantOfShape values, Casts to float, declared types.
    The names in `keep` (Resize's scales and roi) stay float32."""
    keep |= {n.input[k] for n in g.node if n.op_type == "Resize" for k in (1, 2) if len(n.input) > k}
    F, D = onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE

    def wide(t):
        return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name)
    inits = [wide(t) if t.data_type == F and t.name not in keep else t for t in g.initializer]
    del g.initializer[:]
    g.initializer.extend(inits)
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == F and not (set(n.output) & keep):
                a.t.CopyFrom(wide(a.t))
            elif a.name == "to" and n.op_type == "Cast" and a.i == F:
                a.i = D
            elif a.type == onnx.AttributeProto.GRAPH:
                _graph_to_float64(a.g, keep)
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == F and vi.name not in keep:
            vi.type.tensor_type.elem_type = D


def to_float64(model, feeds):
    """The model computing in float64 (see _graph_to_float64), and its
    inputs."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    _graph_to_float64(m.graph, set())
    return m, {k: (v.astype(np.float64) if v.dtype == np.float32 else v) for k, v in feeds.items()}


def beyond_rounding(reference, model, feeds, got, wants, name):
    """Whether xonnx's `got` differs from the other engines' results
    `wants` (the f32 reference's among them) by more than rounding: its
    distance from the float64 result must stay within 10x theirs (a sum that
    cancels, a normalization of nearly constant values, are ill-conditioned
    in any f32 engine; the f32 reference evaluator is the yardstick of plain
    f32 arithmetic even where another engine accumulates in float64)."""
    try:
        m64, f64 = to_float64(model, feeds)
        names = [o.name for o in model.graph.output]
        exact = reference.run(m64, f64)[names.index(name)]
    except Exception:  # noqa: BLE001 (no float64 reference: judge on the f32 one)
        return True
    err_x, _ = rel_error(got, exact)
    err_r = max(rel_error(w, exact)[0] for w in wants)
    if np.asarray(got).dtype.kind == "f":
        # Differences in the last bits of values near zero (a sum that
        # cancels) are rounding whatever their relative size.
        diff = np.abs(np.asarray(got, np.float64) - exact)
        if np.nanmax(diff, initial=0) <= 1e-5 * (1 + np.nanmax(np.abs(exact), initial=0)):
            return False
    return err_x > max(10 * err_r, TOLERANCE / 10)


def classify(engines, model, feeds):
    """('ok', text) or a finding's kind and its description."""
    results = []
    for e in engines:
        try:
            results.append(e.run(model, feeds))
        except Exception as ex:  # noqa: BLE001 (any engine error is a finding)
            results.append(ex)
    first, *others = results
    if isinstance(first, Exception):
        peers = [r for r in others if not isinstance(r, Exception)]
        if peers:
            return "error", f"{engines[0].name} fails where {len(peers)} other engine(s) run: {first}"
        return "ok", f"every engine refuses: {first}"
    names = [o.name for o in model.graph.output]
    for e, r in zip(engines[1:], others):
        if isinstance(r, Exception):
            if e.name == "reference":
                return "reference-error", f"the reference evaluator fails: {r}"
            continue  # ONNX Runtime refusing a graph xonnx runs is not ours to fix
        if len(r) != len(first):
            return f"mismatch-{e.name}", f"{len(first)} outputs vs {len(r)}"
        for k, (n, a, b) in enumerate(zip(names, first, r)):
            err, text = rel_error(a, b)
            if np.shape(a) != np.shape(b):
                # No rounding changes a shape: a count that depends on the
                # values (NonZero, NonMaxSuppression) is wrong, and the
                # float64 yardstick below runs xonnx's own host code.
                return f"mismatch-{e.name}", f"output '{n}': xonnx vs {e.name}: {text}"
            wants = [b] + [o[k] for o in others if not isinstance(o, Exception) and len(o) > k]
            if err > TOLERANCE and beyond_rounding(engines[1], model, feeds, a, wants, n):
                return f"mismatch-{e.name}", f"output '{n}': xonnx vs {e.name}: {text}"
    return "ok", ""


def check_generated(model):
    """The generator's shapes must be ONNX's: a graph the checker refuses,
    or whose inferred output shapes differ, is the generator's bug."""
    onnx.checker.check_model(model)
    inferred = shape_inference.infer_shapes(model, strict_mode=True)
    declared = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in model.graph.output}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        if vi.name in declared:
            got = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            if got and got != declared[vi.name]:
                raise ValueError(f"generator shape of {vi.name}: {declared[vi.name]}, ONNX infers {got}")


def save_finding(folder, model, feeds, kind, text, seed, original_nodes):
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    np.savez(os.path.join(folder, "inputs.npz"), **feeds)
    with open(os.path.join(folder, "report.txt"), "w") as f:
        f.write(f"seed {seed}: {kind}: {text}\n")
        f.write(f"shrunk from {original_nodes} nodes to {len(model.graph.node)}\n\n")
        f.write(helper.printable_graph(model.graph) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seed", type=int, default=1, help="first graph's seed; graph k uses seed+k")
    ap.add_argument("--budget", type=float, default=0, help="stop after this many seconds (0: no limit)")
    ap.add_argument("--count", type=int, default=0, help="stop after this many graphs (0: no limit)")
    ap.add_argument("--ort", action="store_true", help="also compare with ONNX Runtime (bench/node_modules)")
    ap.add_argument("--findings", default="difftest_findings", help="folder for shrunk findings")
    ap.add_argument("--max-nodes", type=int, default=0, help="nodes per graph (default: 4 to 28 at random)")
    ap.add_argument("--build", default=os.environ.get("XONNX_BUILD_DIR", os.path.join(ROOT, "build")),
                    help="the build folder whose Python package is tested")
    ap.add_argument("--no-shrink", action="store_true", help="save findings as generated")
    ap.add_argument("--verbose", action="store_true", help="a line per graph")
    ap.add_argument("--favor", default="", help="templates drawn 20 times as often, comma-separated (e.g. detect,scatter)")
    args = ap.parse_args()
    favor = set(filter(None, args.favor.split(",")))
    unknown = favor - {t.__name__ for t, _ in graphgen.GraphGen.TEMPLATES}
    if unknown:
        ap.error(f"--favor: no template named {', '.join(sorted(unknown))}")
    graphgen.GraphGen.TEMPLATES = [(t, w * 20 if t.__name__ in favor else w) for t, w in graphgen.GraphGen.TEMPLATES]
    if not args.budget and not args.count:
        ap.error("give --budget or --count: the search must end by itself")

    x = load_xonnx(args.build)
    engines = [Xonnx(x), Xonnx(x, reference=True)]
    distinct = Xonnx(x, distinct=True)
    if args.ort:
        engines.append(Ort())
    start = time.monotonic()
    counts = {"graphs": 0, "nodes": 0, "compared": 0, "refused by all": 0, "generator": 0}
    findings = []
    # Past findings first: each must agree, and agree with distinct buffers.
    for case in regressions.CASES:
        model, feeds = case()
        for judged in (engines, [distinct] + engines[1:]):
            kind, text = classify(judged, model, feeds)
            if kind != "ok" or text:
                print(f"regression {case.__name__} ({judged[0].name}): {kind}: {text}", file=sys.stderr)
                findings.append((case.__name__, kind))
    print(f"difftest: {len(regressions.CASES)} regression cases, {len(findings)} failing", file=sys.stderr)
    k = 0
    while True:
        if args.count and k >= args.count:
            break
        if args.budget and time.monotonic() - start > args.budget:
            break
        seed = args.seed + k
        k += 1
        gen = graphgen.GraphGen(np.random.default_rng(seed), args.max_nodes or None)
        model, feeds = gen.build()
        counts["graphs"] += 1
        counts["nodes"] += len(model.graph.node)
        try:
            check_generated(model)
        except Exception as ex:  # noqa: BLE001
            counts["generator"] += 1
            print(f"seed {seed}: generator error: {ex}", file=sys.stderr)
            continue
        kind, text = classify(engines, model, feeds)
        if args.verbose:
            print(f"seed {seed}: {len(model.graph.node)} nodes: {kind} {text}", file=sys.stderr)
        if kind == "ok":
            counts["compared" if not text else "refused by all"] += 1
            continue
        print(f"seed {seed}: FINDING {kind}: {text}", file=sys.stderr)
        n0 = len(model.graph.node)
        if not args.no_shrink:
            try:
                model, feeds, text = shrink(model, feeds, kind, lambda m, f: classify(engines, m, f),
                                            np.random.default_rng(seed))
            except Exception:  # noqa: BLE001 (keep the unshrunk finding)
                traceback.print_exc()
        if kind.startswith("mismatch"):
            # Which class: with every value in memory of its own, does the
            # program agree?
            k2, _ = classify([distinct] + engines[1:], model, feeds)
            text += ("; with distinct buffers it agrees: a buffer-lifetime bug" if k2 == "ok" else
                     "; with distinct buffers it differs too: a kernel or rewrite bug")
        folder = os.path.join(args.findings, f"seed{seed}")
        save_finding(folder, model, feeds, kind, text, seed, n0)
        print(f"seed {seed}: shrunk to {len(model.graph.node)} nodes: {text}; saved in {folder}", file=sys.stderr)
        findings.append((seed, kind))
    crashes = 0
    if args.ort:
        engines[2].close()
        crashes = engines[2].crashes
    elapsed = time.monotonic() - start
    by_kind = {}
    for _, kind in findings:
        by_kind[kind] = by_kind.get(kind, 0) + 1
    print(f"difftest: {counts['graphs']} graphs ({counts['nodes']} nodes) in {elapsed:.0f} s from seed {args.seed}; "
          f"{counts['compared']} agreed, {counts['refused by all']} refused by every engine, "
          f"{counts['generator']} generator errors, {len(findings)} findings {by_kind or ''}"
          + (f" (ONNX Runtime's process crashed on {crashes} graphs, each counted as refused by it)" if crashes else ""))
    return 1 if findings or counts["generator"] else 0


if __name__ == "__main__":
    sys.exit(main())
