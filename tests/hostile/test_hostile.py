"""Hostile inputs, class by class: values and models nobody chose, each
answered as numpy and ONNX Runtime answer it or refused with an error that
names the node, never a wrong result with success. docs/security.md lists
the classes and their behaviour.

Run with the build's Python package on the path (tests/CMakeLists.txt):
    python3 -m pytest tests/hostile
"""
import os
import tempfile
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import xonnx
from graphs import I64_MAX, I64_MIN, const, f32, i64, model, session

# --- slices, reductions, windows, attributes -----------------------------------

EXTREMES = [I64_MIN, -1001, -8, -7, -3, -1, 0, 1, 3, 6, 7, 8, 1001, I64_MAX]


@pytest.mark.parametrize("step", [I64_MIN, -I64_MAX, -9, -2, -1, 1, 2, 9, I64_MAX])
def test_slice_bounds_and_steps_at_the_extremes_follow_the_operator(step):
    x = np.arange(7, dtype=np.float32)
    cases = [(s, e) for s in EXTREMES for e in EXTREMES]
    m = model([h.make_node("Slice", ["x", f"s{k}", f"e{k}", "axes", "steps"], [f"y{k}"])
               for k in range(len(cases))], [f32("x", [7])],
              [h.make_tensor_value_info(f"y{k}", T.FLOAT, [None]) for k in range(len(cases))],
              [const("axes", np.array([0], np.int64)), const("steps", np.array([step], np.int64))] +
              [const(f"s{k}", np.array([s], np.int64)) for k, (s, _) in enumerate(cases)] +
              [const(f"e{k}", np.array([e], np.int64)) for k, (_, e) in enumerate(cases)])
    outs = session(m).run(None, {"x": x})
    for (s, e), y in zip(cases, outs):
        want = onnx_slice(x, int(s), int(e), int(step))
        np.testing.assert_array_equal(y, want, err_msg=f"x[{s}:{e}:{step}]")
        if step > 0:  # numpy's slices, with Python's unbounded integers, agree
            np.testing.assert_array_equal(y, x[int(s):int(e):int(step)], err_msg=f"x[{s}:{e}:{step}]")


def onnx_slice(x, s, e, step):
    """ONNX's Slice on a vector, in unbounded integers, as the operator's
    text says (and ONNX Runtime does): negative bounds count from the end,
    then starts clamp to [0, d] ([0, d - 1] for negative steps) and ends to
    [0, d] ([-1, d - 1]). For negative steps this differs from numpy, whose
    starts before the beginning select nothing."""
    d = len(x)
    s, e = s + d if s < 0 else s, e + d if e < 0 else e
    if step > 0:
        s, e = min(max(s, 0), d), min(max(e, 0), d)
        return x[s:e:step]
    s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
    return np.array([x[i] for i in range(s, e, step)], np.float32)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("by", ["sizes", "scales"])
def test_resizing_to_one_element_with_pytorch_half_pixel_takes_the_first(mode, by):
    # The operator: x_original = 0 when the output has one element, counted
    # as an integer (scale 0.3 of 5 is 1.5 wide and gives one element).
    target = (["x", "", "", "sizes"], const("sizes", np.array([1, 1, 1, 3], np.int64))) if by == "sizes" else \
        (["x", "", "scales"], const("scales", np.array([1, 1, 0.3, 1], np.float32)))
    m = model([h.make_node("Resize", target[0], ["y"], mode=mode,
                           coordinate_transformation_mode="pytorch_half_pixel")], [f32("x", [1, 1, 5, 3])],
              [f32("y", [1, 1, 1, 3])], [target[1]])
    x = (np.arange(15, dtype=np.float32) ** 2).reshape(1, 1, 5, 3)
    (y,) = session(m).run(None, {"x": x})
    np.testing.assert_allclose(y, x[:, :, :1, :], rtol=1e-6)


