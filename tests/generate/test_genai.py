"""A decoder written as onnxruntime-genai writes them (genai_llama.py:
GroupQueryAttention with rotary inside, Simplified and
SkipSimplifiedLayerNormalization, no position_ids), in float and with
4-bit MatMulNBits weights, generates the tokens of its torch reference:
one prompt at a time and a batch of prompts of different lengths (its
sequences each at their own length in the cache)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import genai_llama  # noqa: E402
import tiny_llama  # noqa: E402
from test_generate import PROMPTS, generate  # noqa: E402
from test_quantized import quantize_model  # noqa: E402


@pytest.fixture(scope="module", params=["fp32", "int4"])
def model(tmp_path_factory, request):
    m = tiny_llama.build(5)
    folder = tmp_path_factory.mktemp("genai")
    path = str(folder / "model.onnx")
    genai_llama.export(m, path)
    if request.param == "int4":
        path = quantize_model(m, path, str(folder / "int4.onnx"), 4, 32, True)
    return m, path


def test_greedy_matches_the_reference(model):
    m, path = model
    for prompt in PROMPTS:
        assert generate(path, [prompt], "--max-new-tokens", "16") == [tiny_llama.greedy(m, prompt, 16)], prompt


def test_a_batch_of_different_lengths_is_each_prompt_alone(model):
    m, path = model
    assert generate(path, PROMPTS, "--max-new-tokens", "12") == [tiny_llama.greedy(m, p, 12) for p in PROMPTS]
