"""The Open Inference Protocol over both transports: health, metadata,
inference (JSON, binary, gRPC raw and typed contents) equal to `xonnx run`
bit for bit, versions, requested outputs, request ids."""
import base64
import json

import numpy as np

from conftest import EXAMPLE, raw_b64, xonnx_run


def test_health_and_metadata_over_rest(server):
    assert server.http("GET", "/v2/health/live")[:1] == (200,)
    status, _, body = server.http("GET", "/v2/health/ready")
    assert (status, body) == (200, b"")
    status, _, body = server.http("GET", "/v2")
    meta = json.loads(body)
    assert meta["name"] == "xonnx" and "binary_tensor_data" in meta["extensions"]
    assert "model_repository" in meta["extensions"]
    status, _, body = server.http("GET", "/v2/models/tiny")
    meta = json.loads(body)
    assert meta["versions"] == ["2", "1"] and meta["platform"] == "onnxruntime_onnx"
    assert meta["inputs"] == [{"name": "image", "datatype": "FP32", "shape": [-1, 3, 32, 32]}]
    assert meta["outputs"] == [{"name": "probs", "datatype": "FP32", "shape": [-1, 10]}]
    status, _, body = server.http("GET", "/v2/models/tiny/versions/1")
    assert json.loads(body)["versions"] == ["1"]
    assert server.http("GET", "/v2/models/tiny/versions/1/ready")[0] == 200
    assert server.http("GET", "/v2/models/tiny/versions/7/ready")[0] == 400  # as Triton: "not ready"
    status, _, body = server.http("GET", "/v2/models/nothing")
    assert status == 404 and "unknown model" in json.loads(body)["error"]
    status, _, body = server.http("GET", "/v2/no/such/path")
    assert status == 404 and json.loads(body) == {"error": "Not Found"}
    # Models without config.pbtxt are completed from the model: slow's
    # config has max_batch_size 0, so its shapes are the model's own.
    status, _, body = server.http("GET", "/v2/models/slow")
    assert json.loads(body)["inputs"][0]["shape"] == [-1, 256]


def test_infer_equals_xonnx_run_bit_for_bit(server, tmp_path):
    rng = np.random.default_rng(3)
    for batch in (1, 4, 8):  # sizes the server compiles (its buckets), as `xonnx run` does for exactly that size
        x = rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)
        expected = xonnx_run(EXAMPLE, {"image": x}, tmp_path)
        # REST, binary both ways.
        status, out = server.infer_binary("tiny", {"image": x})
        assert status == 200
        assert out["probs"].tobytes() == expected.tobytes()
        # REST, JSON both ways: the decimal text reads back as the same floats.
        req = {"id": "json-%d" % batch,
               "inputs": [{"name": "image", "shape": list(x.shape), "datatype": "FP32", "data": x.tolist()}]}
        status, _, body = server.http("POST", "/v2/models/tiny/versions/1/infer", req)
        assert status == 200, body
        resp = json.loads(body)
        assert resp["id"] == "json-%d" % batch and resp["model_version"] == "1"
        got = np.array(resp["outputs"][0]["data"], np.float32).reshape(resp["outputs"][0]["shape"])
        assert got.tobytes() == expected.tobytes()
        # gRPC, raw and typed contents.
        r = server.grpc([
            {"rpc": "ModelInfer", "request": {"model_name": "tiny", "id": "g", "inputs": [
                {"name": "image", "datatype": "FP32", "shape": list(x.shape)}], "raw_input_contents": [raw_b64(x)]}},
            {"rpc": "ModelInfer", "request": {"model_name": "tiny", "model_version": "2", "inputs": [
                {"name": "image", "datatype": "FP32", "shape": list(x.shape),
                 "contents": {"fp32_contents": x.ravel().tolist()}}]}},
        ])
        for res in r:
            assert res["ok"], res
            raw = base64.b64decode(res["response"]["raw_output_contents"][0])
            assert raw == expected.tobytes()
            assert res["response"]["outputs"][0]["shape"] == [batch, 10]
        assert r[0]["response"]["id"] == "g"


def test_versions_and_requested_outputs(server):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    for version, scale in (("1", 2), ("2", 3), (None, 3)):  # no version: the highest
        status, out = server.infer_binary("affine", {"x": x}, version=version)
        assert status == 200
        np.testing.assert_array_equal(out["y"], x * scale + 1)
    status, out = server.infer_binary("affine", {"x": x}, outputs=["y"])
    assert list(out) == ["y"]
    status, err = server.infer_binary("affine", {"x": x}, outputs=["z"])
    assert status == 400 and "unknown output 'z'" in err["error"]
    status, err = server.infer_binary("affine", {"x": x}, version="3")
    assert status == 404


