"""What a production server must do at its limits: a full queue answers 429
at once and the server recovers; a request past its timeout gets 504 and
its run is stopped; malformed requests of every kind get a clear 400 (or
413, 404) and never take the server down; SIGTERM under load answers every
request accepted and exits 0."""
import json
import socket
import threading
import time

import numpy as np
import pytest

from conftest import Server, raw_b64


@pytest.fixture(scope="module")
def limited(repo, tmp_path_factory):
    s = Server(repo, "--max-queue-size", "2", "--cache-dir", str(tmp_path_factory.getbasetemp() / "cache"))
    yield s
    assert s.stop() == 0, s.text()


def slow_input():
    return {"x": np.full((1, 256), 0.5, np.float32)}


def timed(fn, *args, **kw):
    t = time.monotonic()
    r = fn(*args, **kw)
    return r, time.monotonic() - t


def run_one_slow(server):
    status, _ = server.infer_binary("slow", slow_input())
    return status


def test_full_queue_answers_429_at_once_and_recovers(limited):
    # One call runs, two wait (the queue's bound); every other request is
    # refused at once, over both transports.
    results, lock = [], threading.Lock()

    def client():
        r, seconds = timed(limited.infer_binary, "slow", slow_input())
        with lock:
            results.append((r[0], seconds))

    threads = [threading.Thread(target=client) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = sorted(s for s, _ in results)
    assert codes.count(200) >= 1 and codes.count(429) >= 8, codes
    assert set(codes) <= {200, 429}
    assert all(seconds < 0.5 for s, seconds in results if s == 429), results
    g = limited.grpc([{"rpc": "load", "concurrency": 12, "seconds": 30, "max_calls": 12, "request": {
        "model_name": "slow", "inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 256]}],
        "raw_input_contents": [raw_b64(slow_input()["x"])]}}])[0]
    assert g["ok"] >= 1 and g["errors"].get("8", 0) >= 8 and g["ok"] + g["errors"]["8"] == 12, g  # RESOURCE_EXHAUSTED
    assert run_one_slow(limited) == 200  # recovered
    m = limited.metrics()
    assert m['nv_inference_request_failure{model="slow",version="1",reason="REJECTED"}'] >= 9


def access_lines(server):
    with open(server.access_path) as f:
        return [json.loads(line) for line in f]


def test_timeout_gets_504_and_stops_the_run(limited):
    # Alone, a request whose timeout is shorter than its run: 504, and the
    # run stops there (its compute time in the access log is the timeout's,
    # not a whole run's).
    _, alone = timed(run_one_slow, limited)
    (status, err), seconds = timed(limited.infer_binary, "slow", slow_input(), params={"timeout": 30000})
    assert status == 504 and seconds < 0.5, (status, err, seconds)
    # The access log's line is written just after the answer goes out.
    for _ in range(100):
        stopped = [l for l in access_lines(limited) if l["status"] == 504]
        if stopped:
            break
        time.sleep(0.02)
    stopped = stopped[-1]
    assert stopped["batch_rows"] == 1 and stopped["compute_us"] < 0.5 * alone * 1e6, (stopped, alone)
    # Behind a running call: it times out in the queue, at its deadline.
    first = threading.Thread(target=run_one_slow, args=(limited,))
    first.start()
    time.sleep(0.03)
    (status, err), seconds = timed(limited.infer_binary, "slow", slow_input(), params={"timeout": 50000})
    first.join()
    assert status == 504 and 0.04 < seconds < 0.5, (status, err, seconds)
    assert "queue" in err["error"]
    # gRPC: DEADLINE_EXCEEDED.
    g = limited.grpc([{"rpc": "ModelInfer", "request": {
        "model_name": "slow", "parameters": {"timeout": {"int64_param": 10000}},
        "inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 256]}],
        "raw_input_contents": [raw_b64(slow_input()["x"])]}}])
    assert g[0]["code"] == 4, g


def raw_http(port, data, read=True, timeout=10):
    """Sends bytes as they are and returns the status line's code (None if
    the server closed without answering)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        if not read:
            return None
        reply = b""
        while b"\r\n" not in reply:
            chunk = s.recv(4096)
            if not chunk:
                return None
            reply += chunk
        return int(reply.split(b" ")[1])
    finally:
        s.close()


def post(path, body, extra=b"", length=None):
    length = len(body) if length is None else length
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
            b"Content-Length: " + str(length).encode() + b"\r\n\r\n" + body)


def test_malformed_requests_get_clear_errors(limited):
    port = limited.ports["HTTP"]
    x = np.ones((1, 4), np.float32).tobytes()
    head = json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32",
                                   "parameters": {"binary_data_size": 16}}]}).encode()
    cases = [
        (b'{"inputs": [', None, "malformed JSON"),
        (b"[]", None, "JSON object"),
        (json.dumps({"inputs": [{"name": "q", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}).encode(),
         None, "unexpected input 'q'"),
        (json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "INT64", "data": [1, 2, 3, 4]}]}).encode(),
         None, "datatype INT64, the model takes FP32"),
        (json.dumps({"inputs": [{"name": "x", "shape": [1, 5], "datatype": "FP32", "data": [1, 2, 3, 4, 5]}]}).encode(),
         None, "shape [1,5], the model takes [-1,4]"),
        (json.dumps({"inputs": [{"name": "x", "shape": [1 << 20, 1 << 20, 1 << 20], "datatype": "FP32",
                                 "data": [1]}]}).encode(), None, "more than a request may carry"),
        (json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, 2]}]}).encode(),
         None, "has 2 elements"),
        (head + x[:10], len(head), "only 10 bytes of binary data remain"),
        (head + x + b"!!", len(head), "not claimed"),
        (head + x, len(head) + 100, "outside the body"),
        (head + x, "abc", "not an integer"),
        (json.dumps({"inputs": []}).encode(), None, "input 'x' is missing"),
    ]
    for body, header, message in cases:
        hdrs = {"Inference-Header-Content-Length": str(header)} if header is not None else {}
        status, _, reply = limited.http("POST", "/v2/models/affine/infer", body,
                                        dict({"Content-Type": "application/json"}, **hdrs))
        assert status == 400, (body[:80], reply)
        assert message in json.loads(reply)["error"], (message, reply)
    # Wrong content lengths and truncated bodies, on raw sockets: the
    # server answers or closes; it never hangs or falls over.
    good = json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}).encode()
    assert raw_http(port, post("/v2/models/affine/infer", good)) == 200
    assert raw_http(port, post("/v2/models/affine/infer", good[:20], length=len(good)), read=False) is None
    assert raw_http(port, post("/v2/models/affine/infer", good, length=10)) == 400
    assert raw_http(port, post("/v2/models/affine/infer", b"", length=-5)) in (400, 413, None)
    assert raw_http(port, b"GARBAGE\r\n\r\n") in (400, None)
    assert raw_http(port, post("/v2/models/affine/infer", b"x" * 100, length=1 << 40)) in (413, None)
    status, _, reply = limited.http("POST", "/v2/models/affine/infer", b"{" * 200000)
    assert status == 400
    status, _, reply = limited.http("GET", "/v2/models/affine/infer")
    assert status == 404
    # gRPC: raw contents of the wrong size, an unknown datatype.
    g = limited.grpc([
        {"rpc": "ModelInfer", "request": {"model_name": "affine", "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [1, 4]}], "raw_input_contents": [raw_b64(b"\0" * 15)]}},
        {"rpc": "ModelInfer", "request": {"model_name": "affine", "inputs": [
            {"name": "x", "datatype": "FLOAT", "shape": [1, 4]}], "raw_input_contents": [raw_b64(x)]}},
        {"rpc": "ModelInfer", "request": {"model_name": "affine", "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [1, 4], "contents": {"fp32_contents": [1, 2]}}]}},
        # A few bytes declaring 8 GiB: refused before anything is allocated.
        {"rpc": "ModelInfer", "request": {"model_name": "affine", "inputs": [
            {"name": "x", "datatype": "FP64", "shape": [1 << 30], "contents": {}}]}},
    ])
    assert [r["code"] for r in g] == [3, 3, 3, 3], g
    assert "15 bytes of data" in g[0]["details"] and "unknown datatype" in g[1]["details"]
    # Still serving.
    assert limited.http("GET", "/v2/health/ready")[0] == 200
    assert raw_http(port, post("/v2/models/affine/infer", good)) == 200


def read_response(f):
    """One HTTP response from a socket's file: (status, body)."""
    status = int(f.readline().split(b" ")[1])
    length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, f.read(length)


def binary_post(model, x):
    head = json.dumps({"inputs": [{"name": "image" if model == "tiny" else "x", "shape": list(x.shape),
                                   "datatype": "FP32", "parameters": {"binary_data_size": x.nbytes}}]}).encode()
    return post("/v2/models/%s/infer" % model, head + x.tobytes(),
                extra=b"Inference-Header-Content-Length: " + str(len(head)).encode() + b"\r\n")


def test_connections_any_pieces_pipelined_and_idle(repo, tmp_path_factory):
    s = Server(repo, "--cache-dir", str(tmp_path_factory.getbasetemp() / "cache"))
    try:
        port = s.ports["HTTP"]
        # A 98 KB body sent in pieces of every size, slowly: the same answer
        # as sent whole, on one keep-alive connection.
        x = np.random.default_rng(3).standard_normal((8, 3, 32, 32)).astype(np.float32)
        whole = binary_post("tiny", x)
        conn = socket.create_connection(("127.0.0.1", port), timeout=30)
        f = conn.makefile("rb")
        conn.sendall(whole)
        status, expected = read_response(f)
        assert status == 200, expected
        rng = np.random.default_rng(4)
        for _ in range(3):
            at = 0
            while at < len(whole):
                n = int(rng.choice([1, 7, 1000, 4096, 65537]))
                conn.sendall(whole[at:at + n])
                at += n
                if rng.random() < 0.05:
                    time.sleep(0.002)
            assert read_response(f) == (200, expected)
        # Three requests in one write: three answers, in order.
        a = [np.full((1, 4), v, np.float32) for v in (1, 2, 3)]
        conn.sendall(b"".join(binary_post("affine", v) for v in a))
        for v in a:
            status, body = read_response(f)
            assert status == 200, body
            assert json.loads(body)["outputs"][0]["data"] == (v * 3 + 1).ravel().tolist(), body
        # The connection is left idle (keep-alive, 5 s): a SIGTERM still
        # stops the server at once, closing it.
        t = time.monotonic()
        assert s.stop() == 0
        assert time.monotonic() - t < 3, time.monotonic() - t
        assert f.read() == b""
        conn.close()
    finally:
        s.stop()


def test_exit_timeout_cancels_what_is_left(repo, tmp_path_factory):
    # Ten 0.2 s calls queued and SIGTERM with --exit-timeout-secs 1: the
    # queued ones and the running one are answered 503 at the timeout, and
    # the process exits then, not after all ten.
    s = Server(repo, "--exit-timeout-secs", "1", "--cache-dir", str(tmp_path_factory.getbasetemp() / "cache"))
    statuses, lock = [], threading.Lock()

    def client():
        status, _ = s.infer_binary("slow", slow_input())
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=client) for _ in range(10)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    s.proc.send_signal(15)
    code = s.proc.wait(30)
    for t in threads:
        t.join()
    text = s.text()
    s.log.close()
    assert code == 0 and time.monotonic() - t0 < 3, text
    assert "cancelled, answered 503" in text
    assert len(statuses) == 10 and set(statuses) <= {200, 503} and statuses.count(503) >= 4, statuses


