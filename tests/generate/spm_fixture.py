"""A SentencePiece tokenizer trained here, with Debian's spm_train, from a
small generated text (ASCII, accented Latin and CJK words), and Debian's
spm_encode / spm_decode as the reference for its ids and text."""
import os
import random
import shutil
import subprocess

TEXTS = ["the cat sat on a mat", "über café naïve songs", "日本 語 and old times", "dog ran far away"]


def train(folder):
    """The tokenizer's .model path, trained in `folder`."""
    for tool in ("spm_train", "spm_encode", "spm_decode"):
        if not shutil.which(tool):
            raise RuntimeError(f"{tool} is missing: scripts/install_deps.sh installs Debian's sentencepiece")
    rng = random.Random(1)
    words = ("the cat sat on a mat and dog ran far away while birds sing songs of old times "
             "über café naïve 日本 語").split()
    corpus = os.path.join(str(folder), "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        for _ in range(2000):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + "\n")
    prefix = os.path.join(str(folder), "tiny")
    subprocess.run(["spm_train", f"--input={corpus}", f"--model_prefix={prefix}", "--vocab_size=64",
                    "--model_type=unigram", "--character_coverage=1.0", "--minloglevel=2"], check=True,
                   capture_output=True)
    return prefix + ".model"


def encode(model, text):
    r = subprocess.run(["spm_encode", f"--model={model}", "--output_format=id"], input=text, text=True,
                       capture_output=True, check=True)
    return [int(x) for x in r.stdout.split()]


def decode(model, ids):
    r = subprocess.run(["spm_decode", f"--model={model}", "--input_format=id"], input=" ".join(map(str, ids)) + "\n",
                       text=True, capture_output=True, check=True)
    return r.stdout.rstrip("\n")
