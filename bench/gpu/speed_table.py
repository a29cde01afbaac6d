#!/usr/bin/env python3
"""The speed table of bench/gpu/run.sh from the JSON lines its rounds wrote.

  speed_table.py RESULTS.jsonl

Each line is one engine's timing of one model, data type and batch in one
round: `xonnx bench --json` objects (with "engine", "model", "dtype" and
"batch" added) and bench/gpu/torch_bench.py's objects. Prints, per model,
type and batch, the median over rounds of each engine's median latency
(host input to host output), xonnx's phases, PyTorch's on-device times, and
xonnx's ratio to each PyTorch mode (below 1: xonnx is faster).
"""
import json
import sys
from collections import defaultdict


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def main():
    rows = defaultdict(lambda: defaultdict(list))  # (model, dtype, batch) -> key -> values
    engines = []
    for line in open(sys.argv[1]):
        line = line.strip()
        if not line:
            continue
        d = json.loads(line)
        engine = d.get("mode", d["engine"]) if d["engine"].startswith("pytorch") else d["engine"]
        if engine not in engines:
            engines.append(engine)
        key = (d["model"], d["dtype"], int(d["batch"]))
        rows[key][engine].append(d["latency_ms"]["median"])
        if "device_latency_ms" in d:
            rows[key][engine + " dev"].append(d["device_latency_ms"]["median"])
        if "phases_ms" in d:
            for phase, ms in d["phases_ms"].items():
                rows[key][f"{engine} {phase}"].append(ms)
        if "items_per_s" in d and d["engine"].startswith("xonnx"):
            rows[key][engine + " items/s"].append(d["items_per_s"])
    torch_modes = [e for e in engines if not e.startswith("xonnx")]
    xonnx_engines = [e for e in engines if e.startswith("xonnx")]
    head = ["model", "type", "batch"] + xonnx_engines + ["xonnx up/exec/down"]
    head += torch_modes + [m + " dev" for m in torch_modes] + [f"/{m}" for m in torch_modes]
    print(" | ".join(head))
    for (model, dtype, batch), r in sorted(rows.items()):
        med = {k: median(v) for k, v in r.items()}
        cells = [model, dtype, str(batch)]
        cells += [f"{med[e]:.3f}" if e in med else "-" for e in xonnx_engines]
        phases = [med.get(f"xonnx {p}") for p in ("upload", "execute", "download")]
        cells.append("/".join(f"{p:.3f}" for p in phases) if None not in phases else "-")
        cells += [f"{med[m]:.3f}" if m in med else "-" for m in torch_modes]
        cells += [f"{med[m + ' dev']:.3f}" if m + " dev" in med else "-" for m in torch_modes]
        x = med.get("xonnx")
        cells += [f"{x / med[m]:.2f}" if x and m in med else "-" for m in torch_modes]
        print(" | ".join(cells))
    print("(ms, medians over rounds; /mode = xonnx / PyTorch in that mode, host to host)")
    if len(xonnx_engines) > 1:
        # Every xonnx engine's latency with its phases, and its ratio to
        # PyTorch's fastest mode measured, to compare variants.
        print()
        print(" | ".join(["model", "type", "batch"] + [f"{e} (up/exec/down)" for e in xonnx_engines]
                         + [f"{e} / best PyTorch" for e in xonnx_engines]))
        for (model, dtype, batch), r in sorted(rows.items()):
            med = {k: median(v) for k, v in r.items()}
            best = min((med[m] for m in torch_modes if m in med), default=None)
            cells = [model, dtype, str(batch)]
            for e in xonnx_engines:
                phases = [med.get(f"{e} {p}") for p in ("upload", "execute", "download")]
                ph = "/".join(f"{p:.3f}" for p in phases) if None not in phases else "-"
                cells.append(f"{med[e]:.3f} ({ph})" if e in med else "-")
            cells += [f"{med[e] / best:.2f}" if e in med and best else "-" for e in xonnx_engines]
            print(" | ".join(cells))
    # Throughput: xonnx's items/s as measured (several calls in flight for
    # xonnx-xN), PyTorch's one call at a time, batch / latency.
    print()
    print(" | ".join(["model", "type", "batch"] + [e + " items/s" for e in xonnx_engines + torch_modes]))
    for (model, dtype, batch), r in sorted(rows.items()):
        med = {k: median(v) for k, v in r.items()}
        cells = [model, dtype, str(batch)]
        cells += [f"{med[e + ' items/s']:.0f}" if e + " items/s" in med else "-" for e in xonnx_engines]
        cells += [f"{batch * 1000 / med[m]:.0f}" if m in med else "-" for m in torch_modes]
        print(" | ".join(cells))


if __name__ == "__main__":
    main()
