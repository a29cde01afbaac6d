"""A decoder of ONNX's own opset-23 ops (RMSNormalization,
RotaryEmbedding, Attention with past_key/past_value; opset23_llama.py)
generates the tokens of the torch module it was built from: one prompt at
a time and a batch of prompts of different lengths."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opset23_llama  # noqa: E402
import tiny_llama  # noqa: E402
from test_generate import XONNX, check_a_growing_cache, check_against_reference, kv_cache_of  # noqa: E402


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    m = tiny_llama.build(3)
    path = str(tmp_path_factory.mktemp("opset23") / "model.onnx")
    opset23_llama.export(m, path)
    return m, path


def test_greedy_matches_the_reference_alone_and_in_a_batch(model):
    check_against_reference(*model)


def test_a_growing_cache_gives_the_same_tokens(model):
    check_a_growing_cache(*model, placements=("host",), n=150)


def test_the_cache_on_the_device_is_refused_by_name(model):
    # ONNX's Attention returns its present itself: nothing to write the new
    # slots into the past. "auto" keeps the cache in host memory; asking
    # for the device says why not, at load time.
    import subprocess
    assert kv_cache_of(model[1]) == "host"
    r = subprocess.run([XONNX, "generate", model[1], "--prompt-ids", "1,2", "--kv-cache", "device"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode != 0
    assert "cannot stay on the device" in r.stderr and "Concat(past_key_values" in r.stderr, r.stderr
