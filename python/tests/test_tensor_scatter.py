"""TensorScatter (ONNX opset 24's key/value cache update, in xonnx's own
domain "ai.xonnx" so that the generation runtime can write it into models
of any opset) against a numpy transcription of the ONNX specification's
pseudocode: linear and circular modes, rows writing at different
positions, the sequence axis anywhere after the batch, 16-bit caches, and
a linear write past the end refused instead of dropped."""
import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import xonnx


def reference(past, update, write_indices, axis, mode):
    """The specification's loop: each batch row's update goes at its write
    index along `axis` (modulo the axis's length when circular)."""
    out = past.copy()
    axis = axis % past.ndim
    length, seq = past.shape[axis], update.shape[axis]
    for prefix in np.ndindex(past.shape[:axis]):
        b = prefix[0]
        for s in range(seq):
            at = write_indices[b] + s
            if mode == "circular":
                at %= length
            out[prefix + (at,)] = update[prefix + (s,)]
    return out


def model(past_shape, update_shape, dtype, axis, mode, with_indices):
    elem = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]
    inputs = [helper.make_tensor_value_info("past", elem, past_shape),
              helper.make_tensor_value_info("update", elem, update_shape)]
    names = ["past", "update"]
    if with_indices:
        inputs.append(helper.make_tensor_value_info("write_indices", TensorProto.INT64, [past_shape[0]]))
        names.append("write_indices")
    node = helper.make_node("TensorScatter", names, ["present"], domain="ai.xonnx", axis=axis, mode=mode)
    graph = helper.make_graph([node], "tensor_scatter", inputs,
                              [helper.make_tensor_value_info("present", elem, past_shape)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.xonnx", 1)])
    return m.SerializeToString()


def session(bytes_):
    so = xonnx.SessionOptions()
    so.use_cache = False
    return xonnx.InferenceSession(bytes_, so)


# (past shape, axis, update length): the sequence axis last but one (the
# cache's [batch, heads, length, head_dim]), second, and last.
SHAPES = [((3, 2, 8, 4), -2, 1), ((3, 2, 8, 4), 2, 3), ((2, 8, 3, 5), 1, 2), ((2, 3, 7), -1, 4), ((1, 5, 4), 1, 5)]


@pytest.mark.parametrize("shape,axis,seq,mode", [s + (m,) for s, m in itertools.product(SHAPES, ["linear", "circular"])])
def test_matches_the_specification(shape, axis, seq, mode):
    rng = np.random.default_rng(abs(hash((shape, axis, seq, mode))) % 2**32)
    ax = axis % len(shape)
    update_shape = list(shape)
    update_shape[ax] = seq
    past = rng.standard_normal(shape).astype(np.float32)
    update = rng.standard_normal(update_shape).astype(np.float32)
    length = shape[ax]
    high = length - seq + 1 if mode == "linear" else 3 * length
    low = 0 if mode == "linear" else -length
    idx = rng.integers(low, high, size=shape[0]).astype(np.int64)
    s = session(model(list(shape), update_shape, np.float32, axis, mode, True))
    (got,) = s.run(None, {"past": past, "update": update, "write_indices": idx})
    np.testing.assert_array_equal(got, reference(past, update, idx, axis, mode))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_without_write_indices_rows_write_at_zero(dtype):
    rng = np.random.default_rng(1)
    past = rng.standard_normal((2, 2, 6, 3)).astype(dtype)
    update = rng.standard_normal((2, 2, 4, 3)).astype(dtype)
    s = session(model([2, 2, 6, 3], [2, 2, 4, 3], dtype, -2, "linear", False))
    (got,) = s.run(None, {"past": past, "update": update})
    np.testing.assert_array_equal(got, reference(past, update, np.zeros(2, np.int64), -2, "linear"))


@pytest.mark.parametrize("index", [-1, 6, 7, 1 << 40])
def test_a_linear_write_past_the_end_is_refused(index):
    # Cache of 8 slots, 3 written: an index outside [0, 5] would write (or,
    # in XLA's scatter, silently drop) slots that are not there.
    s = session(model([2, 1, 8, 2], [2, 1, 3, 2], np.float32, -2, "linear", True))
    feed = {"past": np.zeros((2, 1, 8, 2), np.float32), "update": np.ones((2, 1, 3, 2), np.float32),
            "write_indices": np.array([0, index], np.int64)}
    with pytest.raises(xonnx.Error, match="write_indices"):
        s.run(None, feed)


def test_bad_attributes_and_shapes_are_refused_at_load():
    with pytest.raises(xonnx.Error, match="axis 0 must name a dimension after the batch"):
        session(model([2, 4, 3], [2, 4, 3], np.float32, 0, "linear", True)).run(
            None, {"past": np.zeros((2, 4, 3), np.float32), "update": np.zeros((2, 4, 3), np.float32),
                   "write_indices": np.zeros(2, np.int64)})
    with pytest.raises(xonnx.Error, match="mode 'ring'"):
        session(model([2, 4, 3], [2, 1, 3], np.float32, 1, "ring", True)).run(
            None, {"past": np.zeros((2, 4, 3), np.float32), "update": np.zeros((2, 1, 3), np.float32),
                   "write_indices": np.zeros(2, np.int64)})
    with pytest.raises(xonnx.Error, match="no longer than"):
        session(model([2, 4, 3], [2, 5, 3], np.float32, 1, "linear", True)).run(
            None, {"past": np.zeros((2, 4, 3), np.float32), "update": np.zeros((2, 5, 3), np.float32),
                   "write_indices": np.zeros(2, np.int64)})


def test_the_op_is_in_xonnx_domain_only():
    # ONNX's own TensorScatter is opset 24, newer than xonnx reads: a model
    # asking for it is refused by name, not run with another meaning.
    m = onnx.load_from_string(model([2, 4, 3], [2, 1, 3], np.float32, 1, "linear", True))
    m.graph.node[0].domain = ""
    with pytest.raises(xonnx.Error, match="TensorScatter"):
        session(m.SerializeToString())
