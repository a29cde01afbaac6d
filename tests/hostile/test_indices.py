"""Hostile inputs: indices known only at run time, out of range, negative,
in loops and branches, for every op that indexes by a tensor. Each is an
error that names the node and the value, as in ONNX Runtime, never a
clamped or dropped element. docs/security.md lists the classes.

Run with the build's Python package on the path (tests/CMakeLists.txt):
    python3 -m pytest tests/hostile
"""
import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import xonnx
from graphs import I64_MAX, I64_MIN, const, f32, i64, model, session

# --- indices known only at run time ------------------------------------------

def gather_model(op="Gather", axis=0, data_shape=(1000, 8), idx_shape=(4,)):
    out_shape = {"Gather": list(idx_shape) + list(data_shape[1:]), "GatherElements": list(idx_shape)}[op]
    return model([h.make_node(op, ["data", "idx"], ["y"], name="lookup", axis=axis)], [i64("idx", list(idx_shape))],
                 [f32("y", out_shape)], [const("data", np.arange(np.prod(data_shape), dtype=np.float32)
                                               .reshape(data_shape))])


@pytest.mark.parametrize("bad", [1000, 5000, -1001, I64_MAX, I64_MIN])
def test_gather_index_out_of_range_names_the_node(bad):
    s = session(gather_model())
    with pytest.raises(xonnx.InvalidArgument, match=r"node 'lookup' \(Gather.*indices: .* is outside \[-1000, 999\]"):
        s.run(None, {"idx": np.array([0, 5, bad, 1], np.int64)})


def test_gather_negative_indices_count_from_the_end():
    (y,) = session(gather_model()).run(None, {"idx": np.array([-1, -1000, 0, 999], np.int64)})
    data = np.arange(8000, dtype=np.float32).reshape(1000, 8)
    np.testing.assert_array_equal(y, data[[-1, -1000, 0, 999]])


def test_index_checks_can_be_turned_off():
    s = session(gather_model(), check_indices=False)
    s.run(None, {"idx": np.array([0, 5000, 1, 2], np.int64)})  # clamped, as XLA does: no error


def test_gather_elements_out_of_range():
    s = session(gather_model("GatherElements", axis=1, data_shape=(2, 3), idx_shape=(2, 2)))
    with pytest.raises(xonnx.InvalidArgument, match=r"'lookup'.*3 is outside \[-3, 2\]"):
        s.run(None, {"idx": np.array([[0, 1], [3, 0]], np.int64)})


def gather_nd_model():
    return model([h.make_node("GatherND", ["data", "idx"], ["y"], name="nd")], [i64("idx", [2, 2])], [f32("y", [2, 4])],
                 [const("data", np.arange(24, dtype=np.float32).reshape(2, 3, 4))])


def test_gather_nd_checks_each_component_and_wraps_negative_ones():
    s = session(gather_nd_model())
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    (y,) = s.run(None, {"idx": np.array([[-1, -3], [1, 2]], np.int64)})
    np.testing.assert_array_equal(y, np.stack([data[-1, -3], data[1, 2]]))
    with pytest.raises(xonnx.InvalidArgument, match=r"'nd'.*component 1 .* 3 is outside \[-3, 2\]"):
        s.run(None, {"idx": np.array([[0, 3], [1, 2]], np.int64)})


def scatter_nd_model():
    return model([h.make_node("ScatterND", ["data", "idx", "upd"], ["y"], name="put")], [i64("idx", [1, 1])],
                 [f32("y", [3, 2])], [const("data", np.zeros((3, 2), np.float32)),
                                      const("upd", np.ones((1, 2), np.float32))])


def test_scatter_nd_negative_row_updates_the_last_row():
    (y,) = session(scatter_nd_model()).run(None, {"idx": np.array([[-1]], np.int64)})
    np.testing.assert_array_equal(y, [[0, 0], [0, 0], [1, 1]])


def test_scatter_nd_out_of_range_update_is_an_error_not_dropped():
    with pytest.raises(xonnx.InvalidArgument, match=r"'put'.*3 is outside \[-3, 2\]"):
        session(scatter_nd_model()).run(None, {"idx": np.array([[3]], np.int64)})


def test_scatter_elements_out_of_range():
    m = model([h.make_node("ScatterElements", ["data", "idx", "upd"], ["y"], name="se", axis=0)], [i64("idx", [1, 2])],
              [f32("y", [3, 2])], [const("data", np.zeros((3, 2), np.float32)),
                                   const("upd", np.ones((1, 2), np.float32))])
    s = session(m)
    (y,) = s.run(None, {"idx": np.array([[-1, 0]], np.int64)})
    np.testing.assert_array_equal(y, [[0, 1], [0, 0], [1, 0]])
    with pytest.raises(xonnx.InvalidArgument, match=r"'se'.*-4 is outside \[-3, 2\]"):
        s.run(None, {"idx": np.array([[-4, 0]], np.int64)})


def ms_model(nodes, inputs, outputs, inits=()):
    m = model(nodes, inputs, outputs, inits)
    m.opset_import.append(h.make_opsetid("com.microsoft", 1))
    return m


