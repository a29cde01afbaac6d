#!/usr/bin/env bash
# Generates the ONNX backend node tests (model.onnx + test_data_set_0/*.pb per
# case) with Debian's python3-onnx, offline. Usage: generate.sh OUT_DIR
set -euo pipefail
out="${1:?usage: generate.sh OUT_DIR}"
if [[ -f "$out/node/.complete" ]]; then exit 0; fi
rm -rf "$out"
mkdir -p "$out"
# Debian's python3 sees Debian's onnx; numpy 1.24 dropped aliases onnx 1.12 uses.
/usr/bin/python3 - "$out" <<'PY'
import sys
import numpy as np
for alias, typ in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if not hasattr(np, alias):
        setattr(np, alias, typ)
from onnx.backend.test.cmd_tools import main
sys.argv = ["backend-test-tools", "generate-data", "-o", sys.argv[1]]
main()
PY
touch "$out/node/.complete"
echo "generate.sh: $(ls "$out/node" | wc -l) node test cases in $out/node" >&2
