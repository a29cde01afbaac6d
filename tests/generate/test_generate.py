"""`xonnx generate` against a reference greedy loop in torch, on a
LLaMA-style decoder exported as Hugging Face models are: the same tokens
for one prompt and for a batch of prompts of different lengths; seeds that
fix the samples; top-k 1 that is greedy; stop tokens; clear refusals; the
C API's generator. (The Python API's is python/tests/test_generate.py.)"""
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_llama  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
XONNX = os.environ.get("XONNX_BIN", os.path.join(ROOT, "build", "bin", "xonnx"))
C_API_TEST = os.environ.get("XONNX_C_API_TEST", os.path.join(ROOT, "build", "src", "c_api_test"))
EXAMPLE = os.environ.get("XONNX_EXAMPLE_MODEL", os.path.join(ROOT, "examples", "tiny_cnn.onnx"))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tiny_llama.exported(tmp_path_factory.mktemp("llama"))


def generate(path, prompts, *args, expect=0):
    cmd = [XONNX, "generate", path, "--quiet"]
    for p in prompts:
        cmd += ["--prompt-ids", ",".join(map(str, p))]
    r = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=600)
    assert r.returncode == expect, r.stderr
    if expect:
        return r.stderr
    lines = r.stdout.strip().split("\n")[-len(prompts):]
    return [[int(x) for x in line.split(",")] if line else [] for line in lines]


PROMPTS = [[5, 17, 3, 88, 41], [9], [60, 2, 2, 71, 30, 12, 44, 8, 1]]


def check_against_reference(m, path, *flags):
    """`xonnx generate` on `path` (with `flags`) gives torch module `m`'s
    greedy tokens, one prompt at a time and for a batch of prompts of
    different lengths."""
    for prompt in PROMPTS:
        assert generate(path, [prompt], "--max-new-tokens", "16", *flags) == [tiny_llama.greedy(m, prompt, 16)], prompt
    assert generate(path, PROMPTS, "--max-new-tokens", "12", *flags) == [tiny_llama.greedy(m, p, 12) for p in PROMPTS]


def kv_cache_of(path, *flags):
    """Where `xonnx generate --timings` says the cache was kept."""
    err = subprocess.run([XONNX, "generate", path, "--quiet", "--timings", "--prompt-ids", "1,2", "--max-new-tokens",
                          "3"] + list(flags), capture_output=True, text=True, timeout=600)
    assert err.returncode == 0, err.stderr
    assert "first token after" in err.stderr and "decode" in err.stderr, err.stderr
    return err.stderr.split("kv cache: ")[1].split(";")[0]


def test_the_cache_kept_on_the_device_gives_the_same_tokens(model):
    # Updated in place by the program (TensorScatter into the donated past),
    # fed back without reaching the host: the same tokens as the reference.
    # On xonnx's CPU plugin "auto" keeps it in host memory, read in place.
    m, path = model
    assert kv_cache_of(path) == "host"
    assert kv_cache_of(path, "--kv-cache", "device") == "device"
    check_against_reference(m, path, "--kv-cache", "device")


def check_a_growing_cache(m, path, placements=("host", "device"), n=300):
    """The cache starts with room for the prompt and 64 new tokens and
    doubles, up to what max_new_tokens needs, as a generation goes on: `n`
    tokens after a one-token prompt cross two widenings at 300 (128 slots,
    then 256, then 320) and one at 150 (then 192), a batch of different
    lengths one; in each of `placements`, the reference's tokens all the
    same."""
    for flags in (["--kv-cache", p] for p in placements):
        assert generate(path, [PROMPTS[1]], "--max-new-tokens", str(n), *flags) == \
            [tiny_llama.greedy(m, PROMPTS[1], n)], flags
        assert generate(path, PROMPTS, "--max-new-tokens", "130", *flags) == \
            [tiny_llama.greedy(m, p, 130) for p in PROMPTS], flags


def test_a_growing_cache_gives_the_same_tokens(model):
    check_a_growing_cache(*model)


def test_greedy_matches_the_reference(model):
    m, path = model
    for prompt in PROMPTS:
        assert generate(path, [prompt], "--max-new-tokens", "20") == [tiny_llama.greedy(m, prompt, 20)], prompt


def test_int32_ids_masks_and_positions(model, tmp_path):
    import torch
    m, path = model
    narrow = str(tmp_path / "int32.onnx")
    tiny_llama.export(m, narrow, index_dtype=torch.int32)
    import onnx
    assert onnx.load(narrow).graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT32
    assert generate(narrow, PROMPTS, "--max-new-tokens", "10") == [tiny_llama.greedy(m, p, 10) for p in PROMPTS]


