#!/usr/bin/env python3
"""Text generation speed: `xonnx generate`'s runtime (the Python API's
Generator) against ONNX Runtime (onnxruntime-node, bench/ort_generate.js)
generating greedily with the same Hugging Face-style decoder, its cache fed
back each step, and against the machine's memory bandwidth limit (the
weights' bytes per decode token over a copy bandwidth measured beside
each round; a round's share of the limit compares its decode with the
bandwidth of that moment, and the table gives the median of the rounds'
shares).

The model is tests/generate/tiny_llama.py's LLaMA-style decoder with random
weights, at the sizes --model names; with --weights int4 or int8 its
products by weights are quantized to MatMulNBits (tests/generate/nbits.py:
blocks of --block along K, symmetric as ONNX Runtime's quantizer writes
them, or with --zero-points a zero point per block; --accuracy-level 4 lets both engines round the activation to int8
per block, as onnxruntime-genai's CPU models do). Each round runs both engines, in alternating order; the table gives
medians over rounds: time to the first token (prefill) and decode tokens per
second (all sequences') at a batch of --batch prompts of one length. Both
engines' greedy tokens must agree.

usage: bench/generate.py [--model small|medium|large] [--weights fp32|int8|int4] [--block 32] [--zero-points]
                         [--accuracy-level 0|4]
                         [--prompt 128] [--batch 1] [--new 64] [--rounds 3] [--threads 2]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "generate"))
import nbits  # noqa: E402
import tiny_llama  # noqa: E402

MODELS = {
    "small": tiny_llama.Config(vocab=8192, hidden=512, heads=8, layers=8, ffn=1408),
    "medium": tiny_llama.Config(vocab=16384, hidden=1024, heads=16, layers=12, ffn=2816),
    # About 500M parameters: 2.0 GB in f32, just under protobuf's 2 GiB.
    "large": tiny_llama.Config(vocab=16000, hidden=1536, heads=24, layers=16, ffn=4096),
}


def copy_bandwidth():
    """Bytes per second a large copy moves (read + write counted once each)."""
    a = np.ones(1 << 27, np.float32)  # 512 MiB
    b = np.empty_like(a)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t)
    return 2 * a.nbytes / best


def stored_weight_bytes(path):
    """The bytes of the model's initializers as stored."""
    import onnx
    from onnx import numpy_helper
    return sum(numpy_helper.to_array(i).nbytes for i in onnx.load(path).graph.initializer)


def run_xonnx(path, prompts, n, threads):
    """In a process of its own: torch, loaded here to export the model, has
    an OpenMP runtime of its own whose threads would compete with xonnx's."""
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--xonnx-child", path, "--new", str(n),
                        "--threads", str(threads), "--prompt-ids", ";".join(",".join(map(str, p)) for p in prompts)],
                       capture_output=True, text=True, timeout=3600)
    if r.returncode:
        raise SystemExit("xonnx failed: " + r.stderr)
    return json.loads(r.stdout)


def xonnx_child(path, prompts, n, threads):
    import xonnx
    opts = xonnx.SessionOptions()
    opts.intra_op_num_threads = threads
    g = xonnx.Generator(path, opts)
    # Compiles the prefill and decode programs for the timed run's shapes:
    # the whole generation, since the cache widens (and a decode program
    # is compiled) wherever the timed run's would.
    g.generate(prompts, n)
    times = []
    start = time.perf_counter()
    tokens = g.generate(prompts, n, on_token=lambda s, t: times.append(time.perf_counter()))
    b = len(prompts)
    # The first b callbacks are the prefill's tokens; each later step gives b more.
    print(json.dumps({"tokens": tokens, "prefill_ms": (times[b - 1] - start) * 1000,
                      "decode_tokens_per_s": (len(times) - b) / (times[-1] - times[b - 1])}))


def run_ort(path, prompts, n, threads, c):
    env = dict(os.environ, NODE_PATH=os.path.join(ROOT, "bench", "node_modules"))
    args = [a for p in prompts for a in ("--prompt", ",".join(map(str, p)))]
    r = subprocess.run(["node", os.path.join(ROOT, "bench", "ort_generate.js"), path, *args, "--new", str(n),
                        "--threads", str(threads), "--heads", str(c.heads), "--dim", str(c.head_dim)],
                       capture_output=True, text=True, env=env, timeout=3600)
    if r.returncode:
        raise SystemExit("ort_generate.js failed: " + r.stderr)
    return json.loads(r.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="small", choices=sorted(MODELS))
    p.add_argument("--weights", default="fp32", choices=("fp32", "int8", "int4"))
    p.add_argument("--block", type=int, default=32)
    p.add_argument("--zero-points", action="store_true", help="asymmetric blocks with a zero point each")
    p.add_argument("--accuracy-level", type=int, choices=(0, 4), default=0,
                   help="MatMulNBits's accuracy_level: 4 allows int8 activations")
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--new", type=int, default=64)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--row", action="store_true", help="print one markdown table row (bench/generate.sh's table)")
    p.add_argument("--xonnx-child", help=argparse.SUPPRESS)
    p.add_argument("--prompt-ids", help=argparse.SUPPRESS)
    a = p.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    if a.xonnx_child:
        return xonnx_child(a.xonnx_child, [[int(x) for x in p.split(",")] for p in a.prompt_ids.split(";")], a.new,
                           a.threads)
    c = MODELS[a.model]
    model = tiny_llama.build(0, c)
    params = sum(t.numel() for t in model.parameters())
    work = tempfile.mkdtemp(prefix="xonnx_generate_")
    try:
        measure(a, c, model, params, os.path.join(work, "model.onnx"))
    finally:  # the large model is 2 GB
        shutil.rmtree(work, ignore_errors=True)


