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
from test_generate import check_a_growing_cache, check_against_reference, kv_cache_of  # noqa: E402
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


def test_greedy_matches_the_reference_alone_and_in_a_batch(model):
    check_against_reference(*model)


def test_a_growing_cache_gives_the_same_tokens(model):
    # Sequences at their own lengths: each widening keeps each one's slots.
    check_a_growing_cache(*model, n=150)


def test_the_cache_kept_on_the_device_gives_the_same_tokens(model):
    # GroupQueryAttention writes each token at its sequence's length into
    # the whole cache: with the cache on the device, that present is fed
    # back as the next past (the prompt's slots are uploaded once).
    assert kv_cache_of(model[1], "--kv-cache", "device") == "device"
    # Even on xonnx's CPU plugin, "auto" leaves it there: each present is
    # the whole cache, which the host cache would copy out every step.
    assert kv_cache_of(model[1]) == "device"
    assert kv_cache_of(model[1], "--kv-cache", "host") == "host"
    check_against_reference(*model, "--kv-cache", "host")
    check_against_reference(*model, "--kv-cache", "device")
