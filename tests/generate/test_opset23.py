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
from test_generate import check_against_reference  # noqa: E402


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    m = tiny_llama.build(3)
    path = str(tmp_path_factory.mktemp("opset23") / "model.onnx")
    opset23_llama.export(m, path)
    return m, path


def test_greedy_matches_the_reference_alone_and_in_a_batch(model):
    check_against_reference(*model)
