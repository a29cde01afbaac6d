#!/usr/bin/python3
"""Builds models whose control flow holds data-dependent ops or reads outer
scopes at depth, with references computed in numpy (same layout as
make_graph_models.py): a detector's NonMaxSuppression inside an If whose
branches differ in shape, NonZero and Compress inside a Loop, TopK with a k
computed from data inside a Loop, Unique inside a Scan, NonZero two Ifs deep, and an LSTM two Ifs deep whose weights come from
the outer graph (as voice-activity models are exported).

usage: make_nested_models.py OUT_DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_graph_models import model, nms_reference, save_case  # noqa: E402

rng = np.random.default_rng(23)
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def init(name, value, dtype):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def if_nms(out_dir):
    """NonMaxSuppression in the then branch of an If on a computed
    condition; the else branch returns no boxes, so the branches' shapes
    differ too."""
    n = 40
    then_g = helper.make_graph(
        [helper.make_node("NonMaxSuppression", ["boxes", "s3", "max_out", "iou", "score_th"], ["sel"]),
         helper.make_node("Gather", ["sel", "col2"], ["idx"], axis=1),
         helper.make_node("Gather", ["boxes", "idx"], ["kept_t"], axis=1)], "then", [],
        [helper.make_tensor_value_info("kept_t", F, [1, None, 4])])
    else_g = helper.make_graph([helper.make_node("Identity", ["no_boxes"], ["kept_e"])], "else", [],
                               [helper.make_tensor_value_info("kept_e", F, [1, 0, 4])])
    nodes = [
        helper.make_node("Sigmoid", ["logits"], ["scores"]),
        helper.make_node("Reshape", ["scores", "score_shape"], ["s3"]),
        helper.make_node("ReduceMax", ["scores"], ["best"], keepdims=0),
        helper.make_node("Greater", ["best", "half"], ["any"]),
        helper.make_node("If", ["any"], ["kept"], then_branch=then_g, else_branch=else_g),
    ]
    inits = [init("score_shape", [1, 1, n], np.int64), init("max_out", [6], np.int64), init("iou", [0.2], np.float32),
             init("score_th", [0.5], np.float32), init("col2", 2, np.int64), init("half", 0.5, np.float32),
             init("no_boxes", np.zeros((1, 0, 4)), np.float32)]
    m = model(nodes, "if_nms", [helper.make_tensor_value_info("logits", F, [1, n]),
                                helper.make_tensor_value_info("boxes", F, [1, n, 4])],
              [helper.make_tensor_value_info("kept", F, [1, None, 4])], inits)
    cases = []
    for shift in (0.0, 1.0, -9.0):  # the last keeps no score above 0.5: the else branch
        logits = (rng.standard_normal((1, n)) + shift).astype(np.float32)
        corner = rng.random((1, n, 2)).astype(np.float32) * 0.8
        boxes = np.concatenate([corner, corner + 0.1 + rng.random((1, n, 2)).astype(np.float32) * 0.3], axis=2)
        scores = (1 / (1 + np.exp(-logits.astype(np.float64)))).astype(np.float32)
        if scores.max() > 0.5:
            kept = nms_reference(boxes[0], scores[0], 6, 0.2, 0.5)
            out = boxes[0][np.array(kept, dtype=np.int64)].reshape(1, -1, 4)
        else:
            out = np.zeros((1, 0, 4), np.float32)
        cases.append(([("logits", logits), ("boxes", boxes)], [("kept", out)]))
    save_case(out_dir, "if_nms", m, cases)


def loop_nonzero(out_dir):
    """A Loop on a runtime trip count whose body counts the values above a
    rising threshold with NonZero and sums them with Compress."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["fi", "step"], ["thr"]),
         helper.make_node("Greater", ["x", "thr"], ["mask"]),
         helper.make_node("NonZero", ["mask"], ["nz"]),
         helper.make_node("Shape", ["nz"], ["nz_shape"]),
         helper.make_node("Gather", ["nz_shape", "one"], ["count"], axis=0),
         helper.make_node("Add", ["acc_in", "count"], ["acc_out"]),
         helper.make_node("Reshape", ["x", "flat"], ["xf"]),
         helper.make_node("Reshape", ["mask", "flat"], ["mf"]),
         helper.make_node("Compress", ["xf", "mf"], ["above"], axis=0),
         helper.make_node("ReduceSum", ["above"], ["total"], keepdims=0),
         helper.make_node("Identity", ["c_in"], ["c_out"])], "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("c_in", B, []),
         helper.make_tensor_value_info("acc_in", I64, [])],
        [helper.make_tensor_value_info("c_out", B, []), helper.make_tensor_value_info("acc_out", I64, []),
         helper.make_tensor_value_info("count", I64, []), helper.make_tensor_value_info("total", F, [])])
    inits = [init("step", 0.5, np.float32), init("one", 1, np.int64), init("flat", [-1], np.int64),
             init("acc0", 0, np.int64), init("true", True, np.bool_)]
    m = model([helper.make_node("Loop", ["n", "true", "acc0"], ["acc", "counts", "totals"], body=body)],
              "loop_nonzero", [helper.make_tensor_value_info("x", F, [5, 6]), helper.make_tensor_value_info("n", I64, [])],
              [helper.make_tensor_value_info("acc", I64, []), helper.make_tensor_value_info("counts", I64, [None]),
               helper.make_tensor_value_info("totals", F, [None])], inits)
    cases = []
    for n in (4, 0):  # no iterations: empty scan outputs
        x = (rng.standard_normal((5, 6)) * 1.5).astype(np.float32)
        counts, totals = [], []
        for i in range(n):
            mask = x > np.float32(i) * np.float32(0.5)
            counts.append(int(mask.sum()))
            totals.append(np.float32(x[mask].sum(dtype=np.float32)))
        cases.append(([("x", x), ("n", np.array(n, np.int64))],
                      [("acc", np.array(sum(counts), np.int64)), ("counts", np.array(counts, np.int64)),
                       ("totals", np.array(totals, np.float32))]))
    save_case(out_dir, "loop_nonzero", m, cases)


