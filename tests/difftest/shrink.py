"""Shrinks a failing ONNX graph to a minimal one that fails the same way.

Greedy, to a fixed point: drop a graph output; bypass a node (its readers
read one of its inputs of the same type and shape instead); cut a node (its
output becomes a graph input with random values, and what only fed it goes).
A step is kept when the finding's kind stays the same.
"""
import copy

import numpy as np
import onnx
from onnx import helper, shape_inference

NP_TYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.INT64: np.int64, onnx.TensorProto.BOOL: np.bool_}


def value_types(model):
    """name -> (elem_type, dims) for every value ONNX can infer."""
    inferred = shape_inference.infer_shapes(model)
    out = {}
    for vi in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        t = vi.type.tensor_type
        out[vi.name] = (t.elem_type, [d.dim_value for d in t.shape.dim])
    for init in model.graph.initializer:
        out[init.name] = (init.data_type, list(init.dims))
    return out


def clean(model, feeds):
    """Drops nodes nothing reads, then unused initializers and inputs."""
    g = model.graph
    needed = {o.name for o in g.output}
    keep = []
    for n in reversed(g.node):
        if any(o in needed for o in n.output):
            keep.append(n)
            needed.update(i for i in n.input if i)
    keep.reverse()
    del g.node[:]
    g.node.extend(keep)
    inits = [i for i in g.initializer if i.name in needed]
    del g.initializer[:]
    g.initializer.extend(inits)
    inputs = [i for i in g.input if i.name in needed]
    del g.input[:]
    g.input.extend(inputs)
    return model, {k: v for k, v in feeds.items() if k in needed}


def set_outputs(model, names, types):
    g = model.graph
    del g.output[:]
    g.output.extend(helper.make_tensor_value_info(n, types[n][0], types[n][1]) for n in names)


def candidates(model, feeds, rng):
    types = value_types(model)
    g = model.graph
    outs = [o.name for o in g.output]
    inputs = {i.name for i in g.input} | {i.name for i in g.initializer}
    read = {i for n in g.node for i in n.input}
    if len(outs) > 1:
        for k in range(len(outs)):
            m = copy.deepcopy(model)
            set_outputs(m, outs[:k] + outs[k + 1:], types)
            yield clean(m, dict(feeds))
    for idx in reversed(range(len(g.node))):
        node = g.node[idx]
        for o in node.output:
            if o not in types or types[o][0] not in NP_TYPES or (o not in read and o not in outs):
                continue
            # Bypass: readers of o read a same-typed input of the node.
            for i in node.input:
                if i and i not in inputs and types.get(i) == types[o]:
                    m = copy.deepcopy(model)
                    for n in m.graph.node:
                        for k, name in enumerate(n.input):
                            if name == o:
                                n.input[k] = i
                    set_outputs(m, [i if n == o else n for n in outs], types)
                    yield clean(m, dict(feeds))
            # Cut: o becomes a graph input.
            et, dims = types[o]
            m = copy.deepcopy(model)
            for n in m.graph.node:
                if o in n.output:
                    n.output[list(n.output).index(o)] = o + "__cut"
            m.graph.input.append(helper.make_tensor_value_info(o, et, dims))
            f = dict(feeds)
            if et == onnx.TensorProto.FLOAT:
                f[o] = rng.standard_normal(dims).astype(np.float32)
            elif et == onnx.TensorProto.BOOL:
                f[o] = rng.random(dims) < 0.5
            else:
                continue  # integer values (indices) keep their producer
            if o in outs:
                continue  # an output that is an input tests nothing
            yield clean(m, f)


def shrink(model, feeds, kind, classify, rng, max_steps=400):
    """The smallest graph reached whose classify() kind is still `kind`,
    its inputs and the finding's text."""
    text = ""
    steps = 0
    changed = True
    while changed and steps < max_steps:
        changed = False
        for m, f in candidates(model, feeds, rng):
            steps += 1
            try:
                onnx.checker.check_model(m)
            except Exception:  # noqa: BLE001 (not a valid graph: not a candidate)
                continue
            k, t = classify(m, f)
            if k == kind:
                model, feeds, text, changed = m, f, t, True
                break
            if steps >= max_steps:
                break
    if not text:
        text = classify(model, feeds)[1]
    return model, feeds, text