def test_a_port_in_use_is_an_error(limited, repo):
    import subprocess
    from conftest import XONNX
    r = subprocess.run([XONNX, "serve", "--model-repository", repo, "--http-address", "127.0.0.1", "--http-port",
                        str(limited.ports["HTTP"]), "--allow-grpc", "false", "--allow-metrics", "false",
                        "--model-control-mode", "explicit"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "cannot listen on 127.0.0.1:%d" % limited.ports["HTTP"] in r.stderr, r.stderr


def test_body_over_the_limit_gets_413(repo, tmp_path_factory):
    s = Server(repo, "--http-max-input-size", "1000", "--cache-dir", str(tmp_path_factory.getbasetemp() / "cache"))
    try:
        status, _, reply = s.http("POST", "/v2/models/affine/infer", b"[" + b"1," * 1000 + b"1]",
                                  {"Content-Type": "application/json"})
        assert status == 413 and "larger than" in json.loads(reply)["error"]
        g = s.grpc([{"rpc": "ModelInfer", "request": {"model_name": "affine", "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [100, 4]}], "raw_input_contents": [raw_b64(b"\0" * 1600)]}}])
        assert g[0]["code"] == 8, g
    finally:
        assert s.stop() == 0


def test_sigterm_under_load_answers_everything(repo, tmp_path_factory):
    # A generous exit timeout: under the sanitizers, on a busy machine, the
    # calls in flight take seconds; the drain must wait for them, not cut
    # them (the timeout's own behaviour is the next test's).
    s = Server(repo, "--exit-timeout-secs", "120", "--cache-dir", str(tmp_path_factory.getbasetemp() / "cache"))
    outcomes, lock, stop = [], threading.Lock(), threading.Event()
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)

    def client():
        # A new connection per request, and no more requests after a 503
        # (as a load balancer stops sending to a draining server).
        while not stop.is_set():
            try:
                status, _ = s.infer_binary("tiny", {"image": x})
            except ConnectionRefusedError:
                status = "refused"
            except (ConnectionError, OSError) as e:
                status = "lost: %r" % e
            with lock:
                outcomes.append(status)
            if status != 200:
                return

    slow = {}

    def slow_client():
        slow["status"] = s.infer_binary("slow", slow_input())[0]

    threads = [threading.Thread(target=client) for _ in range(16)]
    for t in threads:
        t.start()
    time.sleep(0.9)
    # A long call in flight when SIGTERM comes: it must finish, not be dropped.
    threads.append(threading.Thread(target=slow_client))
    threads[-1].start()
    time.sleep(0.1)
    s.proc.send_signal(15)
    t0 = time.monotonic()
    code = s.proc.wait(150)
    stop.set()
    for t in threads:
        t.join()
    text = s.text()
    s.log.close()
    assert code == 0, text
    assert time.monotonic() - t0 < 120
    assert "draining" in text and "stopped" in text and "cancelled" not in text, text
    lost = [o for o in outcomes if isinstance(o, str) and o.startswith("lost")]
    assert not lost, (lost, text)
    assert outcomes.count(200) > 16 and set(outcomes) <= {200, 503, "refused"}, outcomes
    assert slow["status"] == 200  # in flight at SIGTERM: finished, not dropped