def test_grpc_metadata_health_and_errors(server):
    x = np.zeros((1, 4), np.float32)
    r = server.grpc([
        {"rpc": "ServerLive"}, {"rpc": "ServerReady"}, {"rpc": "ServerMetadata"},
        {"rpc": "ModelMetadata", "request": {"name": "affine", "version": "1"}},
        {"rpc": "ModelReady", "request": {"name": "affine"}},
        {"rpc": "ModelInfer", "request": {"model_name": "affine", "inputs": [
            {"name": "x", "datatype": "FP64", "shape": [1, 4]}], "raw_input_contents": [raw_b64(x.astype(np.float64))]}},
        {"rpc": "ModelInfer", "request": {"model_name": "affine", "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [1, 4]}], "raw_input_contents": [raw_b64(x), raw_b64(x)]}},
        {"rpc": "ModelInfer", "request": {"model_name": "affine", "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [9, 4]}], "raw_input_contents": [raw_b64(np.zeros((9, 4), np.float32))]}},
        {"rpc": "ModelInfer", "request": {"model_name": "nope"}},
        {"rpc": "RepositoryIndex", "request": {}},
        {"rpc": "HealthCheck", "request": {}},
    ])
    assert r[0]["response"] == {"live": True} and r[1]["response"] == {"ready": True}
    assert r[10]["response"] == {"status": "SERVING"}  # grpc.health.v1, for load balancers and probes
    assert r[2]["response"]["name"] == "xonnx"
    assert r[3]["response"]["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]
    assert r[4]["response"] == {"ready": True}
    assert r[5]["code"] == 3 and "datatype FP64, the model takes FP32" in r[5]["details"]
    assert r[6]["code"] == 3 and "2 raw_input_contents for 1 inputs" in r[6]["details"]
    assert r[7]["code"] == 3 and "batch size 9 is outside [1, 4]" in r[7]["details"]
    assert r[8]["code"] == 5
    names = {(m["name"], m.get("version")) for m in r[9]["response"]["models"]}
    assert {("tiny", "1"), ("tiny", "2"), ("affine", "1"), ("affine", "2"), ("slow", "1")} <= names
    # In model-control mode none the folder decides: load and unload are refused.
    r = server.grpc([{"rpc": "RepositoryModelUnload", "request": {"model_name": "tiny"}}])
    assert r[0]["code"] == 14
    status, _, body = server.http("POST", "/v2/repository/models/tiny/unload", {})
    assert status == 503 and "explicit" in json.loads(body)["error"]


def test_access_log_has_one_line_per_request(server):
    server.http("GET", "/v2/health/live")
    with open(server.access_path) as f:
        lines = [json.loads(line) for line in f]
    infer = [l for l in lines if l["target"].endswith("/infer") and l["status"] == 200]
    assert infer and all(l["model"] and "queue_us" in l and l["transport"] == "http" for l in infer)
    assert any(l["transport"] == "grpc" and l["target"].endswith("ModelInfer") for l in lines)


def test_curl_as_users_call_it(server, tmp_path):
    import subprocess
    base = "http://127.0.0.1:%d" % server.ports["HTTP"]
    run = lambda *a: subprocess.run(["curl", "-sS", "--max-time", "30", *a], capture_output=True, text=True)
    assert run("-f", base + "/v2/health/ready").returncode == 0
    req = tmp_path / "req.json"
    req.write_text(json.dumps({"id": "c1", "inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32",
                                                      "data": [[1, 2, 3, 4]]}]}))
    r = run("-X", "POST", base + "/v2/models/affine/versions/1/infer", "-H", "Content-Type: application/json",
            "-d", "@" + str(req))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"][0]["data"] == [3, 5, 7, 9]
    # curl -d without a Content-Type sends form-urlencoded; infer reads its
    # body itself, so that works at any size (httplib would cap it at 8 KiB).
    r = run("-X", "POST", base + "/v2/models/affine/versions/1/infer", "-d", "@" + str(req))
    assert json.loads(r.stdout)["outputs"][0]["data"] == [3, 5, 7, 9]
    big = tmp_path / "big.json"
    x = np.zeros((1, 3, 32, 32), np.float32)
    big.write_text(json.dumps({"inputs": [{"name": "image", "shape": [1, 3, 32, 32], "datatype": "FP32",
                                          "data": x.ravel().tolist()}]}))
    assert big.stat().st_size > 8192
    r = run("-X", "POST", base + "/v2/models/tiny/infer", "-d", "@" + str(big), "-w", "\n%{http_code}")
    body, code = r.stdout.rsplit("\n", 1)
    assert code == "200" and json.loads(body)["outputs"][0]["shape"] == [1, 10], r.stdout
    # A chunked body (no Content-Length): held, then decoded the same way.
    r = run("-X", "POST", base + "/v2/models/affine/versions/1/infer", "-H", "Content-Type: application/json",
            "-H", "Transfer-Encoding: chunked", "-d", "@" + str(req), "-v")
    assert "Transfer-Encoding: chunked" in r.stderr, r.stderr
    assert json.loads(r.stdout)["outputs"][0]["data"] == [3, 5, 7, 9], r.stdout
