"""xonnx.Generator against a reference greedy loop in torch, on
tests/generate's LLaMA-style decoder: the callback and the iterator see the
same tokens, leaving the iterator early stops the generation, the
callback's exceptions come out of generate, and refusals are the right
exceptions."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "generate"))
import tiny_llama  # noqa: E402

PROMPTS = [[5, 17, 3, 88, 41], [9], [60, 2, 2, 71, 30, 12, 44, 8, 1]]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tiny_llama.exported(tmp_path_factory.mktemp("llama"))


def test_the_python_api_streams_the_same_tokens(model, example):
    import xonnx
    m, path = model
    g = xonnx.Generator(path)
    assert (g.style, g.layers) == ("hf", tiny_llama.LAYERS)
    ref = [tiny_llama.greedy(m, p, 10) for p in PROMPTS]
    seen = []
    assert g.generate(PROMPTS, 10, on_token=lambda s, t: seen.append((s, t))) == ref
    assert [t for s, t in seen if s == 1] == ref[1]
    streamed = list(g.stream(PROMPTS, 10))
    assert sorted(streamed) == sorted(seen)
    # Leaving the loop early stops the generation; the generator is reusable.
    for i, _ in enumerate(g.stream([PROMPTS[0]], 1000)):
        if i == 3:
            break
    assert g.generate([PROMPTS[0]], 4) == [ref[0][:4]]
    sampled = g.generate(PROMPTS, 10, temperature=1.2, top_p=0.9, seed=5)
    assert sampled == g.generate(PROMPTS, 10, temperature=1.2, top_p=0.9, seed=5) != ref

    def boom(s, t):
        raise KeyError("from the callback")
    with pytest.raises(KeyError, match="from the callback"):
        g.generate(PROMPTS, 5, on_token=boom)
    with pytest.raises(xonnx.NotImplemented, match="no input 'input_ids'"):
        xonnx.Generator(example)
    with pytest.raises(xonnx.InvalidArgument, match="top-p"):
        g.generate(PROMPTS, 5, top_p=2.0)
    # A negative id would wrap round in the embedding's Gather: refused.
    with pytest.raises(xonnx.InvalidArgument, match="outside the model's vocabulary of 97"):
        g.generate([[3, -1]], 5)
    with pytest.raises(xonnx.InvalidArgument, match="max_new_tokens"):
        g.generate([[3]], 1 << 40)


def test_the_tokenizer_encodes_and_decodes_as_sentencepiece_does(tmp_path):
    """xonnx.Tokenizer against Debian's spm_encode / spm_decode, on a model
    trained here (tests/generate/spm_fixture.py)."""
    import spm_fixture
    import xonnx
    spm = spm_fixture.train(tmp_path)
    t = xonnx.Tokenizer(spm)
    assert (t.vocab_size, t.unk, t.bos, t.eos) == (64, 0, 1, 2)
    for text in spm_fixture.TEXTS:
        ids = spm_fixture.encode(spm, text)
        assert t.encode(text) == ids, text
        assert t.decode(ids) == spm_fixture.decode(spm, ids) == text
    with pytest.raises(Exception, match="outside the vocabulary of 64"):
        t.decode([64])
    with pytest.raises(Exception, match="not a SentencePiece model"):
        xonnx.Tokenizer(str(tmp_path / "corpus.txt"))


def test_the_cache_on_the_device_gives_the_same_tokens(model):
    import xonnx
    m, path = model
    assert xonnx.Generator(path).kv_cache == "host"  # xonnx's CPU plugin reads it in place
    g = xonnx.Generator(path, kv_cache="device")
    assert g.kv_cache == "device"
    assert g.generate(PROMPTS, 10) == [tiny_llama.greedy(m, p, 10) for p in PROMPTS]
    with pytest.raises(ValueError, match="kv_cache"):
        xonnx.Generator(path, kv_cache="gpu")