def other_index_models():
    """Ops that index by a run-time input besides the gathers and scatters:
    (name, model, feeds of a valid call, feeds out of range, message)."""
    unpool = model([h.make_node("MaxUnpool", ["x", "i"], ["y"], name="unpool", kernel_shape=[2, 2], strides=[2, 2])],
                   [f32("x", [1, 1, 2, 2]), i64("i", [1, 1, 2, 2])], [f32("y", [1, 1, 4, 4])])
    x4 = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 2, 2)
    reverse = model([h.make_node("ReverseSequence", ["x", "lens"], ["y"], name="rev", time_axis=0, batch_axis=1)],
                    [f32("x", [4, 2]), i64("lens", [2])], [f32("y", [4, 2])])
    x42 = np.arange(8, dtype=np.float32).reshape(4, 2)
    roi = model([h.make_node("RoiAlign", ["x", "rois", "b"], ["y"], name="roi", output_height=2, output_width=2,
                             sampling_ratio=2)], [i64("b", [1])], [f32("y", [1, 1, 2, 2])],
                [const("x", np.arange(32, dtype=np.float32).reshape(2, 1, 4, 4)),
                 const("rois", np.array([[0, 0, 3, 3]], np.float32))])
    rotary = ms_model([h.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], name="rope",
                                   domain="com.microsoft", num_heads=1)], [f32("x", [1, 2, 4]), i64("pos", [1, 2])],
                      [f32("y", [1, 2, 4])], [const("cos", np.cos(np.arange(16, dtype=np.float32)).reshape(8, 2)),
                                              const("sin", np.sin(np.arange(16, dtype=np.float32)).reshape(8, 2))])
    x124 = np.ones((1, 2, 4), np.float32)
    return [
        ("MaxUnpool", unpool, {"x": x4, "i": np.array([0, 3, 8, 15]).reshape(1, 1, 2, 2)},
         {"x": x4, "i": np.array([0, 3, 8, 16]).reshape(1, 1, 2, 2)}, r"'unpool'.*indices: 16 is outside \[0, 15\]"),
        ("MaxUnpool negative", unpool, None, {"x": x4, "i": np.array([0, -1, 8, 15]).reshape(1, 1, 2, 2)},
         r"'unpool'.*-1 is outside \[0, 15\]"),
        ("ReverseSequence", reverse, {"x": x42, "lens": np.array([4, 0])}, {"x": x42, "lens": np.array([5, 1])},
         r"'rev'.*sequence_lens: 5 is outside \[0, 4\]"),
        ("RoiAlign", roi, {"b": np.array([1])}, {"b": np.array([2])}, r"'roi'.*batch_indices: 2 is outside \[0, 1\]"),
        ("RotaryEmbedding", rotary, {"x": x124, "pos": np.array([[0, 7]])}, {"x": x124, "pos": np.array([[0, 8]])},
         r"'rope'.*position ids: 8 is outside \[0, 7\]"),
    ]


@pytest.mark.parametrize("case", other_index_models(), ids=lambda c: c[0])
def test_other_run_time_indices_are_checked(case):
    _, m, good, bad, message = case
    s = session(m)
    if good is not None:
        s.run(None, good)
    with pytest.raises(xonnx.InvalidArgument, match=message):
        s.run(None, bad)


def test_reverse_sequence_reverses_each_length():
    (y,) = session(other_index_models()[2][1]).run(None, {"x": np.arange(8, dtype=np.float32).reshape(4, 2),
                                                          "lens": np.array([4, 2], np.int64)})
    np.testing.assert_array_equal(y, [[6, 3], [4, 1], [2, 5], [0, 7]])


def test_default_positions_past_the_position_table_are_refused():
    m = ms_model([h.make_node("EmbedLayerNormalization", ["ids", "", "words", "positions", "", "gamma", "beta"],
                              ["y", "mask"], name="embed", domain="com.microsoft")],
                 [i64("ids", [1, 5])], [f32("y", [1, 5, 4]), h.make_tensor_value_info("mask", T.INT32, [1])],
                 [const("words", np.ones((10, 4), np.float32)), const("positions", np.ones((4, 4), np.float32)),
                  const("gamma", np.ones(4, np.float32)), const("beta", np.zeros(4, np.float32))])
    with pytest.raises(xonnx.InvalidArgument, match=r"'embed'.*5 tokens needs 5 rows of position_embedding; it has 4"):
        session(m).run(None, {"ids": np.zeros((1, 5), np.int64)})


def test_a_constant_index_out_of_range_is_refused_when_the_model_loads():
    m = model([h.make_node("Gather", ["data", "idx"], ["y"], name="fixed")], [f32("data", [4, 2])], [f32("y", [2])],
              [const("idx", np.array(7, np.int64))])
    with pytest.raises(xonnx.InvalidArgument, match=r"'fixed'.*7 is outside \[-4, 3\]"):
        session(m).run(None, {"data": np.ones((4, 2), np.float32)})


