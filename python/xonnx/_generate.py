"""Generator: text generation with a decoder language model (xonnx/generate.h)."""

import queue
import threading

from . import _xonnx
from ._options import SessionOptions


class Generator:
    """A decoder model opened for generation. Its style (Hugging Face /
    Optimum: input_ids, attention_mask, position_ids,
    past_key_values.N.key/value in; logits, present.N.key/value out) is
    checked when it opens; a model this runtime cannot drive raises
    xonnx.NotImplemented, naming what is missing.

        g = xonnx.Generator("decoder.onnx")
        g.generate([[1, 2, 3]], max_new_tokens=16)           # greedy
        for seq, token in g.stream([[1, 2, 3]], temperature=0.8, top_p=0.9, seed=4):
            print(seq, token)
    """

    def __init__(self, path, sess_options=None, plugin=None, kv_cache="auto"):
        """`kv_cache`: where the key/value cache lives between steps,
        "device" (allocated once, updated in place by the program), "host"
        (each step's new slots copied back), or "auto" (the device, except
        on xonnx's CPU plugin, which reads host memory in place)."""
        options = sess_options if sess_options is not None else SessionOptions()
        if plugin is not None:
            options.plugin = plugin
        self._g = _xonnx.Generator.open(str(path), options, str(kv_cache))

    @property
    def style(self):
        return self._g.style

    @property
    def kv_cache(self):
        """Where this generator keeps the cache: "host" or "device"."""
        return self._g.kv_cache

    @property
    def layers(self):
        return self._g.layers

    def generate(self, prompts, max_new_tokens=32, *, temperature=None, top_k=None, top_p=None,
                 repetition_penalty=1.0, seed=0, stop_tokens=(), on_token=None):
        """The new token ids of each prompt (a list of lists). Greedy unless
        temperature, top_k or top_p is given. `on_token(sequence, token)` is
        called with each token as it is chosen; returning False stops."""
        greedy = temperature is None and top_k is None and top_p is None
        return self._g.generate([list(map(int, p)) for p in prompts], int(max_new_tokens), greedy,
                                1.0 if temperature is None else float(temperature),
                                0 if top_k is None else int(top_k), 1.0 if top_p is None else float(top_p),
                                float(repetition_penalty), int(seed), [int(t) for t in stop_tokens], on_token)

    def stream(self, prompts, max_new_tokens=32, **sampling):
        """generate(), as an iterator of (sequence, token) pairs as they are
        chosen. Leaving the loop early stops the generation."""
        tokens = queue.Queue(maxsize=64)
        stop = threading.Event()
        done = object()
        failure = []

        def on_token(sequence, token):
            tokens.put((sequence, token))
            return not stop.is_set()

        def run():
            try:
                self.generate(prompts, max_new_tokens, on_token=on_token, **sampling)
            except BaseException as e:  # raised again in the caller's thread
                failure.append(e)
            finally:
                tokens.put(done)

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        try:
            while True:
                item = tokens.get()
                if item is done:
                    break
                yield item
        finally:
            stop.set()
            while worker.is_alive():  # let a blocked put() finish
                try:
                    tokens.get(timeout=0.1)
                except queue.Empty:
                    pass
            worker.join()
        if failure:
            raise failure[0]