@pytest.mark.parametrize("mode", ["ceil", "floor", "round_prefer_floor", "round_prefer_ceil"])
def test_nearest_resize_by_sizes_picks_the_element_exact_arithmetic_picks(mode):
    """x_original = x * in / out: at exact integers (11 * 60 / 22 = 30) a
    division by the rounded scale landed past them, and ceil went one on."""
    import math
    from fractions import Fraction
    pick = {"ceil": math.ceil, "floor": math.floor,
            "round_prefer_floor": lambda f: math.ceil(f - Fraction(1, 2)),
            "round_prefer_ceil": lambda f: math.floor(f + Fraction(1, 2))}[mode]
    for n_in, n_out in [(60, 22), (7, 3), (10, 30), (33, 45), (45, 33), (64, 19)]:
        m = model([h.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest",
                               coordinate_transformation_mode="asymmetric", nearest_mode=mode)],
                  [f32("x", [1, 1, 1, n_in])], [f32("y", [1, 1, 1, n_out])],
                  [const("sizes", np.array([1, 1, 1, n_out], np.int64))])
        (y,) = session(m).run(None, {"x": np.arange(n_in, dtype=np.float32).reshape(1, 1, 1, n_in)})
        want = [min(n_in - 1, max(0, pick(Fraction(k * n_in, n_out)))) for k in range(n_out)]
        np.testing.assert_array_equal(y.ravel(), want, err_msg=f"{n_in} -> {n_out}")


def test_argmax_over_an_empty_axis_is_refused():
    m = model([h.make_node("ArgMax", ["x"], ["y"], name="am", axis=1, keepdims=0)], [f32("x", [3, 0])],
              [i64("y", [3])])
    with pytest.raises(xonnx.InvalidArgument, match=r"'am'.*axis 1 has no elements"):
        session(m).run(None, {"x": np.zeros((3, 0), np.float32)})


def test_reducing_an_empty_axis_gives_the_identity():
    m = model([h.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)], [f32("x", [3, 0])], [f32("y", [3])],
              [const("axes", np.array([1], np.int64))])
    (y,) = session(m).run(None, {"x": np.zeros((3, 0), np.float32)})
    np.testing.assert_array_equal(y, [0, 0, 0])


@pytest.mark.parametrize("op", ["Conv", "MaxPool", "AveragePool"])
def test_a_window_larger_than_the_padded_input_is_refused(op):
    attrs = {"kernel_shape": [5, 5], "pads": [1, 0, 0, 1]}
    ins = ["x", "w"] if op == "Conv" else ["x"]
    m = model([h.make_node(op, ins, ["y"], name="wide", **attrs)], [f32("x", [1, 1, 3, 3])],
              [f32("y", [1, 1, 1, 1])], [const("w", np.ones((1, 1, 5, 5), np.float32))] if op == "Conv" else [])
    with pytest.raises(xonnx.InvalidArgument, match=r"'wide'.*window spans 5 elements of spatial dim 0"):
        session(m).run(None, {"x": np.ones((1, 1, 3, 3), np.float32)})


def test_constant_of_shape_with_several_values_is_refused():
    m = model([h.make_node("ConstantOfShape", ["shape"], ["y"], name="fill",
                           value=h.make_tensor("v", T.FLOAT, [3], [1, 2, 3]))], [], [f32("y", [2])],
              [const("shape", np.array([2], np.int64))])
    with pytest.raises(xonnx.InvalidArgument, match=r"'fill'.*value must hold one element; it holds 3"):
        session(m).run(None, {})


def test_inputs_whose_dynamic_first_dims_differ_are_not_a_batch():
    m = model([h.make_node("MatMul", ["a", "b"], ["y"])],
              [f32("a", ["M", "K"]), f32("b", ["K", "N"])], [f32("y", ["M", "N"])])
    a = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    (y,) = session(m).run(None, {"a": a, "b": b})
    np.testing.assert_allclose(y, a @ b, rtol=1e-5)


def test_an_if_whose_branches_differ_in_rank_runs_on_the_host():
    then_g = h.make_graph([h.make_node("Squeeze", ["x", "one_axis"], ["t"])], "then", [], [f32("t", [150])])
    else_g = h.make_graph([h.make_node("Identity", ["x"], ["e"])], "else", [], [f32("e", [150, 1])])
    m = model([h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
               h.make_node("Relu", ["y"], ["z"])],
              [f32("x", [150, 1]), h.make_tensor_value_info("c", T.BOOL, [])], [f32("z", [None])],
              [const("one_axis", np.array([1], np.int64))])
    s = session(m)
    x = np.random.default_rng(3).standard_normal((150, 1)).astype(np.float32)
    (t,) = s.run(None, {"x": x, "c": np.array(True)})
    (e,) = s.run(None, {"x": x, "c": np.array(False)})
    np.testing.assert_array_equal(t, np.maximum(x[:, 0], 0))
    np.testing.assert_array_equal(e, np.maximum(x, 0))