def test_indices_checked_inside_a_loop_body_and_an_if_branch():
    body = h.make_graph([h.make_node("Gather", ["data", "idx"], ["g"], name="in_loop"),
                         h.make_node("ReduceSum", ["g"], ["s"], keepdims=0),
                         h.make_node("Add", ["acc_in", "s"], ["acc_out"]),
                         h.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
                        [i64("i", []), h.make_tensor_value_info("cond_in", T.BOOL, []), f32("acc_in", [])],
                        [h.make_tensor_value_info("cond_out", T.BOOL, []), f32("acc_out", [])])
    loop = model([h.make_node("Loop", ["trips", "", "zero"], ["total"], body=body)],
                 [i64("idx", [2]), i64("trips", [])], [f32("total", [])],
                 [const("data", np.arange(5, dtype=np.float32)), const("zero", np.float32(0))])
    s = session(loop)
    (total,) = s.run(None, {"idx": np.array([1, -1], np.int64), "trips": np.array(3, np.int64)})
    assert total == 3 * (1 + 4)
    with pytest.raises(xonnx.InvalidArgument, match=r"'in_loop'.*5 is outside \[-5, 4\]"):
        s.run(None, {"idx": np.array([1, 5], np.int64), "trips": np.array(2, np.int64)})
    # No iteration reads the indices: nothing to refuse.
    s.run(None, {"idx": np.array([1, 5], np.int64), "trips": np.array(0, np.int64)})

    then_g = h.make_graph([h.make_node("Gather", ["data", "idx"], ["t"], name="in_then")], "then", [],
                          [f32("t", [2])])
    else_g = h.make_graph([h.make_node("Identity", ["fallback"], ["e"])], "else", [], [f32("e", [2])])
    branch = model([h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
                   [i64("idx", [2]), h.make_tensor_value_info("c", T.BOOL, [])], [f32("y", [2])],
                   [const("data", np.arange(5, dtype=np.float32)), const("fallback", np.zeros(2, np.float32))])
    s = session(branch)
    with pytest.raises(xonnx.InvalidArgument, match=r"'in_then'.*-6 is outside"):
        s.run(None, {"idx": np.array([-6, 0], np.int64), "c": np.array(True)})
    # The branch that reads them did not run.
    (y,) = s.run(None, {"idx": np.array([-6, 0], np.int64), "c": np.array(False)})
    np.testing.assert_array_equal(y, [0, 0])


def test_indices_of_iterations_the_condition_stops_are_checked_only_if_they_run():
    """acc += data[i] while i + 1 < limit, for at most 20 trips over 10 rows:
    the unrolled iterations 10 and on index past the end, with constant
    indices, but run only when limit > 10."""
    body = h.make_graph([h.make_node("Gather", ["data", "i"], ["row"], name="in_loop"),
                         h.make_node("Add", ["acc_in", "row"], ["acc_out"]),
                         h.make_node("Add", ["i", "one"], ["next"]),
                         h.make_node("Less", ["next", "limit"], ["cond_out"])], "body",
                        [i64("i", []), h.make_tensor_value_info("cond_in", T.BOOL, []), f32("acc_in", [])],
                        [h.make_tensor_value_info("cond_out", T.BOOL, []), f32("acc_out", [])])
    m = model([h.make_node("Less", ["zero_i", "limit"], ["c0"]),
               h.make_node("Loop", ["trips", "c0", "zero"], ["total"], body=body)], [i64("limit", [])],
              [f32("total", [])], [const("data", np.arange(10, dtype=np.float32)), const("zero", np.float32(0)),
                                   const("trips", np.int64(20)), const("one", np.int64(1)),
                                   const("zero_i", np.int64(0))])
    s = session(m)
    for limit, total in [(10, 45), (3, 3), (0, 0)]:
        (y,) = s.run(None, {"limit": np.array(limit, np.int64)})
        assert y == total, limit
    with pytest.raises(xonnx.InvalidArgument, match=r"'in_loop'.*10 is outside \[-10, 9\]"):
        s.run(None, {"limit": np.array(11, np.int64)})


def test_a_constant_index_out_of_range_in_a_branch_is_checked_if_it_runs():
    then_g = h.make_graph([h.make_node("Gather", ["data", "seven"], ["t"], name="fixed_in_then")], "then", [],
                          [f32("t", [2])])
    else_g = h.make_graph([h.make_node("Identity", ["fallback"], ["e"])], "else", [], [f32("e", [2])])
    m = model([h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
              [h.make_tensor_value_info("c", T.BOOL, [])], [f32("y", [2])],
              [const("data", np.ones((4, 2), np.float32)), const("seven", np.int64(7)),
               const("fallback", np.zeros(2, np.float32))])
    s = session(m)
    np.testing.assert_array_equal(s.run(None, {"c": np.array(False)})[0], [0, 0])
    with pytest.raises(xonnx.InvalidArgument, match=r"'fixed_in_then'.*7 is outside \[-4, 3\]"):
        s.run(None, {"c": np.array(True)})