def measure(a, c, model, params, path):
    """Exports the model to `path`, runs both engines and prints the table."""
    tiny_llama.export(model, path)
    if a.weights != "fp32":
        import onnx
        m = onnx.load(path)
        nbits.rewrite(m, 4 if a.weights == "int4" else 8, a.block, a.zero_points, accuracy_level=a.accuracy_level)
        onnx.save(m, path)
    rng = np.random.default_rng(0)
    prompts = [[int(x) for x in rng.integers(0, c.vocab, a.prompt)] for _ in range(a.batch)]
    rows = {"xonnx": [], "ort": []}
    # The copy bandwidth is measured again beside each round: the machine's
    # load moves between rounds, and a round's share of the limit compares
    # its decode with the bandwidth of the same moment.
    bandwidths = []
    for r in range(a.rounds):
        order = ["xonnx", "ort"] if r % 2 == 0 else ["ort", "xonnx"]
        bandwidths.append(copy_bandwidth())
        for engine in order:
            out = run_xonnx(path, prompts, a.new, a.threads) if engine == "xonnx" else \
                run_ort(path, prompts, a.new, a.threads, c)
            rows[engine].append(out)
    same = sum(x == y for p, q in zip(rows["xonnx"][0]["tokens"], rows["ort"][0]["tokens"]) for x, y in zip(p, q))
    if a.accuracy_level == 4 and a.weights != "fp32":
        # Each engine rounds the activation its own way: report, not fail.
        print(f"greedy tokens equal in both engines: {same} of {a.batch * a.new}")
    elif rows["xonnx"][0]["tokens"] != rows["ort"][0]["tokens"]:
        raise SystemExit("the engines' greedy tokens differ:\n%s\n%s" % (rows["xonnx"][0]["tokens"],
                                                                          rows["ort"][0]["tokens"]))
    # A decode step reads every weight once for the whole batch (the
    # embedding table only by rows): packed bytes, scales and all.
    weight_bytes = stored_weight_bytes(path) - 4 * c.vocab * c.hidden
    limits = [a.batch * bw / weight_bytes for bw in bandwidths]
    limit = statistics.median(limits)
    med = lambda e, k: statistics.median(x[k] for x in rows[e])
    # Each round's decode over its own moment's limit, then the median.
    share = lambda e: statistics.median(x["decode_tokens_per_s"] / l for x, l in zip(rows[e], limits))
    print(f"model {a.model}: {params / 1e6:.1f}M parameters, {a.weights}, prompt {a.prompt}, {a.new} new tokens, batch {a.batch}, "
          f"{a.threads} threads; copy bandwidth {' '.join(f'{bw / 1e9:.1f}' for bw in bandwidths)} GB/s "
          f"-> limit {limit:.1f} tokens/s (median)")
    print(f"{'engine':8} {'prefill ms':>11} {'decode tok/s':>13} {'of limit':>9}")
    for e in ("xonnx", "ort"):
        d = med(e, "decode_tokens_per_s")
        print(f"{e:8} {med(e, 'prefill_ms'):11.1f} {d:13.1f} {share(e):9.0%}")
    x, o = med("xonnx", "decode_tokens_per_s"), med("ort", "decode_tokens_per_s")
    prefill = med('ort', 'prefill_ms') / med('xonnx', 'prefill_ms')
    print(f"decode xonnx / ort: {x / o:.2f}   prefill ort / xonnx: {prefill:.2f} (above 1: xonnx faster)")
    if a.row:
        weights = a.weights + (", int8 activations" if a.accuracy_level == 4 and a.weights != "fp32" else "")
        print(f"| {a.model}, {params / 1e6:.0f}M | {weights} | {a.batch} | {a.prompt} | {x:.1f} | {o:.1f} | "
              f"**{x / o:.2f}** | {med('xonnx', 'prefill_ms'):.1f} | {med('ort', 'prefill_ms'):.1f} | {prefill:.2f} | "
              f"{limit:.0f} | {share('xonnx'):.0%} |")


if __name__ == "__main__":
    main()
