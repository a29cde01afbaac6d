"""The model repository extension (explicit mode: index, load, unload, a
config given with the load) and poll mode (models and versions added,
changed and removed on disk are loaded, reloaded and unloaded)."""
import json
import os
import shutil
import threading
import time

import numpy as np

from conftest import Server, affine_model, raw_b64, save


def index(server):
    status, _, body = server.http("POST", "/v2/repository/index", {})
    assert status == 200, body
    return {(m["name"], m.get("version")): (m["state"], m.get("reason", "")) for m in json.loads(body)}


def test_explicit_mode_load_unload_over_both_transports(repo, tmp_path_factory):
    s = Server(repo, "--model-control-mode", "explicit", "--load-model", "affine",
               "--cache-dir", str(tmp_path_factory.getbasetemp() / "cache"))
    try:
        idx = index(s)
        assert idx[("affine", "1")][0] == "READY" and idx[("affine", "2")][0] == "READY"
        assert idx[("tiny", None)] == ("UNAVAILABLE", "not loaded")
        status, _, body = s.http("POST", "/v2/repository/index", {"ready": True})
        assert {m["name"] for m in json.loads(body)} == {"affine"}
        x = np.ones((1, 3, 32, 32), np.float32)
        assert s.infer_binary("tiny", {"image": x})[0] == 404
        assert s.http("POST", "/v2/repository/models/tiny/load", {})[0] == 200
        assert index(s)[("tiny", "2")][0] == "READY"
        assert s.infer_binary("tiny", {"image": x})[0] == 200
        # Unload over gRPC: queued and running requests finish; new ones are refused.
        r = s.grpc([{"rpc": "RepositoryModelUnload", "request": {"model_name": "tiny"}},
                    {"rpc": "ModelReady", "request": {"name": "tiny"}},
                    {"rpc": "RepositoryModelLoad", "request": {"model_name": "nothing"}}])
        assert r[0]["ok"], r
        assert r[1]["ok"] and not r[1]["response"].get("ready")
        assert r[2]["ok"] is False and r[2]["code"] == 5 and "no such model" in r[2]["details"]
        assert index(s)[("tiny", "1")] == ("UNAVAILABLE", "unloaded")
        assert s.infer_binary("tiny", {"image": x})[0] == 404
        # A load with a config (JSON, as Triton takes it) replaces config.pbtxt.
        config = json.dumps({"max_batch_size": 2, "version_policy": {"specific": {"versions": [1]}}})
        status, _, body = s.http("POST", "/v2/repository/models/affine/load", {"parameters": {"config": config}})
        assert status == 200, body
        status, _, body = s.http("GET", "/v2/models/affine")
        meta = json.loads(body)
        assert meta["versions"] == ["1"], meta
        status, out = s.infer_binary("affine", {"x": np.ones((2, 4), np.float32)})
        assert status == 200 and np.all(out["y"] == 3)
        assert s.infer_binary("affine", {"x": np.ones((3, 4), np.float32)})[0] == 400  # over max_batch_size 2
        # A config that cannot be served is refused with its reason, and the model keeps serving.
        bad = json.dumps({"max_batch_size": 2, "input": [{"name": "x", "data_type": "TYPE_INT64", "dims": [4]}]})
        status, _, body = s.http("POST", "/v2/repository/models/affine/load", {"parameters": {"config": bad}})
        assert status == 400 and "INT64 [4]" in json.loads(body)["error"], body
        assert s.infer_binary("affine", {"x": np.ones((2, 4), np.float32)})[0] == 200
        status, _, body = s.http("POST", "/v2/repository/models/affine/load",
                                 {"parameters": {"file:1/model.onnx": "AAAA", "config": "{}"}})
        assert status == 501
        # Reloads under traffic: every request is answered 200 by the old
        # version or the new one, none gets 503 from the version taken away.
        stop, seen = threading.Event(), []

        def traffic():
            while not stop.is_set():
                seen.append(s.infer_binary("affine", {"x": np.ones((2, 4), np.float32)})[0])

        clients = [threading.Thread(target=traffic) for _ in range(4)]
        for t in clients:
            t.start()
        for _ in range(3):
            assert s.http("POST", "/v2/repository/models/affine/load", {})[0] == 200
        stop.set()
        for t in clients:
            t.join()
        assert seen and set(seen) == {200}, sorted(set(seen))
        assert s.http("GET", "/v2/health/ready")[0] == 200
    finally:
        assert s.stop() == 0


def wait_for(fn, seconds=30):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if fn():
            return True
        time.sleep(0.2)
    return False


def test_poll_mode_follows_the_folders(tmp_path, tmp_path_factory):
    root = str(tmp_path / "models")
    save(affine_model(2.0), os.path.join(root, "a", "1", "model.onnx"))
    s = Server(root, "--model-control-mode", "poll", "--repository-poll-secs", "1",
               "--cache-dir", str(tmp_path_factory.getbasetemp() / "cache"))
    try:
        x = np.ones((1, 4), np.float32)

        def y(version=None):
            status, out = s.infer_binary("a", {"x": x}, version=version)
            return out["y"][0, 0] if status == 200 else status

        assert y() == 3
        # A new version: the policy (latest 1) serves it, and only it.
        save(affine_model(5.0), os.path.join(root, "a", "2", "model.onnx"))
        assert wait_for(lambda: y() == 6), s.text()
        assert y("1") == 404
        # A new model, then its removal.
        save(affine_model(7.0), os.path.join(root, "b", "1", "model.onnx"))
        assert wait_for(lambda: s.infer_binary("b", {"x": x})[0] == 200), s.text()
        shutil.rmtree(os.path.join(root, "b"))
        assert wait_for(lambda: s.infer_binary("b", {"x": x})[0] == 404), s.text()
        # A changed config reloads the model.
        with open(os.path.join(root, "a", "config.pbtxt"), "w") as f:
            f.write("max_batch_size: 2\nversion_policy: { all { } }\n")
        assert wait_for(lambda: y("1") == 3), s.text()
        assert y("2") == 6
        assert s.http("GET", "/v2/health/ready")[0] == 200
    finally:
        assert s.stop() == 0


def test_instances_on_every_device(repo, tmp_path_factory):
    # xonnx's CPU plugin as two devices: each model gets a session on each,
    # and concurrent requests run on both.
    s = Server(repo, "--create-option", "cpu_device_count=2", "--device", "all", "--model-control-mode", "explicit",
               "--load-model", "affine", "--cache-dir", str(tmp_path_factory.getbasetemp() / "cache"))
    try:
        x = np.arange(8, dtype=np.float32).reshape(2, 4)
        r = s.grpc([{"rpc": "load", "concurrency": 8, "seconds": 3, "max_calls": 400, "request": {
            "model_name": "affine", "model_version": "1", "inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 4]}],
            "raw_input_contents": [raw_b64(x)]}}])[0]
        assert r["errors"] == {} and r["mismatched"] == 0 and r["ok"] > 8, r
        status, out = s.infer_binary("affine", {"x": x}, version="1")
        assert status == 200 and np.array_equal(out["y"], x * 2 + 1)
        assert "model 'affine' version 1 is ready (max_batch_size 4, dynamic batching off, 1 instance(s) on " \
               "device(s) 0,1)" in s.text(), s.text()
    finally:
        assert s.stop() == 0
