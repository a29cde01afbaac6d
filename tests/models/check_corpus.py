#!/usr/bin/python3
"""Checks the model corpus (bench/corpus.py's architectures, exported with
torch at each opset, batch 1 and 2) against torch's own outputs: each model
is exported (tests/models/export_corpus.py), then run by model_runner at a
relative L2 error of 1e-4 with every kernel native. Two models are worked on
at a time.

With --budget, models are started only while the budget lasts: the ones not
reached are listed as not checked (never as passed), and a later run with a
larger budget (or none: the nightly run) checks them. The order is fixed, so
a budget always covers the same models first.

--markdown FILE writes the results as the table of docs/models.md.

usage: check_corpus.py OUT_DIR --runner MODEL_RUNNER [--opsets 13,17] [--models a,b]
                       [--budget SECONDS] [--markdown FILE] [--jobs 2]
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def corpus_models():
    sys.path.insert(0, HERE)
    from export_corpus import MIN_OPSET, corpus
    return corpus().MODELS, MIN_OPSET


def source(make):
    """Where an architecture comes from: torchvision's constructors (through
    bench/corpus.py's tv helpers) or a module written in bench/corpus.py."""
    kind = make.__qualname__.split(".")[0]
    if kind in ("tv", "tv_seg", "tv_video"):
        return {"tv": "torchvision", "tv_seg": "torchvision segmentation", "tv_video": "torchvision video"}[kind]
    return f"bench/corpus.py `{kind}`"


def check(name, opset, out_dir, runner):
    """Exports one model and runs it; returns (name, opset, ok, errors, seconds, detail)."""
    start = time.monotonic()
    folder = f"{name}_op{opset}"
    export = subprocess.run([sys.executable, os.path.join(HERE, "export_corpus.py"), out_dir, "--models", name,
                             "--opsets", str(opset), "--jobs", "1"], capture_output=True, text=True)
    if export.returncode != 0:
        return name, opset, False, {}, time.monotonic() - start, "export failed: " + export.stderr.strip()[-400:]
    run = subprocess.run([runner, "--models", out_dir, "--only", folder, "--tolerance", "1e-4", "--native-only"],
                         capture_output=True, text=True)
    errors = {}
    for m in re.finditer(r"^PASS " + re.escape(folder) + r"/test_data_set_b(\d+)\s+rel_l2=(\S+)", run.stdout, re.M):
        errors[int(m.group(1))] = float(m.group(2))
    ok = run.returncode == 0 and len(errors) >= 2
    detail = "" if ok else (run.stdout + run.stderr).strip()[-800:]
    return name, opset, ok, errors, time.monotonic() - start, detail


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--runner", required=True)
    p.add_argument("--opsets", default="13,17")
    p.add_argument("--models", default="")
    p.add_argument("--budget", type=float, default=0, help="seconds; 0: no limit")
    p.add_argument("--markdown")
    p.add_argument("--jobs", type=int, default=2)
    a = p.parse_args()
    models, min_opset = corpus_models()
    names = a.models.split(",") if a.models else list(models)
    work = []
    for o in a.opsets.split(","):
        for n in names:
            w = (n, max(int(o), min_opset.get(n, 0)))
            if w not in work:
                work.append(w)
    start = time.monotonic()
    results, not_started = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        pending = set()
        queue = list(work)
        while queue or pending:
            while queue and len(pending) < a.jobs:
                if a.budget and time.monotonic() - start > a.budget:
                    not_started.extend(queue)
                    queue = []
                    break
                n, o = queue.pop(0)
                pending.add(pool.submit(check, n, o, a.out_dir, a.runner))
            if not pending:
                break
            done, pending = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for f in done:
                r = f.result()
                results.append(r)
                name, opset, ok, errors, secs, detail = r
                errs = " ".join(f"b{b}={e:.2g}" for b, e in sorted(errors.items()))
                print(f"{'PASS' if ok else 'FAIL'} {name}_op{opset:<4} {errs:30} {secs:6.1f} s", flush=True)
                if detail:
                    print("     " + detail.replace("\n", "\n     "), flush=True)
    order = {w: i for i, w in enumerate(work)}
    results.sort(key=lambda r: order[(r[0], r[1])])
    for n, o in not_started:
        print(f"NOT CHECKED {n}_op{o}: the time budget of {a.budget:.0f} s was spent (the nightly run checks it)")
    passed = sum(1 for r in results if r[2])
    failed = len(results) - passed
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| model | family | source | opset | rel. L2 error, batch 1 | batch 2 |\n"
                    "|---|---|---|---|---|---|\n")
            for name, opset, ok, errors, _, _ in results:
                cells = [f"{errors[b]:.2g}" if b in errors else "fail" for b in (1, 2)]
                f.write(f"| {name} | {models[name][0]} | {source(models[name][1])} | {opset} | {cells[0]} | "
                        f"{cells[1]} |\n")
    print(f"corpus: {passed} passed, {failed} failed, {len(not_started)} not checked, "
          f"{time.monotonic() - start:.0f} s")
    sys.exit(1 if failed or not results else 0)


if __name__ == "__main__":
    main()