def test_empty_tensors_keep_their_shapes():
    """A detector that finds nothing: gathers from an empty axis and
    concatenations of empty parts still have ONNX's shapes."""
    m = model([h.make_node("Gather", ["boxes", "keep"], ["kept"], axis=0),
               h.make_node("Split", ["kept", "four"], ["x0", "y0", "x1", "y1"], axis=1),
               h.make_node("Concat", ["x0", "y0", "x1", "y1"], ["out"], axis=1)],
              [f32("boxes", [0, 4]), i64("keep", [0])], [f32("out", [0, 4])],
              [const("four", np.array([1, 1, 1, 1], np.int64))])
    (out,) = session(m).run(None, {"boxes": np.zeros((0, 4), np.float32), "keep": np.zeros(0, np.int64)})
    assert out.shape == (0, 4)


def test_an_if_whose_undeclared_branch_shapes_differ_is_converted_for_the_branch_taken():
    """The condition is known once the graph's values are (here a shape
    read after a data-dependent NonZero): the session binds what it depends
    on and converts the branch it picks."""
    then_g = h.make_graph([h.make_node("Squeeze", ["kept", "one_axis"], ["t"])], "then", [],
                          [h.make_tensor_value_info("t", T.FLOAT, None)])
    else_g = h.make_graph([h.make_node("Identity", ["kept"], ["e"])], "else", [],
                          [h.make_tensor_value_info("e", T.FLOAT, None)])
    # `zero` is a Constant node of the first program: it reaches the If's
    # program as one of its inputs, a value the importer does not know.
    m = model([h.make_node("Constant", [], ["zero"], value=h.make_tensor("z", T.INT64, [], [0])),
               h.make_node("NonZero", ["mask"], ["nz"]),
               h.make_node("Transpose", ["nz"], ["nzt"]),
               h.make_node("GatherND", ["x", "nzt"], ["sel"]),
               h.make_node("Unsqueeze", ["sel", "one_axis"], ["kept"]),
               h.make_node("Shape", ["kept"], ["shape"]),
               h.make_node("Gather", ["shape", "zero"], ["count"]),
               h.make_node("Equal", ["count", "one"], ["single"]),
               h.make_node("If", ["single"], ["y"], then_branch=then_g, else_branch=else_g)],
              [f32("x", [5]), h.make_tensor_value_info("mask", T.BOOL, [5])], [f32("y", [None])],
              [const("one_axis", np.array([1], np.int64)), const("one", np.array(1, np.int64))])
    s = session(m)
    x = np.arange(5, dtype=np.float32)
    (y,) = s.run(None, {"x": x, "mask": np.array([0, 0, 1, 0, 0], bool)})
    np.testing.assert_array_equal(y, [2])
    (y,) = s.run(None, {"x": x, "mask": np.array([1, 0, 1, 0, 1], bool)})
    np.testing.assert_array_equal(y, [[0], [2], [4]])


def test_an_if_on_data_whose_undeclared_branch_shapes_differ_is_refused_not_compiled_per_value():
    then_g = h.make_graph([h.make_node("Unsqueeze", ["x", "zero"], ["t"])], "then", [],
                          [h.make_tensor_value_info("t", T.FLOAT, None)])
    else_g = h.make_graph([h.make_node("Identity", ["x"], ["e"])], "else", [],
                          [h.make_tensor_value_info("e", T.FLOAT, None)])
    m = model([h.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
               h.make_node("Greater", ["total", "zero_f"], ["positive"]),
               h.make_node("If", ["positive"], ["y"], name="branchy", then_branch=then_g, else_branch=else_g)],
              [f32("x", [64])], [f32("y", [None])],
              [const("zero", np.array([0], np.int64)), const("zero_f", np.float32(0))])
    with pytest.raises(xonnx.NotImplemented, match=r"'branchy'.*different shapes.*computed from data"):
        session(m).run(None, {"x": np.ones(64, np.float32)})


