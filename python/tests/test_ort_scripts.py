"""Programs written for ONNX Runtime (tests/ort_scripts: its tutorials' and
tests' ways of using the API), run unchanged: `import onnxruntime as ort`
finds xonnx through a module of that name that is xonnx itself. Each script
checks ONNX Runtime's documented behaviour with asserts. Where ONNX
Runtime's Python package is installed, `python3 test_ort_scripts.py` runs
the same scripts on it, which keeps the scripts honest."""
import glob
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = sorted(glob.glob(os.path.join(HERE, "ort_scripts", "s*.py")))


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    """A folder whose onnxruntime module is xonnx."""
    folder = tmp_path_factory.mktemp("shim")
    (folder / "onnxruntime.py").write_text("import sys\nimport xonnx\n\nsys.modules[__name__] = xonnx\n")
    return str(folder)


def run_script(script, extra_path):
    env = dict(os.environ)
    paths = [os.path.join(HERE, "ort_scripts")] + extra_path + [p for p in sys.path if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=300)


def test_there_are_a_dozen_scripts():
    assert len(SCRIPTS) >= 12, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=[os.path.basename(s)[:-3] for s in SCRIPTS])
def test_script_runs_unchanged_on_xonnx(script, shim):
    done = run_script(script, [shim])
    assert done.returncode == 0, f"{os.path.basename(script)} failed:\n{done.stdout}\n{done.stderr}"


if __name__ == "__main__":
    # The scripts on the onnxruntime package this interpreter finds.
    failed = 0
    for script in SCRIPTS:
        done = run_script(script, [])
        print(("ok    " if done.returncode == 0 else "FAIL  ") + os.path.basename(script))
        if done.returncode:
            failed += 1
            print(done.stderr)
    sys.exit(1 if failed else 0)
