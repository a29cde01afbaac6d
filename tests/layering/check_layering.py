#!/usr/bin/env python3
"""Checks that no source file includes a layer it may not (DESIGN.md).

Every #include "..." of a project header (one found under src/ or include/)
is checked against the table below; libraries' headers (absl, onnx, oneDNN,
protobuf, ...) are not the project's and pass. Unit tests (*_test.cc) may
include anything, as the suites under tests/ do. Prints every violation,
then 'N passed, N failed' over the files checked; exits non-zero on any.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from source_checks import run  # noqa: E402

# Layer -> the layers its files may include besides their own. "public"
# is include/xonnx/; "base-public" the public headers every layer may use
# (xonnx/status.h, xonnx/float16.h, xonnx/host_memory.h: the types of
# errors and of 16-bit floats, and the host memory of tensors and buffers,
# are the same inside and out).
MAY_INCLUDE = {
    "base": {"base-public"},
    "hlo": {"base", "base-public"},
    "evaluator": {"hlo", "base", "base-public"},
    "passes": {"evaluator", "hlo", "base", "base-public"},
    # Differentiation builds HLO from HLO; the evaluator is for its tests.
    "autodiff": {"hlo", "base", "base-public"},
    "onnx": {"passes", "autodiff", "evaluator", "hlo", "base", "base-public"},
    # The PjRT ABI and its client: no HLO types (element types are the ABI's).
    "pjrt": {"base", "base-public"},
    "backends/cpu": {"passes", "evaluator", "hlo", "base", "base-public"},
    # The plugin shim: the ABI's declarations only, never the client.
    "plugins/cpu": {"pjrt-abi", "backends/cpu", "hlo", "base", "base-public"},
    # The runtime reaches a plugin through the ABI like any client: never
    # backends/cpu; optimization happens behind the importer, so no passes.
    "runtime": {"onnx", "pjrt", "pjrt-abi", "hlo", "base", "public", "base-public"},
    # Programs traced from C++: HLO built and differentiated, then compiled
    # and run through the runtime's clients and compile cache (Jit), with
    # the passes XLA's plugins need.
    "program": {"runtime", "autodiff", "passes", "pjrt", "hlo", "base", "public", "base-public"},
    # Text generation: the decoder loop runs sessions through the runtime.
    "generate": {"runtime", "base", "public", "base-public"},
    # The inference server is a client of the public API, as the command is.
    "serve": {"public", "base-public"},
    "cli": {"serve", "public", "base-public"},
    # The C API and the Python binding are built on the public C++ API alone.
    "capi": {"public", "base-public"},
    "python": {"public", "base-public"},
    "public": {"public", "base-public"},
}
BASE_PUBLIC = {"xonnx/status.h", "xonnx/export.h", "xonnx/float16.h", "xonnx/host_memory.h"}
PJRT_ABI = {"pjrt/c_api.h", "pjrt/compile_options.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of_header(root, path):
    """The layer a project header belongs to, or None for a library's."""
    if os.path.isfile(os.path.join(root, "include", path)):
        return "base-public" if path in BASE_PUBLIC else "public"
    if not os.path.isfile(os.path.join(root, "src", path)):
        return None
    if path in PJRT_ABI:
        return "pjrt-abi"
    for layer in sorted(MAY_INCLUDE, key=len, reverse=True):
        if path.startswith(layer + "/"):
            return layer
    return path.split("/")[0]


def layer_of_file(rel):
    if rel.startswith("include/xonnx/"):
        return "public"
    if rel.startswith("python/"):
        return "python"
    rel = rel[len("src/"):]
    for layer in sorted(MAY_INCLUDE, key=len, reverse=True):
        if rel.startswith(layer + "/"):
            return layer
    return None


def problems_of(root, rel):
    layer = layer_of_file(rel)
    if layer is None:
        return [f"{rel}: not in any layer of DESIGN.md's table"]
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        text = f.read()
    bad = []
    for inc in INCLUDE.findall(text):
        target = layer_of_header(root, inc)
        if target is None or target == layer or (target == "pjrt-abi" and layer == "pjrt"):
            continue
        if target not in MAY_INCLUDE[layer]:
            bad.append(f'{rel}: layer {layer} includes "{inc}" (layer {target})')
    return bad


if __name__ == "__main__":
    sys.exit(run(problems_of))