def loop_topk(out_dir):
    """A Loop on a runtime trip count whose body keeps the k largest values
    of a captured input, k being the count of values above a threshold that
    rises each step: TopK's k is computed from data inside the body."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["fi", "step"], ["thr"]),
         helper.make_node("Greater", ["x", "thr"], ["m"]),
         helper.make_node("Cast", ["m"], ["mf"], to=F),
         helper.make_node("ReduceSum", ["mf"], ["cnt"], keepdims=1),
         helper.make_node("Cast", ["cnt"], ["k"], to=I64),
         helper.make_node("TopK", ["x", "k"], ["top", "idx"]),
         helper.make_node("ReduceSum", ["top"], ["s"], keepdims=0),
         helper.make_node("Add", ["acc", "s"], ["acc2"]),
         helper.make_node("Identity", ["ci"], ["co"])], "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("ci", B, []),
         helper.make_tensor_value_info("acc", F, [])],
        [helper.make_tensor_value_info("co", B, []), helper.make_tensor_value_info("acc2", F, [])])
    m = model([helper.make_node("Loop", ["n", "true", "a0"], ["y"], body=body)], "loop_topk",
              [helper.make_tensor_value_info("x", F, [40]), helper.make_tensor_value_info("n", I64, [])],
              [helper.make_tensor_value_info("y", F, [])],
              [init("step", 0.25, np.float32), init("true", True, np.bool_), init("a0", 0.0, np.float32)])
    cases = []
    for n in (3, 6):
        x = rng.standard_normal(40).astype(np.float32)
        acc = np.float32(0)
        for i in range(n):
            k = int((x > np.float32(i) * np.float32(0.25)).sum())
            acc = np.float32(acc + np.sort(x)[::-1][:k].sum(dtype=np.float32))
        cases.append(([("x", x), ("n", np.array(n, np.int64))], [("y", np.array(acc, np.float32))]))
    save_case(out_dir, "loop_topk", m, cases)


def loop_until(out_dir):
    """A Loop with no trip count whose body decides when to stop, with a
    scan output: its length depends on the data."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["v_in", "growth"], ["v_out"]),
         helper.make_node("ReduceSum", ["v_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["c_out"]),
         helper.make_node("Identity", ["v_out"], ["trace"])], "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("c_in", B, []),
         helper.make_tensor_value_info("v_in", F, [3])],
        [helper.make_tensor_value_info("c_out", B, []), helper.make_tensor_value_info("v_out", F, [3]),
         helper.make_tensor_value_info("trace", F, [None, 3])])
    m = model([helper.make_node("Loop", ["", "true", "v0"], ["v", "traces"], body=body)], "loop_until",
              [helper.make_tensor_value_info("v0", F, [3])],
              [helper.make_tensor_value_info("v", F, [3]), helper.make_tensor_value_info("traces", F, [None, 3])],
              [init("growth", 1.5, np.float32), init("limit", 100.0, np.float32), init("true", True, np.bool_)])
    cases = []
    for scale in (1.0, 10.0):
        v = (rng.random(3) * scale + 0.5).astype(np.float32)
        v0, traces = v.copy(), []
        while True:
            v = (v * np.float32(1.5)).astype(np.float32)
            traces.append(v)
            if not v.sum(dtype=np.float32) < np.float32(100):
                break
        cases.append(([("v0", v0)], [("v", v), ("traces", np.stack(traces))]))
    save_case(out_dir, "loop_until", m, cases)


