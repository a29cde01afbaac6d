"""The xonnx Python package against the C++ results (the xonnx command on
the same inputs), ONNX's node tests' reference outputs, and ONNX Runtime's
API where the two overlap."""
import concurrent.futures
import os
import subprocess
import sys
import threading

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import xonnx
import xonnx as ort


def image(seed=0, batch=1):
    return np.random.default_rng(seed).random((batch, 3, 32, 32), dtype=np.float32)


def no_cache():
    so = xonnx.SessionOptions()
    so.use_cache = False
    return so


def test_metadata(example):
    s = xonnx.InferenceSession(example, no_cache())
    (inp,) = s.get_inputs()
    (out,) = s.get_outputs()
    assert inp.name == "image" and inp.type == "tensor(float)" and inp.dtype == "float32"
    assert inp.shape[1:] == [3, 32, 32] and isinstance(inp.shape[0], (str, type(None)))
    assert out.name == "probs" and out.type == "tensor(float)"
    assert "xonnx" in s.get_device() or "cpu" in s.get_device().lower()


def test_run_matches_the_cpp_api(example, xonnx_cli, tmp_path):
    x = image(seed=3, batch=2)
    np.save(tmp_path / "x.npy", x)
    subprocess.run([xonnx_cli, "run", example, "--input", f"image={tmp_path / 'x.npy'}", "--output-dir",
                    str(tmp_path / "out"), "--no-cache"], check=True, capture_output=True)
    cpp = numpy_helper.to_array(onnx.load_tensor(str(tmp_path / "out" / "output_0.pb")))
    (py,) = xonnx.InferenceSession(example, no_cache()).run(None, {"image": x})
    assert py.dtype == np.float32 and py.shape == (2, 10)
    np.testing.assert_array_equal(py, cpp)  # the same engine: the same bits
    np.testing.assert_allclose(py.sum(axis=1), 1.0, rtol=1e-5)


def test_from_bytes_and_output_selection(example):
    x = image()
    with open(example, "rb") as f:
        s = xonnx.InferenceSession(f.read(), no_cache())
    (a,) = s.run(["probs"], {"image": x})
    (b,) = xonnx.InferenceSession(example, no_cache()).run(None, {"image": x})
    np.testing.assert_array_equal(a, b)


def test_an_output_asked_for_twice(example):
    s = xonnx.InferenceSession(example, no_cache())
    a, b = s.run(["probs", "probs"], {"image": image()})
    np.testing.assert_array_equal(a, b)
    assert a.shape == (1, 10)


def test_outputs_outlive_the_session(example):
    s = xonnx.InferenceSession(example, no_cache())
    (out,) = s.run(None, {"image": image()})
    expected = out.copy()
    del s
    np.testing.assert_array_equal(out, expected)


# Node tests of several op families, each compared with ONNX's reference
# outputs; every one must exist (a missing case fails, it is not skipped).
NODE_TESTS = [
    "test_conv_with_strides_padding", "test_matmul_2d", "test_gemm_default_no_bias", "test_softmax_axis_1",
    "test_gather_0", "test_relu", "test_maxpool_2d_pads", "test_averagepool_2d_strides", "test_batchnorm_example",
    "test_reduce_mean_keepdims_example", "test_transpose_all_permutations_3", "test_concat_3d_axis_1",
    "test_lstm_defaults", "test_gru_defaults", "test_resize_upsample_scales_nearest", "test_cast_FLOAT_to_FLOAT16",
    "test_argmax_default_axis_example", "test_equal", "test_where_example", "test_strnormalizer_export_monday_casesensintive_lower",
    "test_top_k", "test_cumsum_1d", "test_einsum_batch_matmul", "test_layer_normalization_2d_axis0",
]


@pytest.mark.parametrize("name", NODE_TESTS)
def test_node_test(onnx_tests, name):
    folder = os.path.join(onnx_tests, name)
    assert os.path.isdir(folder), f"{folder} is missing"
    data = os.path.join(folder, "test_data_set_0")
    files = sorted(os.listdir(data))
    load = lambda f: numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f)))  # noqa: E731
    inputs = [load(f) for f in files if f.startswith("input_")]
    expected = [load(f) for f in files if f.startswith("output_")]
    s = xonnx.InferenceSession(os.path.join(folder, "model.onnx"), no_cache())
    feed = {arg.name: value for arg, value in zip(s.get_inputs(), inputs)}
    outputs = s.run(None, feed)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.shape == want.shape
        if want.dtype.kind in "OSU":
            assert got.tolist() == want.astype(object).tolist()
        else:
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_errors_are_exceptions_with_the_cpp_messages(example, tmp_path):
    missing = str(tmp_path / "none.onnx")
    with pytest.raises(xonnx.NoSuchFile) as e:
        xonnx.InferenceSession(missing)
    assert missing in str(e.value) and e.value.code == "NOT_FOUND"
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, xonnx.Error)
    s = xonnx.InferenceSession(example, no_cache())
    with pytest.raises(xonnx.InvalidArgument, match="no input named 'img'.*'image'"):
        s.run(None, {"img": image()})
    with pytest.raises(ValueError, match="has type float64, the model expects float32"):
        s.run(None, {"image": image().astype(np.float64)})
    with pytest.raises(xonnx.InvalidArgument, match="no output named 'nope'"):
        s.run(["nope"], {"image": image()})
    with pytest.raises(xonnx.InvalidArgument, match="shape"):
        s.run(None, {"image": np.zeros((1, 3, 31, 32), np.float32)})
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    with pytest.raises(xonnx.Error, match="bad.onnx"):
        xonnx.InferenceSession(str(tmp_path / "bad.onnx"))


