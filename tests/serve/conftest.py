"""Fixtures of the serving tests: a model repository written here, and
`xonnx serve` started on free ports of 127.0.0.1, with clients for REST
(http.client), gRPC (Node's @grpc/grpc-js, tests/serve/grpc_client.js) and
the command line (`xonnx run`).

Environment: XONNX_BIN (the xonnx command), XONNX_NODE_MODULES (the npm
folder with @grpc/grpc-js), XONNX_EXAMPLE_MODEL (examples/tiny_cnn.onnx).
"""
import base64
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
XONNX = os.environ.get("XONNX_BIN", os.path.join(ROOT, "build", "bin", "xonnx"))
NODE_MODULES = os.environ.get("XONNX_NODE_MODULES", os.path.join(ROOT, "bench", "node_modules"))
EXAMPLE = os.environ.get("XONNX_EXAMPLE_MODEL", os.path.join(ROOT, "examples", "tiny_cnn.onnx"))
PROTO = os.path.join(ROOT, "src", "serve", "proto", "grpc_service.proto")
SLOW_ITERATIONS = 8000  # about 0.2 s a call on the CI machine


def save(model, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def affine_model(scale):
    """y = x * scale + 1 over x [batch, 4]: versions differ by scale."""
    g = h.make_graph(
        [h.make_node("Mul", ["x", "s"], ["xs"]), h.make_node("Add", ["xs", "one"], ["y"])], "affine",
        [h.make_tensor_value_info("x", T.FLOAT, ["batch", 4])], [h.make_tensor_value_info("y", T.FLOAT, ["batch", 4])],
        [nh.from_array(np.array(scale, np.float32), "s"), nh.from_array(np.array(1, np.float32), "one")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def slow_model(iterations=SLOW_ITERATIONS, n=256):
    """A Loop of tanh(x @ W), `iterations` times: a call long enough to fill
    a queue, and one the CPU plugin can stop between iterations."""
    w = (np.random.default_rng(1).standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    body = h.make_graph(
        [h.make_node("MatMul", ["x_in", "W"], ["xw"]), h.make_node("Tanh", ["xw"], ["x_out"]),
         h.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
         h.make_tensor_value_info("x_in", T.FLOAT, ["batch", n])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("x_out", T.FLOAT, ["batch", n])])
    g = h.make_graph(
        [h.make_node("Loop", ["trips", "cond", "x"], ["y"], body=body)], "slow",
        [h.make_tensor_value_info("x", T.FLOAT, ["batch", n])], [h.make_tensor_value_info("y", T.FLOAT, ["batch", n])],
        [nh.from_array(np.array(iterations, np.int64), "trips"), nh.from_array(np.array(True), "cond"),
         nh.from_array(w, "W")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def write_repository(root):
    """tiny (a CNN, versions 1 and 2, batching up to 8), affine (versions 1
    and 2 that differ; the policy serves both), slow (one instance, a queue
    of 2, no batching)."""
    for v in (1, 2):
        os.makedirs(os.path.join(root, "tiny", str(v)), exist_ok=True)
        shutil.copy(EXAMPLE, os.path.join(root, "tiny", str(v), "model.onnx"))
        save(affine_model(float(v + 1)), os.path.join(root, "affine", str(v), "model.onnx"))
    with open(os.path.join(root, "tiny", "config.pbtxt"), "w") as f:
        f.write('name: "tiny"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n'
                "version_policy: { all { } }\n"
                "dynamic_batching { preferred_batch_size: [ 4, 8 ] max_queue_delay_microseconds: 2000 }\n"
                "instance_group [ { count: 1 kind: KIND_CPU } ]\n")
    with open(os.path.join(root, "affine", "config.pbtxt"), "w") as f:
        f.write("max_batch_size: 4\nversion_policy: { all { } }\n"
                'input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
                'output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]\n')
    save(slow_model(), os.path.join(root, "slow", "1", "model.onnx"))
    with open(os.path.join(root, "slow", "config.pbtxt"), "w") as f:
        f.write("max_batch_size: 0\n")


class Server:
    """`xonnx serve` on free ports of 127.0.0.1."""

    def __init__(self, repo, *args, env=None):
        self.log_path = os.path.join(os.path.dirname(repo), "serve-%d.log" % time.monotonic_ns())
        self.access_path = self.log_path + ".access"
        self.log = open(self.log_path, "w")
        cmd = [XONNX, "serve", "--model-repository", repo, "--http-port", "0", "--grpc-port", "0",
               "--metrics-port", "0", "--http-address", "127.0.0.1", "--grpc-address", "127.0.0.1",
               "--metrics-address", "127.0.0.1", "--access-log", self.access_path, *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log,
                                     env=dict(os.environ, **(env or {})))
        self.ports = {}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = self.text()
            for kind in ("HTTP", "gRPC", "metrics"):
                m = re.search(kind + r" listening on 127\.0\.0\.1:(\d+)", text)
                if m:
                    self.ports[kind] = int(m.group(1))
            if re.search(r"xonnx serve: (ready|started)", text):
                return
            if self.proc.poll() is not None:
                raise AssertionError("xonnx serve exited (%s):\n%s" % (self.proc.returncode, text))
            time.sleep(0.05)
        self.proc.kill()
        raise AssertionError("xonnx serve did not start in 120 s:\n" + self.text())

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise AssertionError("xonnx serve did not stop on SIGTERM:\n" + self.text())
        self.log.close()
        return self.proc.returncode

    # --- REST ---
    def http(self, method, path, body=None, headers=None, port=None, timeout=60):
        c = http.client.HTTPConnection("127.0.0.1", port or self.ports["HTTP"], timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
                headers = dict({"Content-Type": "application/json"}, **(headers or {}))
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def infer_binary(self, model, inputs, version=None, outputs=None, params=None, timeout=60):
        """POST .../infer with every input and output as binary data."""
        header = {"inputs": [{"name": n, "shape": list(a.shape), "datatype": wire_type(a.dtype),
                              "parameters": {"binary_data_size": a.nbytes}} for n, a in inputs.items()],
                  "parameters": dict({"binary_data_output": True}, **(params or {}))}
        if outputs:
            header["outputs"] = [{"name": o} for o in outputs]
        head = json.dumps(header).encode()
        body = head + b"".join(np.ascontiguousarray(a).tobytes() for a in inputs.values())
        path = "/v2/models/%s%s/infer" % (model, "/versions/%s" % version if version else "")
        status, hdrs, data = self.http("POST", path, body, {"Inference-Header-Content-Length": str(len(head)),
                                                            "Content-Type": "application/octet-stream"},
                                       timeout=timeout)
        if status != 200:
            return status, json.loads(data)
        n = int(hdrs["Inference-Header-Content-Length"])
        meta = json.loads(data[:n])
        out, at = {}, n
        for o in meta["outputs"]:
            size = o["parameters"]["binary_data_size"]
            out[o["name"]] = np.frombuffer(data[at:at + size], dtype=numpy_type(o["datatype"])).reshape(o["shape"])
            at += size
        return status, out

    # --- gRPC ---
    def grpc(self, calls, timeout=300):
        r = subprocess.run(["node", os.path.join(HERE, "grpc_client.js"), PROTO, "127.0.0.1:%d" % self.ports["gRPC"]],
                           input=json.dumps(calls), capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, NODE_PATH=NODE_MODULES))
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def metrics(self):
        status, _, body = self.http("GET", "/metrics", port=self.ports["metrics"])
        assert status == 200
        values = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values


_TYPES = {"FP32": np.float32, "FP64": np.float64, "INT64": np.int64, "INT32": np.int32, "UINT8": np.uint8,
          "BOOL": np.bool_, "FP16": np.float16, "INT8": np.int8}


def wire_type(dtype):
    for k, v in _TYPES.items():
        if np.dtype(v) == np.dtype(dtype):
            return k
    raise ValueError(dtype)


def numpy_type(wire):
    return _TYPES[wire]


def raw_b64(a):
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()


@pytest.fixture(scope="session")
def repo(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("serve") / "models")
    write_repository(root)
    return root


@pytest.fixture(scope="module")
def server(repo, tmp_path_factory):
    s = Server(repo, "--cache-dir", str(tmp_path_factory.getbasetemp() / "cache"))
    yield s
    assert s.stop() == 0, s.text()


def xonnx_run(model, inputs, tmp):
    """`xonnx run`'s outputs for the same inputs (.npy files in, out)."""
    args = [XONNX, "run", model, "--output-dir", str(tmp), "--output-format", "npy"]
    for name, a in inputs.items():
        p = os.path.join(str(tmp), name + ".npy")
        np.save(p, a)
        args += ["--input", "%s=%s" % (name, p)]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return np.load(os.path.join(str(tmp), "output_0.npy"))
