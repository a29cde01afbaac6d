#!/usr/bin/env bash
# `pip install .` from the checkout into a fresh venv, offline (--no-index:
# the in-tree build backend needs nothing from the network), and a wheel
# built with `pip wheel` (and with Debian's python3-build when it is there)
# installed into a second venv. Each venv then runs the example model from
# Python and with its own `xonnx` command. The build reuses BUILD_DIR (the
# backend's build-dir setting), so nothing is compiled twice.
#   pip_install_test.sh BUILD_DIR SOURCE_DIR MODEL.onnx
set -euo pipefail
build=$1 src=$2 model=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "pip_install_test: $*" >&2; exit 1; }
cd "$work"  # away from the checkout: its build/ folder would shadow `build`
unset PYTHONPATH

check_venv() {  # VENV: the package and the command it installed work
  local venv=$1 out
  out=$(XONNX_CACHE_DIR=$work/cache "$venv/bin/python" -c '
import sys, numpy as np, xonnx
assert xonnx.__file__.startswith(sys.argv[2]), xonnx.__file__
s = xonnx.InferenceSession(sys.argv[1])
(p,) = s.run(None, {"image": np.zeros((1, 3, 32, 32), np.float32)})
assert p.shape == (1, 10) and abs(p.sum() - 1) < 1e-5, p
print("plugin", xonnx._xonnx.default_plugin_path())' "$model" "$venv") || fail "$venv: the package failed"
  grep -q "^plugin $venv/" <<<"$out" || fail "$venv: the plugin came from elsewhere: $out"
  XONNX_CACHE_DIR=$work/cache "$venv/bin/xonnx" run "$model" >/dev/null 2>&1 || fail "$venv: bin/xonnx failed"
}

# 1. pip install . (numpy comes from Debian's packages through the system site:
# the venvs are made by Debian's interpreter, whatever python3 is first on PATH).
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install -q --no-index --config-settings "build-dir=$build" "$src" >"$work/pip.log" 2>&1 ||
  { cat "$work/pip.log" >&2; fail "pip install . failed"; }
check_venv "$work/venv"
"$work/venv/bin/pip" show xonnx >"$work/show.txt" && grep -q "^Version: " "$work/show.txt" || fail "pip does not list xonnx"

# 2. A wheel, installed into another venv.
"$work/venv/bin/pip" wheel -q --no-index --no-deps --config-settings "build-dir=$build" -w "$work/dist" "$src" \
  >"$work/wheel.log" 2>&1 || { cat "$work/wheel.log" >&2; fail "pip wheel failed"; }
wheel=$(ls "$work"/dist/xonnx-*.whl)
/usr/bin/python3 -m venv --system-site-packages "$work/venv2"
"$work/venv2/bin/pip" install -q --no-index "$wheel" || fail "installing the wheel failed"
check_venv "$work/venv2"
made="pip install ., pip wheel"

# 3. Debian's python3-build, where installed: the same wheel, built its way.
if /usr/bin/python3 -c "import build.__main__" 2>/dev/null; then
  /usr/bin/python3 -m build --wheel --no-isolation --config-setting "build-dir=$build" --outdir "$work/dist_build" "$src" \
    >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; fail "python3 -m build failed"; }
  /usr/bin/python3 -m venv --system-site-packages "$work/venv3"
  "$work/venv3/bin/pip" install -q --no-index "$work"/dist_build/xonnx-*.whl || fail "installing build's wheel failed"
  check_venv "$work/venv3"
  made="$made, python3 -m build"
fi
echo "pip_install_test: passed ($made; each into a fresh venv, offline)"