def scan_unique(out_dir):
    """A Scan over the rows of a matrix, counting each row's distinct values
    with Unique, carrying the running total."""
    body = helper.make_graph(
        [helper.make_node("Unique", ["row"], ["uniq"], sorted=1),
         helper.make_node("Shape", ["uniq"], ["u_shape"]),
         helper.make_node("Squeeze", ["u_shape"], ["distinct"]),
         helper.make_node("Add", ["sum_in", "distinct"], ["sum_out"])], "body",
        [helper.make_tensor_value_info("sum_in", I64, []), helper.make_tensor_value_info("row", I64, [8])],
        [helper.make_tensor_value_info("sum_out", I64, []), helper.make_tensor_value_info("distinct", I64, [])])
    m = model([helper.make_node("Scan", ["s0", "x"], ["s", "per_row"], body=body, num_scan_inputs=1,
                                scan_output_directions=[1])], "scan_unique",
              [helper.make_tensor_value_info("x", I64, [6, 8])],
              [helper.make_tensor_value_info("s", I64, []), helper.make_tensor_value_info("per_row", I64, [6])],
              [init("s0", 0, np.int64)])
    x = rng.integers(0, 5, size=(6, 8)).astype(np.int64)
    per_row = np.array([len(np.unique(r)) for r in x], np.int64)
    save_case(out_dir, "scan_unique", m,
              [([("x", x)], [("s", np.array(per_row.sum(), np.int64)), ("per_row", per_row[::-1].copy())])])


def nested_if_nonzero(out_dir):
    """NonZero two Ifs deep, on values of the top-level graph."""
    def nz_branch(name, src):
        return helper.make_graph(
            [helper.make_node("NonZero", [src], [name + "_nz"]),
             helper.make_node("Transpose", [name + "_nz"], [name + "_out"], perm=[1, 0])], name, [],
            [helper.make_tensor_value_info(name + "_out", I64, [None, 2])])
    inner = helper.make_graph(
        [helper.make_node("If", ["c2"], ["inner_out"], then_branch=nz_branch("t2", "pos"),
                          else_branch=nz_branch("e2", "neg"))], "inner", [],
        [helper.make_tensor_value_info("inner_out", I64, [None, 2])])
    outer_else = helper.make_graph(
        [helper.make_node("Greater", ["x", "one"], ["big"]),
         helper.make_node("NonZero", ["big"], ["e1_nz"]),
         helper.make_node("Transpose", ["e1_nz"], ["e1_out"], perm=[1, 0])], "e1", [],
        [helper.make_tensor_value_info("e1_out", I64, [None, 2])])
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["pos"]),
        helper.make_node("Less", ["x", "zero"], ["neg"]),
        helper.make_node("If", ["c1"], ["where"], then_branch=inner, else_branch=outer_else),
    ]
    m = model(nodes, "nested_if_nonzero",
              [helper.make_tensor_value_info("c1", B, []), helper.make_tensor_value_info("c2", B, []),
               helper.make_tensor_value_info("x", F, [4, 5])],
              [helper.make_tensor_value_info("where", I64, [None, 2])],
              [init("zero", 0.0, np.float32), init("one", 1.0, np.float32)])
    cases = []
    for c1, c2 in ((True, True), (True, False), (False, True)):
        x = rng.standard_normal((4, 5)).astype(np.float32)
        mask = (x > 0 if c2 else x < 0) if c1 else x > 1
        cases.append(([("c1", np.array(c1)), ("c2", np.array(c2)), ("x", x)],
                      [("where", np.argwhere(mask).astype(np.int64))]))
    save_case(out_dir, "nested_if_nonzero", m, cases)