def test_an_if_branch_that_cannot_take_these_shapes_is_not_converted_when_not_taken():
    """Silero VAD's 8 kHz path cannot take 16 kHz frames: which path runs
    is decided by a scalar input, so only the branch taken is converted."""
    then_g = h.make_graph([h.make_node("Reshape", ["x", "halves"], ["t"])], "then", [], [f32("t", [2, None])])
    else_g = h.make_graph([h.make_node("Reshape", ["x", "thirds"], ["e"])], "else", [], [f32("e", [3, None])])
    m = model([h.make_node("Equal", ["rate", "r16k"], ["is16k"]),
               h.make_node("If", ["is16k"], ["y"], then_branch=then_g, else_branch=else_g)],
              [f32("x", [None]), i64("rate", [])], [f32("y", [None, None])],
              [const("r16k", np.array(16000, np.int64)), const("halves", np.array([2, -1], np.int64)),
               const("thirds", np.array([3, -1], np.int64))])
    s = session(m)
    x = np.arange(8, dtype=np.float32)  # splits in halves, not in thirds
    np.testing.assert_array_equal(s.run(None, {"x": x, "rate": np.array(16000, np.int64)})[0], x.reshape(2, 4))
    with pytest.raises(xonnx.InvalidArgument, match="Reshape"):
        s.run(None, {"x": x, "rate": np.array(8000, np.int64)})


# --- nesting, length, deadlines ---------------------------------------------------

def nested_loops(depth):
    def body(d):
        if d == 0:
            nodes = [h.make_node("Add", [f"x_in{d}", "one"], [f"x_out{d}"])]
        else:
            nodes = [h.make_node("Constant", [], [f"trip{d}"], value=h.make_tensor("t", T.INT64, [], [1])),
                     h.make_node("Loop", [f"trip{d}", "", f"x_in{d}"], [f"x_out{d}"], body=body(d - 1))]
        nodes.append(h.make_node("Identity", [f"cond_in{d}"], [f"cond_out{d}"]))
        return h.make_graph(nodes, f"body{d}", [i64(f"i{d}", []), h.make_tensor_value_info(f"cond_in{d}", T.BOOL, []),
                                                f32(f"x_in{d}", [2])],
                            [h.make_tensor_value_info(f"cond_out{d}", T.BOOL, []), f32(f"x_out{d}", [2])])
    top = [h.make_node("Constant", [], ["trips"], value=h.make_tensor("t", T.INT64, [], [1])),
           h.make_node("Loop", ["trips", "", "x"], ["y"], body=body(depth - 1))]
    return model(top, [f32("x", [2])], [f32("y", [2])], [const("one", np.ones(2, np.float32))])


def nested_ifs(depth):
    """If(c, then: If(c, then: ... x + 1), else: x) nested `depth` deep."""
    def level(d):
        if d == 0:
            return h.make_graph([h.make_node("Add", ["x", "one"], ["out0"])], "leaf", [], [f32("out0", [2])])
        keep = h.make_graph([h.make_node("Identity", ["x"], [f"same{d}"])], f"else{d}", [], [f32(f"same{d}", [2])])
        return h.make_graph([h.make_node("If", ["c"], [f"out{d}"], then_branch=level(d - 1), else_branch=keep)],
                            f"then{d}", [], [f32(f"out{d}", [2])])
    top = level(depth - 1)
    return model(list(top.node), [f32("x", [2]), h.make_tensor_value_info("c", T.BOOL, [])],
                 [f32(f"out{depth - 1}", [2])], [const("one", np.ones(2, np.float32))])


def test_loops_nested_100_deep_import_in_linear_time():
    x = np.array([0.5, -2], np.float32)
    t0 = time.monotonic()
    (y,) = session(nested_loops(100)).run(None, {"x": x})
    np.testing.assert_array_equal(y, x + 1)
    # Converting each body twice per level took 2^100 times one body.
    assert time.monotonic() - t0 < 60


def test_ifs_nested_40_deep_on_a_run_time_condition():
    x = np.array([0.5, -2], np.float32)
    s = session(nested_ifs(40))
    np.testing.assert_array_equal(s.run(None, {"x": x, "c": np.array(True)})[0], x + 1)
    np.testing.assert_array_equal(s.run(None, {"x": x, "c": np.array(False)})[0], x)