def test_a_batch_of_different_lengths_is_each_prompt_alone(model):
    m, path = model
    got = generate(path, PROMPTS, "--max-new-tokens", "16", "--greedy")
    assert got == [tiny_llama.greedy(m, p, 16) for p in PROMPTS]


def test_sampling_seeds_and_top_k_one(model):
    m, path = model
    args = ["--max-new-tokens", "24", "--temperature", "1.3", "--top-p", "0.95", "--top-k", "50"]
    a = generate(path, PROMPTS, *args, "--seed", "7")
    assert a == generate(path, PROMPTS, *args, "--seed", "7")
    assert a != generate(path, PROMPTS, *args, "--seed", "8")
    assert a != [tiny_llama.greedy(m, p, 24) for p in PROMPTS]  # it does sample
    assert generate(path, PROMPTS, "--max-new-tokens", "12", "--top-k", "1", "--temperature", "2",
                    "--seed", "3") == [tiny_llama.greedy(m, p, 12) for p in PROMPTS]


def test_stop_tokens_end_each_sequence(model):
    m, path = model
    ref = [tiny_llama.greedy(m, p, 12) for p in PROMPTS]
    stop = ref[0][3]
    got = generate(path, PROMPTS, "--max-new-tokens", "12", "--stop-ids", str(stop))
    for r, g in zip(ref, got):
        want = r[:r.index(stop) + 1] if stop in r else r
        assert g == want, (g, want)


def test_refusals_say_what_is_wrong(model, tmp_path):
    m, path = model
    # Positions counted from the past's length: refused, never run wrong.
    other = tiny_llama.CountsFromPast()
    other.load_state_dict(m.state_dict())
    counted = str(tmp_path / "counted.onnx")
    tiny_llama.export(other.eval(), counted, positions=False)
    err = generate(counted, [[1, 2]], "--max-new-tokens", "3", expect=3)
    assert "depend on how its key/value cache is fed" in err, err
    # A model that ignores its attention mask: refused too.
    blind = tiny_llama.IgnoresMask()
    blind.load_state_dict(m.state_dict())
    ignores = str(tmp_path / "ignores.onnx")
    tiny_llama.export(blind.eval(), ignores)
    err = generate(ignores, [[1, 2]], "--max-new-tokens", "3", expect=3)
    assert "depend on how its key/value cache is fed" in err, err
    err = generate(EXAMPLE, [[1, 2]], "--max-new-tokens", "3", expect=3)
    assert "no input 'input_ids'" in err, err
    err = generate(path, [[1, 2]], "--temperature", "0", expect=2)
    assert "temperature" in err, err
    err = generate(path, [[1, 500]], "--max-new-tokens", "3", expect=3)
    assert "token 500 is outside the model's vocabulary of 97" in err, err
    err = generate(path, [[1, 2]], "--greedy", "--top-k", "5", expect=2)
    assert "--greedy cannot be combined" in err, err


def test_the_c_api_generates_the_same_tokens(model):
    m, path = model
    r = subprocess.run([C_API_TEST, EXAMPLE, path], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    got = [line.split(": ")[2] for line in r.stdout.splitlines() if line.startswith("generate: ")]
    want = [",".join(map(str, tiny_llama.greedy(m, p, 8))) for p in ([5, 17, 3, 88, 41], [9])]
    assert got == want, r.stdout


def test_a_present_that_is_not_the_concatenation_is_read_whole(model, tmp_path):
    """The runtime asks the model for the new slots alone where each present
    is Concat(past, new); a model whose presents come otherwise (here
    through an Identity) is read whole, with the same tokens."""
    import onnx
    from onnx import helper
    m, path = model
    g = onnx.load(path)
    for out in g.graph.output:
        if out.name.startswith("present."):
            for node in g.graph.node:
                node.output[:] = [o + "_whole" if o == out.name else o for o in node.output]
                node.input[:] = [i + "_whole" if i == out.name else i for i in node.input]
            g.graph.node.append(helper.make_node("Identity", [out.name + "_whole"], [out.name]))
    other = str(tmp_path / "identity.onnx")
    onnx.save(g, other)
    assert generate(other, PROMPTS, "--max-new-tokens", "10") == [tiny_llama.greedy(m, p, 10) for p in PROMPTS]