def lstm_reference(x, w, r, b, h0, c0):
    """ONNX LSTM, forward, default activations; x [T, batch, in]; gates iofc."""
    def sigmoid(v):
        return 1 / (1 + np.exp(-v))
    hidden = r.shape[-1]
    h, c = h0.astype(np.float64), c0.astype(np.float64)
    for t in range(x.shape[0]):
        g = x[t] @ w[0].T + h @ r[0].T + b[0][:4 * hidden] + b[0][4 * hidden:]
        i, o, f, cc = (g[:, k * hidden:(k + 1) * hidden] for k in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(cc)
        h = sigmoid(o) * np.tanh(c)
    return h.astype(np.float32), c.astype(np.float32)


def nested_if_lstm(out_dir):
    """An LSTM two Ifs deep: its weights are computed in the top-level graph
    (a Reshape of initializers) and its state comes from the model's inputs,
    as a voice-activity model exports its recurrent cell."""
    hidden, feat, steps = 8, 6, 5
    lstm_g = helper.make_graph(
        [helper.make_node("LSTM", ["xs", "W", "R", "Bias", "", "h0", "c0"], ["", "h_t", "c_t"], hidden_size=hidden),
         helper.make_node("Squeeze", ["h_t", "axis0"], ["h_out"]),
         helper.make_node("Squeeze", ["c_t", "axis0"], ["c_out"])], "lstm", [],
        [helper.make_tensor_value_info("h_out", F, [1, hidden]), helper.make_tensor_value_info("c_out", F, [1, hidden])])
    reset_g = helper.make_graph(
        [helper.make_node("Identity", ["zeros"], ["h_r"]), helper.make_node("Identity", ["zeros"], ["c_r"])], "reset", [],
        [helper.make_tensor_value_info("h_r", F, [1, hidden]), helper.make_tensor_value_info("c_r", F, [1, hidden])])
    inner = helper.make_graph(
        [helper.make_node("If", ["use_lstm"], ["h_i", "c_i"], then_branch=lstm_g, else_branch=reset_g)], "inner", [],
        [helper.make_tensor_value_info("h_i", F, [1, hidden]), helper.make_tensor_value_info("c_i", F, [1, hidden])])
    passthrough = helper.make_graph(
        [helper.make_node("Identity", ["h"], ["h_p"]), helper.make_node("Identity", ["c"], ["c_p"])], "pass", [],
        [helper.make_tensor_value_info("h_p", F, [1, hidden]), helper.make_tensor_value_info("c_p", F, [1, hidden])])
    nodes = [
        helper.make_node("Reshape", ["w_flat", "w_shape"], ["W"]),
        helper.make_node("Reshape", ["r_flat", "r_shape"], ["R"]),
        helper.make_node("Unsqueeze", ["b_flat", "axis0"], ["Bias"]),
        helper.make_node("Unsqueeze", ["x", "axis1"], ["xs"]),
        helper.make_node("Unsqueeze", ["h", "axis0"], ["h0"]),
        helper.make_node("Unsqueeze", ["c", "axis0"], ["c0"]),
        helper.make_node("If", ["active"], ["h_new", "c_new"], then_branch=inner, else_branch=passthrough),
    ]
    w = (rng.standard_normal((4 * hidden, feat)) * 0.3).astype(np.float32)
    r = (rng.standard_normal((4 * hidden, hidden)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(8 * hidden) * 0.1).astype(np.float32)
    inits = [init("w_flat", w.reshape(-1), np.float32), init("w_shape", [1, 4 * hidden, feat], np.int64),
             init("r_flat", r.reshape(-1), np.float32), init("r_shape", [1, 4 * hidden, hidden], np.int64),
             init("b_flat", b, np.float32), init("axis0", [0], np.int64), init("axis1", [1], np.int64),
             init("zeros", np.zeros((1, hidden)), np.float32)]
    m = model(nodes, "nested_if_lstm",
              [helper.make_tensor_value_info("active", B, []), helper.make_tensor_value_info("use_lstm", B, []),
               helper.make_tensor_value_info("x", F, [steps, feat]), helper.make_tensor_value_info("h", F, [1, hidden]),
               helper.make_tensor_value_info("c", F, [1, hidden])],
              [helper.make_tensor_value_info("h_new", F, [1, hidden]),
               helper.make_tensor_value_info("c_new", F, [1, hidden])], inits)
    cases = []
    for active, use in ((True, True), (True, False), (False, True)):
        x = rng.standard_normal((steps, feat)).astype(np.float32)
        h = rng.standard_normal((1, hidden)).astype(np.float32)
        c = rng.standard_normal((1, hidden)).astype(np.float32)
        if not active:
            hn, cn = h, c
        elif not use:
            hn, cn = np.zeros_like(h), np.zeros_like(c)
        else:
            hn, cn = lstm_reference(x[:, None, :], w[None], r[None], b[None], h, c)
        cases.append(([("active", np.array(active)), ("use_lstm", np.array(use)), ("x", x), ("h", h), ("c", c)],
                      [("h_new", hn), ("c_new", cn)]))
    save_case(out_dir, "nested_if_lstm", m, cases)


if __name__ == "__main__":
    out = sys.argv[1]
    if_nms(out)
    loop_nonzero(out)
    loop_until(out)
    loop_topk(out)
    scan_unique(out)
    nested_if_nonzero(out)
    nested_if_lstm(out)