def chain(n):
    nodes = [h.make_node("Add" if k % 2 else "Mul", ["x" if k == 0 else f"v{k - 1}", "c"],
                         ["y" if k == n - 1 else f"v{k}"]) for k in range(n)]
    return model(nodes, [f32("x", [4])], [f32("y", [4])], [const("c", np.ones(4, np.float32))])


@pytest.fixture(scope="module")
def million_node_chain():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "chain.onnx")
        onnx.save(chain(1_000_000), path)
        yield path


def test_a_million_node_chain_imports_and_runs(million_node_chain):
    t0 = time.monotonic()
    o = xonnx.SessionOptions()
    o.use_cache = False
    (y,) = xonnx.InferenceSession(million_node_chain, o).run(None, {"x": np.zeros(4, np.float32)})
    np.testing.assert_array_equal(y, np.full(4, 500_000, np.float32))
    # Quadratic import took minutes at 100,000 nodes.
    assert time.monotonic() - t0 < 300


def test_the_deadline_bounds_the_import(million_node_chain):
    o = xonnx.SessionOptions()
    o.use_cache = False
    o.deadline_ms = 200
    s = xonnx.InferenceSession(million_node_chain, o)
    t0 = time.monotonic()
    with pytest.raises(xonnx.DeadlineExceeded, match="passed its deadline of 200 ms"):
        s.run(None, {"x": np.zeros(4, np.float32)})
    # Stopped between nodes: far from the full import's time.
    assert time.monotonic() - t0 < 10


def test_the_deadline_bounds_the_import_inside_branches():
    """A long chain in an If's branch inside a Loop's body: the deadline
    stops the branch's conversion and is reported as such, not as a branch
    that cannot be converted (whose condition would then be asked for)."""
    n = 200_000
    steps = [h.make_node("Add" if k % 2 else "Mul", ["xb" if k == 0 else f"v{k - 1}", "c1"],
                         ["tout" if k == n - 1 else f"v{k}"]) for k in range(n)]
    then_g = h.make_graph(steps, "then", [], [f32("tout", [4])])
    else_g = h.make_graph([h.make_node("Identity", ["xb"], ["eout"])], "else", [], [f32("eout", [4])])
    body = h.make_graph([h.make_node("ReduceSum", ["xb"], ["s"], keepdims=0),
                         h.make_node("Greater", ["s", "zero"], ["pos"]),
                         h.make_node("If", ["pos"], ["yb"], then_branch=then_g, else_branch=else_g),
                         h.make_node("Identity", ["cin"], ["cout"])], "body",
                        [i64("i", []), h.make_tensor_value_info("cin", T.BOOL, []), f32("xb", [4])],
                        [h.make_tensor_value_info("cout", T.BOOL, []), f32("yb", [4])])
    m = model([h.make_node("Loop", ["trip", "", "x"], ["y"], body=body)], [f32("x", [4])], [f32("y", [4])],
              [const("trip", np.array(1, np.int64)), const("c1", np.ones(4, np.float32)),
               const("zero", np.array(0, np.float32))])
    o = xonnx.SessionOptions()
    o.use_cache = False
    o.deadline_ms = 200
    s = xonnx.InferenceSession(m.SerializeToString(), o)
    t0 = time.monotonic()
    with pytest.raises(xonnx.DeadlineExceeded, match="passed its deadline of 200 ms"):
        s.run(None, {"x": np.ones(4, np.float32)})
    assert time.monotonic() - t0 < 10


def test_a_deadline_too_far_to_count_is_no_deadline():
    o = xonnx.SessionOptions()
    o.use_cache = False
    o.deadline_ms = 10 ** 13  # past what int64 nanoseconds hold
    s = xonnx.InferenceSession(chain(10).SerializeToString(), o)
    (y,) = s.run(None, {"x": np.zeros(4, np.float32)})
    np.testing.assert_array_equal(y, np.full(4, 5, np.float32))


def test_arguments_of_the_wrong_kind_are_one_line_errors():
    s = session(chain(2))
    for feed in (None, [np.zeros(4, np.float32)], {0: np.zeros(4, np.float32)}):
        with pytest.raises(xonnx.InvalidArgument) as e:
            s.run(None, feed)
        assert "\n" not in str(e.value)
    with pytest.raises(xonnx.InvalidArgument, match="output_names must be None or a list"):
        s.run("y", {"x": np.zeros(4, np.float32)})