def test_run_async_future_and_callback(example):
    s = xonnx.InferenceSession(example, no_cache())
    xs = [image(seed=i) for i in range(8)]
    expected = [s.run(None, {"image": x})[0] for x in xs]
    futures = [s.run_async(None, {"image": x}) for x in xs]
    for f, want in zip(concurrent.futures.as_completed(futures) and futures, expected):
        np.testing.assert_array_equal(f.result(timeout=60)[0], want)
    got = {}
    done = threading.Event()

    def callback(outputs, user_data, error):
        got["outputs"], got["user_data"], got["error"] = outputs, user_data, error
        done.set()

    s.run_async(None, {"image": xs[0]}, callback=callback, user_data=42)
    assert done.wait(60)
    assert got["error"] == "" and got["user_data"] == 42
    np.testing.assert_array_equal(got["outputs"][0], expected[0])


def test_run_async_error_reaches_the_future(example):
    s = xonnx.InferenceSession(example, no_cache())
    f = s.run_async(None, {"image": np.zeros((1, 3, 31, 32), np.float32)})
    with pytest.raises(xonnx.InvalidArgument, match="shape"):
        f.result(timeout=60)


def test_terminate_cancels(example):
    s = xonnx.InferenceSession(example, no_cache())
    ro = ort.RunOptions()
    ro.terminate = True
    with pytest.raises(xonnx.Cancelled) as e:
        s.run(None, {"image": image()}, ro)
    assert e.value.code == "CANCELLED"
    ro.terminate = False
    assert s.run(None, {"image": image()}, ro)[0].shape == (1, 10)


def test_session_options(example):
    so = xonnx.SessionOptions()
    so.use_cache = False
    so.io_data_type = "bf16"
    so.batch_buckets = [1, 4]
    so.intra_op_num_threads = 1  # the CPU plugin's create option threads=1
    so.add_create_option("use_dnnl=true")
    with pytest.raises(xonnx.InvalidArgument):
        so.data_type = "f8"
    with pytest.raises(xonnx.InvalidArgument):
        so.add_create_option("=1")
    s = xonnx.InferenceSession(example, so)
    assert s.get_inputs()[0].dtype == "bfloat16"
    x = image(batch=3)
    (out,) = s.run(None, {"image": x})  # float32 in, rounded to bfloat16; float32 out
    (ref,) = xonnx.InferenceSession(example, no_cache()).run(None, {"image": x})
    assert out.dtype == np.float32 and out.shape == (3, 10)
    np.testing.assert_allclose(out, ref, atol=2e-2)


def test_program_format(example):
    so = no_cache()
    so.program_format = "stablehlo"
    assert so.program_format == "stablehlo"
    with pytest.raises(xonnx.InvalidArgument):
        so.program_format = "mlir"
    x = image(batch=2)
    (got,) = xonnx.InferenceSession(example, so).run(None, {"image": x})
    (want,) = xonnx.InferenceSession(example, no_cache()).run(None, {"image": x})
    np.testing.assert_array_equal(got, want)


def test_an_onnxruntime_script_runs_unchanged(example):
    # As ONNX Runtime's documentation writes it, with `import xonnx as ort`.
    sess_options = ort.SessionOptions()
    sess_options.graph_optimization_level = 99
    sess = ort.InferenceSession(example, sess_options, providers=["CPUExecutionProvider"])
    input_name = sess.get_inputs()[0].name
    output_name = sess.get_outputs()[0].name
    result = sess.run([output_name], {input_name: image()})
    assert result[0].shape == (1, 10)
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert "CPUExecutionProvider" in ort.get_available_providers()
    # As ONNX Runtime: an unknown provider is skipped with a warning.
    with pytest.warns(UserWarning, match="NoSuchExecutionProvider"):
        sess = ort.InferenceSession(example, providers=["NoSuchExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    # Unless fallback is off.
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    with pytest.raises(xonnx.InvalidArgument, match="NoSuchExecutionProvider"):
        ort.InferenceSession(example, so, providers=["NoSuchExecutionProvider"])


@pytest.mark.parametrize("first", ["xonnx", "torch"])
def test_shares_glog_with_torch_in_either_order(example, first):
    # Both set up glog (one process-wide logger): whichever comes first, the
    # other must not set it up again (glog aborts on a second InitGoogleLogging).
    code = f"""
import sys, numpy as np
order = {["xonnx", "torch"] if first == "xonnx" else ["torch", "xonnx"]!r}
for name in order:
    if name == "torch":
        import torch
    else:
        import xonnx
        s = xonnx.InferenceSession(sys.argv[1])
        (p,) = s.run(None, {{"image": np.zeros((1, 3, 32, 32), np.float32)}})
        assert p.shape == (1, 10)
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code, example], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, XONNX_CACHE_DIR=os.environ.get("XONNX_CACHE_DIR", "")))
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_making_a_session_does_not_change_its_options(example, tmp_path):
    # Before: the session wrote its plugin, a `threads=` create option per
    # session and (with profiling) its trace file into the caller's object.
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "trace")
    sessions = [ort.InferenceSession(example, so, providers=["CPUExecutionProvider"]) for _ in range(3)]
    assert so.plugin == "" and so.profile_file == ""
    for s in sessions:
        assert s.get_session_options().plugin == "cpu"
        assert s.get_session_options().profile_file.startswith(str(tmp_path / "trace"))
        s.run(None, {"image": image()})
    assert sessions[0].end_profiling().endswith(".json")


def test_run_with_an_empty_output_list_returns_every_output(example):
    sess = ort.InferenceSession(example)
    assert len(sess.run([], {"image": image()})) == len(sess.get_outputs())
