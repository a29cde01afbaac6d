"""Load on loopback: 64 concurrent REST clients (hey) for 30 s and 64
concurrent gRPC callers, with no error and every answer right; the
metrics then show the requests and the batches the dynamic batcher made.
XONNX_SERVE_LOAD_SECONDS shortens the REST run for a quick local look (CI
runs the full 30 s)."""
import json
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import raw_b64, xonnx_run, EXAMPLE

SECONDS = int(os.environ.get("XONNX_SERVE_LOAD_SECONDS", "30"))


def test_64_rest_clients_for_30_seconds_without_an_error(server, tmp_path):
    x = np.random.default_rng(11).standard_normal((1, 3, 32, 32)).astype(np.float32)
    body = tmp_path / "request.json"
    body.write_text(json.dumps({"inputs": [{"name": "image", "shape": [1, 3, 32, 32], "datatype": "FP32",
                                            "data": x.ravel().tolist()}]}))
    before = server.metrics()
    url = "http://127.0.0.1:%d/v2/models/tiny/versions/2/infer" % server.ports["HTTP"]
    r = subprocess.run(["hey", "-z", "%ds" % SECONDS, "-c", "64", "-t", "20", "-m", "POST", "-T", "application/json",
                        "-D", str(body), url], capture_output=True, text=True, timeout=SECONDS + 120)
    assert r.returncode == 0, r.stderr
    codes = dict((int(c), int(n)) for c, n in re.findall(r"\[(\d+)\]\s+(\d+) responses", r.stdout))
    assert "Error distribution" not in r.stdout, r.stdout
    assert list(codes) == [200] and codes[200] > 64, r.stdout
    after = server.metrics()
    key = '{model="tiny",version="2"}'
    served = after["nv_inference_request_success" + key] - before.get("nv_inference_request_success" + key, 0)
    assert served == codes[200]
    # The batcher merged requests: fewer executions than requests, and
    # some executions of more than one row.
    executions = after["nv_inference_exec_count" + key] - before.get("nv_inference_exec_count" + key, 0)
    assert executions < served
    assert after['xonnx_inference_batch_size_bucket{model="tiny",version="2",le="1"}'] < \
        after['xonnx_inference_batch_size_count{model="tiny",version="2"}']
    assert after["nv_inference_queue_duration_us" + key] > 0
    print("hey: %d requests in %d s, %.1f executions per 10 requests" % (served, SECONDS, 10 * executions / served))


def test_64_grpc_callers_all_answered_alike(server, tmp_path):
    x = np.random.default_rng(12).standard_normal((1, 3, 32, 32)).astype(np.float32)
    expected = xonnx_run(EXAMPLE, {"image": x}, tmp_path)
    r = server.grpc([{"rpc": "load", "concurrency": 64, "seconds": 10, "max_calls": 20000, "request": {
        "model_name": "tiny", "inputs": [{"name": "image", "datatype": "FP32", "shape": [1, 3, 32, 32]}],
        "raw_input_contents": [raw_b64(x)]}}, {"rpc": "ModelInfer", "request": {
        "model_name": "tiny", "inputs": [{"name": "image", "datatype": "FP32", "shape": [1, 3, 32, 32]}],
        "raw_input_contents": [raw_b64(x)]}}])
    load = r[0]
    assert load["errors"] == {} and load["ok"] == load["calls"] > 64, load
    # Rows computed in a batch may differ from batch 1 in the last bits (the
    # kernels block the batch differently); the mismatch count says how
    # often, and the values must agree to float rounding.
    got = np.frombuffer(__import__("base64").b64decode(r[1]["response"]["raw_output_contents"][0]), np.float32)
    np.testing.assert_allclose(got.reshape(expected.shape), expected, rtol=1e-5, atol=1e-6)
