"""`xonnx generate --tokenizer FILE --prompt TEXT` with a SentencePiece model
trained here (spm_fixture.py): a text prompt generates what its ids (as
Debian's spm_encode gives them) generate, and the new text is spm_decode's
of the new ids; the tokenizer's end-of-sequence token stops a sequence;
wrong uses are refused with their reason. Its own ctest (`tokenizer`),
outside the AddressSanitizer run, which cannot load SentencePiece's own
protobuf in a symbol scope of its own."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spm_fixture  # noqa: E402
import tiny_llama  # noqa: E402
from test_generate import C_API_TEST, EXAMPLE, XONNX, generate  # noqa: E402


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The test decoder with the tokenizer's vocabulary (64), the tokenizer,
    and the usual decoder, whose vocabulary (97) is larger."""
    folder = tmp_path_factory.mktemp("tokenizer")
    model = str(folder / "model64.onnx")
    tiny_llama.export(tiny_llama.build(0, tiny_llama.Config(vocab=64)), model)
    _, larger = tiny_llama.exported(folder)
    return model, spm_fixture.train(folder), larger


def run(*args, expect=0):
    r = subprocess.run([XONNX, "generate", *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == expect, r.stderr
    return r


def test_text_prompts_generate_what_their_ids_do(setup):
    model, spm, _ = setup
    for text in spm_fixture.TEXTS:
        ids = spm_fixture.encode(spm, text)
        want = generate(model, [ids], "--max-new-tokens", "12", "--stop-ids", "2")[0]
        r = run(model, "--tokenizer", spm, "--prompt", text, "--max-new-tokens", "12", "--quiet")
        assert r.stdout.rstrip("\n").split("\n")[-1] == spm_fixture.decode(spm, want), text


def test_add_bos_and_a_batch_of_texts(setup):
    model, spm, _ = setup
    want = [generate(model, [[1] + spm_fixture.encode(spm, t)], "--max-new-tokens", "6", "--stop-ids", "2")[0]
            for t in spm_fixture.TEXTS]
    args = [a for t in spm_fixture.TEXTS for a in ("--prompt", t)]
    r = run(model, "--tokenizer", spm, "--add-bos", *args, "--max-new-tokens", "6", "--quiet")
    got = r.stdout.rstrip("\n").split("\n")[-len(spm_fixture.TEXTS):]
    assert got == [spm_fixture.decode(spm, w) for w in want]


def test_streamed_text_is_the_final_text(setup):
    model, spm, _ = setup
    r = run(model, "--tokenizer", spm, "--prompt", spm_fixture.TEXTS[0], "--max-new-tokens", "10")
    assert r.stderr.strip("\n") == r.stdout.rstrip("\n").split("\n")[-1]


def test_refusals_say_why(setup, tmp_path):
    model, spm, _ = setup
    assert "--prompt and --add-bos need --tokenizer" in run(model, "--prompt", "x", expect=2).stderr
    assert "give a prompt" in run(model, "--tokenizer", spm, expect=2).stderr
    bogus = tmp_path / "tokenizer.json"
    bogus.write_text('{"model": {"type": "BPE"}}')
    err = run(model, "--tokenizer", str(bogus), "--prompt", "x", expect=3).stderr
    assert "not a SentencePiece model" in err and "tokenizer.json" in err


def test_a_token_the_tokenizer_cannot_decode_fails(setup):
    """A model whose vocabulary is larger than the tokenizer's may choose a
    token the tokenizer has no text for: an error naming it, not a guess."""
    _, spm, larger = setup
    r = run(larger, "--tokenizer", spm, "--prompt", spm_fixture.TEXTS[0], "--max-new-tokens", "30", "--quiet",
            expect=3)
    assert "is outside the vocabulary of 64" in r.stderr


def test_the_c_api_tokenizes_as_sentencepiece(setup):
    """The C API's tokenizer (c_api_test with a TOKENIZER and a TEXT): the ids
    are spm_encode's, and the text of those ids is spm_decode's. (Its
    generation checks take the decoder whose vocabulary has their prompts'
    ids.)"""
    _, spm, larger = setup
    for text in spm_fixture.TEXTS:
        r = subprocess.run([C_API_TEST, EXAMPLE, larger, spm, text], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        lines = dict(line.split(": ", 1) for line in r.stdout.splitlines() if line.startswith(("tokenize", "detok")))
        ids = spm_fixture.encode(spm, text)
        assert lines["tokenize"] == ",".join(map(str, ids)), text
        assert lines["detokenize"] == spm_fixture.decode(spm, ids), text
