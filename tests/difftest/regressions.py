"""The differential tester's findings, each shrunk to a minimal graph and
kept as a regression case: xonnx must agree with the reference device on
every one (and, with every value in memory of its own, the same way).

Weights are random (seeded); what made each graph fail is its structure.
The seed each was found at, and the bug behind it:

- row_fusion_output_read_by_concurrent_conv (seed 1185),
  layer_norm_input_read_by_concurrent_branch (seed 1481): a value a row
  fusion writes (a softmax's or layer norm's input) read by a branch planned
  to run beside the row fusion, before it had written the value.
- concatenation_part_read_by_concurrent_branch (seed 116262): a
  concatenation read in place by a fused loop of the second part, one of
  whose parts the first part writes.
- in_place_chains_merged_out_of_order (seed 225179): three in-place writes
  over one slot, recorded out of program order, placed with the first
  write's lifetime; an output was overwritten.
- two_scales_of_one_product (seed 207747): two per-feature scales of one
  product, on two paths, both folded into its weights.
- model_cast_to_bfloat16_and_back (seed 500071): the CPU backend took away
  a float32 model's own rounding through bfloat16.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

import graphgen

RNG = np.random.default_rng(5)


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, **attrs)


def floats(name, shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.5).astype(np.float32), name)


def scales(name, values):
    return numpy_helper.from_array(np.asarray(values, np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def graph(nodes, inputs, inits, outputs):
    """The model (output shapes inferred by ONNX) and random inputs."""
    from onnx import shape_inference
    g = helper.make_graph(nodes, "regression", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                                for n, s in inputs], [], inits)
    probe = helper.make_model(g, opset_imports=[helper.make_opsetid("", graphgen.OPSET)])
    inferred = shape_inference.infer_shapes(probe)
    shapes = {v.name: v.type.tensor_type for v in inferred.graph.value_info}
    g.output.extend(helper.make_tensor_value_info(o, shapes[o].elem_type, [d.dim_value for d in shapes[o].shape.dim])
                    for o in outputs)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", graphgen.OPSET)])
    model.ir_version = 8
    feeds = {n: RNG.standard_normal(s).astype(np.float32) for n, s in inputs}
    return model, feeds


def row_fusion_output_read_by_concurrent_conv():
    nodes = [
        node('Softplus', ['in1'], ['softplus_14']),
        node('Softmax', ['softplus_14'], ['softmax_16'], axis=2),
        node('LogSoftmax', ['softmax_16'], ['logsoftmax_18'], axis=1),
        node('Gather', ['logsoftmax_18', 'i20'], ['gather_21'], axis=0),
        node('Conv', ['softplus_14', 'w26'], ['conv_27'], dilations=[4], group=5, kernel_shape=[3], pads=[4, 4], strides=[3]),
        node('InstanceNormalization', ['conv_27', 'c51', 'c52'], ['instancenormalization_53'], epsilon=9.999999747378752e-06),
        node('Conv', ['instancenormalization_53', 'w55'], ['conv_56'], dilations=[1], group=1, kernel_shape=[1], pads=[0, 0], strides=[1]),
    ]
    inputs = [('in1', [2, 5, 16])]
    inits = [ints('i20', [[1, -2, -2], [1, 1, -2]]), floats('w26', [10, 1, 3]), floats('c51', [10]), floats('c52', [10]), floats('w55', [5, 10, 1])]
    return graph(nodes, inputs, inits, ['gather_21', 'conv_56'])

def layer_norm_input_read_by_concurrent_branch():
    nodes = [
        node('Conv', ['in1', 'w2', 'b3'], ['conv_4'], dilations=[1], group=1, kernel_shape=[5], pads=[2, 2], strides=[1]),
        node('Expand', ['conv_4', 'i6'], ['expand_7']),
        node('LayerNormalization', ['conv_4', 'g27', 'b28'], ['layernormalization_29'], axis=-1, epsilon=9.999999747378752e-06),
        node('Pad', ['layernormalization_29', 'i33', 'c34'], ['pad_35'], mode='constant'),
        node('Sigmoid', ['pad_35'], ['sigmoid_41']),
        node('Resize', ['expand_7', '', '', 'i46'], ['resize_47'], coordinate_transformation_mode='asymmetric', mode='nearest', nearest_mode='ceil'),
        node('Conv', ['resize_47', 'w52', 'c53'], ['conv_54'], dilations=[1, 1], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    inputs = [('in1', [2, 27, 32])]
    inits = [floats('w2', [13, 27, 5]), floats('b3', [13]), ints('i6', [2, 2, 13, 32]), floats('g27', [32]), floats('b28', [32]), ints('i33', [2, 2, 1, 3, 3, 1]), floats('c34', []), ints('i46', [2, 2, 9, 59]), floats('w52', [2, 2, 3, 3]), floats('c53', [2])]
    return graph(nodes, inputs, inits, ['sigmoid_41', 'conv_54'])

def concatenation_part_read_by_concurrent_branch():
    nodes = [
        node('CumSum', ['in1', 'i2'], ['cumsum_3'], exclusive=0, reverse=0),
        node('Neg', ['in1'], ['neg_5']),
        node('Slice', ['neg_5', 'i7', 'i8', 'i9', 'i10'], ['slice_11']),
        node('Conv', ['cumsum_3', 'w13', 'c14'], ['conv_15'], dilations=[1, 1], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node('Conv', ['conv_15', 'w19'], ['conv_20'], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node('Concat', ['conv_20', 'slice_11'], ['concat_40'], axis=1),
        node('Expand', ['maxpool_27', 'i46'], ['expand_47']),
        node('Relu', ['concat_40'], ['relu_49']),
        node('Conv', ['relu_49', 'w51', 'c52'], ['conv_53'], dilations=[1, 1], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node('Add', ['concat_40', 'conv_53'], ['add_60']),
    ]
    inputs = [('in1', [1, 1, 23, 23]), ('maxpool_27', [1, 1, 21, 21])]
    inits = [ints('i2', 2), ints('i7', [0, 0]), ints('i8', [-6, 1]), ints('i9', [0, 1]), ints('i10', [-1, 3]), floats('w13', [1, 1, 3, 3]), floats('c14', [1]), floats('w19', [1, 1, 3, 3]), ints('i46', [2, 5, 21, 21]), floats('w51', [2, 2, 3, 3]), floats('c52', [2])]
    return graph(nodes, inputs, inits, ['expand_47', 'add_60'])

def in_place_chains_merged_out_of_order():
    nodes = [
        node('Resize', ['in2', '', 'c10'], ['resize_11'], coordinate_transformation_mode='asymmetric', mode='nearest', nearest_mode='round_prefer_floor'),
        node('Add', ['c13', 'resize_11'], ['add_14']),
        node('MatMul', ['clip_18', 'w34'], ['matmul_35']),
        node('Add', ['matmul_35', 'add_14'], ['add_39']),
        node('Abs', ['add_39'], ['abs_52']),
        node('Add', ['abs_52', 'c54'], ['add_55']),
    ]
    inputs = [('in2', [2, 16, 15, 28]), ('clip_18', [2, 16, 22, 42])]
    inits = [scales('c10', [1.0, 1.0, 1.5, 1.5]), floats('c13', []), floats('w34', [42, 42]), floats('c54', [])]
    return graph(nodes, inputs, inits, ['add_55', 'abs_52'])

def two_scales_of_one_product():
    nodes = [
        node('MatMul', ['pad_4', 'w15'], ['matmul_16']),
        node('Mul', ['matmul_16', 'c18'], ['mul_19']),
        node('Transpose', ['mul_19'], ['transpose_21'], perm=[1, 0, 2]),
        node('Mul', ['transpose_21', 'c37'], ['mul_38']),
        node('Conv', ['mul_19', 'w48', 'b49'], ['conv_50'], auto_pad='SAME_LOWER', dilations=[1], group=36, kernel_shape=[7], strides=[3]),
        node('Conv', ['conv_50', 'w52', 'b53'], ['conv_54'], auto_pad='SAME_UPPER', dilations=[4], group=36, kernel_shape=[3], strides=[2]),
    ]
    inputs = [('pad_4', [7, 36, 11])]
    inits = [floats('w15', [11, 22]), floats('c18', [22]), floats('c37', [22]), floats('w48', [36, 1, 7]), floats('b49', [36]), floats('w52', [36, 1, 3]), floats('b53', [36])]
    return graph(nodes, inputs, inits, ['mul_38', 'conv_54'])


def model_cast_to_bfloat16_and_back():
    nodes = [
        node('Cast', ['x'], ['h'], to=TensorProto.BFLOAT16),
        node('Cast', ['h'], ['y'], to=TensorProto.FLOAT),
    ]
    return graph(nodes, [('x', [1, 9])], [], ['y'])


CASES = [
    row_fusion_output_read_by_concurrent_conv,
    layer_norm_input_read_by_concurrent_branch,
    concatenation_part_read_by_concurrent_branch,
    in_place_chains_merged_out_of_order,
    two_scales_of_one_product,
    model_cast_to_bfloat16_and_back,
]
