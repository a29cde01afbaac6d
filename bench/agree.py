#!/usr/bin/python3
"""How closely xonnx's outputs agree with ONNX Runtime's on the same random
inputs, for models of bench/ (a folder with model.onnx and inputs.txt, as
bench/corpus.py and bench/compare.sh write them; batch 1).

    bench/agree.py build/bench_models/squeezenet1_1_qdq_op17 [...]

Prints, per model and output, the relative L2 error ||x - o|| / ||o|| and
the largest absolute difference, where o is ONNX Runtime's output.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) > 1 else 2
    xonnx = os.environ.get("XONNX", os.path.join(ROOT, "build", "bin", "xonnx"))
    for folder in sys.argv[1:]:
        model = os.path.abspath(os.path.join(folder, "model.onnx"))
        with tempfile.TemporaryDirectory() as tmp:
            rng = np.random.RandomState(0)
            xargs, oargs = [], []
            with open(os.path.join(folder, "inputs.txt")) as f:
                for line in f:
                    name, dims = line.strip().split("=")
                    shape = [1] + [int(d) for d in dims.split("x")]
                    x = rng.rand(*shape).astype(np.float32)
                    np.save(os.path.join(tmp, name + ".npy"), x)
                    x.tofile(os.path.join(tmp, name + ".raw"))
                    xargs += ["--input", f"{name}={os.path.join(tmp, name + '.npy')}"]
                    oargs.append(f"{name}={'x'.join(map(str, shape))}={os.path.join(tmp, name + '.raw')}")
            subprocess.run(["node", os.path.join(ROOT, "bench", "ort_run.js"), model, os.path.join(tmp, "ort")] + oargs,
                           check=True, cwd=os.path.join(ROOT, "bench"))
            subprocess.run([xonnx, "run", model, "--no-cache", "--output-dir", os.path.join(tmp, "xonnx")] + xargs,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            k = 0
            while os.path.exists(os.path.join(tmp, "ort", f"output_{k}.raw")):
                o = np.fromfile(os.path.join(tmp, "ort", f"output_{k}.raw"), dtype=np.float32)
                x = numpy_helper.to_array(onnx.load_tensor(os.path.join(tmp, "xonnx", f"output_{k}.pb"))).ravel()
                norm = np.linalg.norm(o)
                rel = np.linalg.norm(x - o) / norm if norm > 0 else float(np.linalg.norm(x))
                print(f"{os.path.basename(folder.rstrip('/')):32s} output {k}: rel L2 {rel:.2e}, "
                      f"max |diff| {np.abs(x - o).max():.2e} (max |ORT| {np.abs(o).max():.2e})")
                k += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
