"""Random, valid ONNX graphs in the shapes real networks have.

A graph grows from one or two inputs by applying op templates to values
already in it: convolutions (strided, dilated, grouped, depthwise,
transposed), products, elementwise chains, residual sums, resizes,
concatenations, slices, transposes, reshapes, pads, pools, reductions,
normalizations, gathers, and the composite patterns networks repeat
(squeeze-excitation, attention, upsample-and-concatenate). A value may be
read by several nodes, and the outputs are the graph's leaves plus values
taken from the middle of its chains, the patterns under which buffer reuse,
in-place writes and fusion go wrong.

Every template keeps values finite and well conditioned (weights scaled by
their fan-in, divisions by values away from zero, no discontinuous ops fed
by computed values), so two correct engines agree to about 1e-5 and a
mismatch is a bug, not rounding.

    gen = GraphGen(np.random.default_rng(seed))
    model, feeds = gen.build()
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
F32 = np.float32

# Value sizes: graphs stay small enough for the reference evaluator.
MAX_ELEMENTS = 1 << 15
MAX_MACS = 1 << 21


class Value:
    def __init__(self, name, shape, dtype=F32):
        self.name, self.shape, self.dtype = name, tuple(int(d) for d in shape), dtype

    @property
    def rank(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape)) if self.shape else 1


class Skip(Exception):
    """A template that does not apply to the value it drew."""


class GraphGen:
    def __init__(self, rng, max_nodes=None):
        self.rng = rng
        self.max_nodes = max_nodes or int(rng.integers(4, 28))
        self.nodes, self.inits, self.inputs, self.feeds = [], [], [], {}
        self.pool = []  # float values, oldest first
        self.ints = []  # int64 values (outputs only)
        self.counter = 0

    # --- helpers ---------------------------------------------------------
    def name(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def choice(self, items, p=None):
        return items[int(self.rng.choice(len(items), p=p))]

    def chance(self, p):
        return bool(self.rng.random() < p)

    def node(self, op, inputs, shape, dtype=F32, n_out=1, shapes=None, **attrs):
        outs = [self.name(op.lower() + "_") for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=self.name("n_" + op + "_"), **attrs))
        vals = []
        for k, o in enumerate(outs):
            s = shapes[k] if shapes else shape
            if int(np.prod(s)) == 0 or int(np.prod(s)) > MAX_ELEMENTS:
                raise Skip(f"{op} gives {s}")
            v = Value(o, s, dtype)
            (self.pool if dtype == F32 else self.ints).append(v)
            vals.append(v)
        return vals[0] if n_out == 1 else vals

    def const(self, array, prefix="c"):
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, shape, fan_in):
        return self.const((self.rng.standard_normal(shape) / np.sqrt(max(fan_in, 1))).astype(F32), "w")

    def ints_const(self, values):
        return self.const(np.asarray(values, np.int64), "i")

    def add_input(self, shape):
        v = Value(self.name("in"), shape)
        self.inputs.append(v)
        self.feeds[v.name] = self.rng.standard_normal(shape).astype(F32)
        self.pool.append(v)
        return v

    def pick(self, ok=lambda v: True):
        """A float value satisfying `ok`, recent ones more likely."""
        cands = [v for v in self.pool if ok(v)]
        if not cands:
            raise Skip("no value fits")
        w = np.arange(1, len(cands) + 1, dtype=np.float64) ** 2
        return cands[int(self.rng.choice(len(cands), p=w / w.sum()))]

    def undo_to(self, mark):
        n, i, p, q = mark
        del self.nodes[n:], self.inits[i:], self.pool[p:], self.ints[q:]

    # --- convolutions and products ------------------------------------------
    def conv(self):
        x = self.pick(lambda v: v.rank in (3, 4) and v.shape[1] <= 96)
        n, c, *sp = x.shape
        groups = 1
        if self.chance(0.25):
            groups = c  # depthwise
        elif self.chance(0.15):
            groups = self.choice([g for g in range(1, c + 1) if c % g == 0])
        m = self.choice([c, 2 * c, max(1, c // 2), int(self.rng.integers(1, 33))])
        m = max(groups, m // groups * groups)
        k = int(self.choice([1, 3, 3, 5, 7]))
        d = int(self.choice([1, 1, 1, 2, 3, 4])) if k > 1 else 1
        s = int(self.choice([1, 1, 1, 2, 3]))
        keff = d * (k - 1) + 1
        attrs = dict(kernel_shape=[k] * len(sp), strides=[s] * len(sp), dilations=[d] * len(sp), group=groups)
        if self.chance(0.1):
            attrs["auto_pad"] = self.choice(["SAME_UPPER", "SAME_LOWER", "VALID"])
            out = [-(-h // s) for h in sp] if attrs["auto_pad"] != "VALID" else [(h - keff) // s + 1 for h in sp]
        else:
            if self.chance(0.6):
                pads = [(keff - 1) // 2] * len(sp) * 2
            else:
                pads = [int(self.rng.integers(0, keff)) for _ in range(2 * len(sp))]
            attrs["pads"] = pads
            out = [(h + pads[i] + pads[i + len(sp)] - keff) // s + 1 for i, h in enumerate(sp)]
        if min(out) < 1:
            raise Skip("kernel larger than input")
        if n * m * np.prod(out) * (c // groups) * k ** len(sp) > MAX_MACS:
            raise Skip("too many MACs")
        ins = [x.name, self.weight([m, c // groups] + [k] * len(sp), c // groups * k ** len(sp))]
        if self.chance(0.7):
            ins.append(self.const((self.rng.standard_normal(m) * 0.1).astype(F32), "b"))
        return self.node("Conv", ins, [n, m] + out, **attrs)

    def conv_transpose(self):
        x = self.pick(lambda v: v.rank == 4 and v.shape[1] <= 64)
        n, c, h, w = x.shape
        m = self.choice([c, max(1, c // 2), int(self.rng.integers(1, 17))])
        k = int(self.choice([1, 2, 3, 4]))
        s = int(self.choice([1, 2, 2]))
        d = int(self.choice([1, 1, 2]))
        pads = [int(self.rng.integers(0, k)) for _ in range(4)]
        op = [int(self.rng.integers(0, s)) if d == 1 else 0 for _ in range(2)]
        out = [(hw - 1) * s - pads[i] - pads[i + 2] + d * (k - 1) + op[i] + 1 for i, hw in enumerate((h, w))]
        if min(out) < 1 or n * c * m * h * w * k * k > MAX_MACS:
            raise Skip("conv transpose")
        ins = [x.name, self.weight([c, m, k, k], c * k * k)]
        if self.chance(0.5):
            ins.append(self.const((self.rng.standard_normal(m) * 0.1).astype(F32), "b"))
        return self.node("ConvTranspose", ins, [n, m] + out, kernel_shape=[k, k], strides=[s, s], pads=pads,
                         output_padding=op, dilations=[d, d])

    def matmul(self):
        x = self.pick(lambda v: v.rank >= 2 and v.shape[-1] <= 256)
        kdim = x.shape[-1]
        other = [v for v in self.pool if v is not x and v.rank == x.rank and v.rank >= 3 and
                 v.shape[:-2] == x.shape[:-2] and v.shape[-2] == kdim]
        if other and self.chance(0.4):
            y = self.choice(other)
            shape = x.shape[:-1] + (y.shape[-1],)
            if x.size // kdim * y.shape[-1] * kdim > MAX_MACS:
                raise Skip("matmul")
            scaled = self.node("Mul", [x.name, self.const(np.asarray(1 / np.sqrt(kdim), F32))], x.shape)
            return self.node("MatMul", [scaled.name, y.name], shape)
        nout = int(self.choice([kdim, 2 * kdim, int(self.rng.integers(1, 65))]))
        if x.size * nout > MAX_MACS:
            raise Skip("matmul")
        if x.rank == 2 and self.chance(0.5):
            ins = [x.name, self.weight([nout, kdim], kdim)]
            if self.chance(0.7):
                ins.append(self.const((self.rng.standard_normal(nout) * 0.1).astype(F32), "b"))
            return self.node("Gemm", ins, (x.shape[0], nout), transB=1, alpha=float(self.choice([1.0, 0.5])))
        return self.node("MatMul", [x.name, self.weight([kdim, nout], kdim)], x.shape[:-1] + (nout,))

    # --- elementwise --------------------------------------------------------
    UNARY = [("Relu", {}), ("LeakyRelu", {"alpha": 0.1}), ("Sigmoid", {}), ("Tanh", {}), ("Abs", {}), ("Neg", {}),
             ("Elu", {}), ("Selu", {}), ("HardSigmoid", {}), ("HardSwish", {}), ("Softsign", {}), ("Erf", {}),
             ("Sin", {}), ("Cos", {}), ("Identity", {})]

    def unary(self):
        x = self.pick()
        op, attrs = self.choice(self.UNARY)
        if op == "Identity" and self.chance(0.5):
            op, attrs = "Clip", {}
            lo, hi = sorted(self.rng.uniform(-1.5, 1.5, 2))
            return self.node("Clip", [x.name, self.const(F32(lo)), self.const(F32(hi + 0.1))], x.shape)
        return self.node(op, [x.name], x.shape, **attrs)

    def smooth_unary(self):
        """exp, log, sqrt and reciprocals on values kept in their domain."""
        x = self.pick()
        kind = self.choice(["exp", "log", "sqrt", "recip", "softplus", "pow"])
        if kind == "exp":
            t = self.node("Tanh", [x.name], x.shape)
            return self.node("Exp", [t.name], x.shape)
        a = self.node("Abs", [x.name], x.shape)
        a1 = self.node("Add", [a.name, self.const(F32(1.0))], x.shape)
        op = {"log": "Log", "sqrt": "Sqrt", "recip": "Reciprocal", "softplus": "Softplus"}.get(kind)
        if op:
            return self.node(op, [a1.name if op != "Softplus" else x.name], x.shape)
        return self.node("Pow", [a1.name, self.const(F32(self.choice([0.5, 2.0, 3.0])))], x.shape)

    def binary(self):
        x = self.pick()
        op = self.choice(["Add", "Add", "Sub", "Mul", "Max", "Min", "Div"])
        same = [v for v in self.pool if v is not x and v.shape == x.shape]
        if same and op != "Div" and self.chance(0.6):
            return self.node(op, [x.name, self.choice(same).name], x.shape)
        # A broadcast operand: scalar, per channel, per last dim, or full.
        kinds = ["scalar", "full"] + (["last"] if x.rank >= 1 else []) + (["channel"] if x.rank >= 3 else [])
        kind = self.choice(kinds)
        if kind == "scalar":
            shape = ()
        elif kind == "last":
            shape = (x.shape[-1],)
        elif kind == "channel":
            shape = (x.shape[1],) + (1,) * (x.rank - 2)
        else:
            shape = x.shape
        if op == "Div":
            c = self.rng.uniform(0.5, 2.0, shape) * self.rng.choice([-1, 1], shape)
        else:
            c = self.rng.standard_normal(shape)
        operands = [x.name, self.const(np.asarray(c, F32))]
        if self.chance(0.3) and op not in ("Sub", "Div"):
            operands.reverse()
        return self.node(op, operands, x.shape)

    def where(self):
        x = self.pick()
        same = [v for v in self.pool if v is not x and v.shape == x.shape] or [x]
        y = self.choice(same)
        # The condition reads a graph input only: a computed value near the
        # threshold would flip with rounding.
        src = [v for v in self.inputs if v.shape == x.shape]
        if not src:
            raise Skip("where needs an input of the shape")
        cond = self.node("Greater", [src[0].name, self.const(F32(0.3))], x.shape, dtype=np.bool_)
        self.ints.pop()
        return self.node("Where", [cond.name, x.name, y.name], x.shape)

    def variadic(self):
        x = self.pick()
        same = [v for v in self.pool if v.shape == x.shape]
        ops = [self.choice(same).name for _ in range(int(self.rng.integers(2, 4)))]
        return self.node(self.choice(["Sum", "Mean", "Max", "Min"]), ops, x.shape)

    # --- normalization ----------------------------------------------------------
    def batchnorm(self):
        x = self.pick(lambda v: v.rank in (3, 4) or v.rank == 2)
        c = x.shape[1]
        r = self.rng
        ins = [x.name] + [self.const(a.astype(F32), "bn") for a in
                          (r.uniform(0.5, 1.5, c), r.standard_normal(c) * 0.1, r.standard_normal(c) * 0.1,
                           r.uniform(0.5, 1.5, c))]
        return self.node("BatchNormalization", ins, x.shape, epsilon=1e-5)

    def norm_epsilon(self):
        # Normalizing values that are nearly constant (clamped, or summed
        # from clamped ones) multiplies rounding noise by 1/sqrt(epsilon):
        # by 300 at 1e-5, which would make engines that merely sum in
        # another order disagree. Larger epsilons keep the op well
        # conditioned; the kernels do not depend on its value.
        return float(self.choice([1e-2, 0.1]))

    def layernorm(self):
        x = self.pick(lambda v: v.rank >= 2 and v.shape[-1] >= 4)
        axis = int(self.choice([-1, -1, -2])) if x.rank >= 3 else -1
        norm_shape = x.shape[axis:]
        ins = [x.name, self.const(self.rng.uniform(0.5, 1.5, norm_shape).astype(F32), "g"),
               self.const((self.rng.standard_normal(norm_shape) * 0.1).astype(F32), "b")]
        return self.node("LayerNormalization", ins, x.shape, axis=axis, epsilon=self.norm_epsilon())

    def instancenorm(self):
        x = self.pick(lambda v: v.rank in (3, 4) and v.size // (v.shape[0] * v.shape[1]) >= 4)
        c = x.shape[1]
        ins = [x.name, self.const(self.rng.uniform(0.5, 1.5, c).astype(F32)),
               self.const((self.rng.standard_normal(c) * 0.1).astype(F32))]
        return self.node("InstanceNormalization", ins, x.shape, epsilon=self.norm_epsilon())

    def softmax(self):
        x = self.pick(lambda v: v.rank >= 1)
        axis = int(self.rng.integers(-x.rank, x.rank))
        return self.node(self.choice(["Softmax", "Softmax", "LogSoftmax"]), [x.name], x.shape, axis=axis)

    # --- resampling and pooling -------------------------------------------------
    def resize(self):
        x = self.pick(lambda v: v.rank == 4)
        n, c, h, w = x.shape
        mode = self.choice(["nearest", "linear", "linear", "cubic"])
        ctm = self.choice(["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"])
        attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
        if mode == "nearest":
            attrs["nearest_mode"] = self.choice(["round_prefer_floor", "floor", "ceil", "round_prefer_ceil"])
            if ctm not in ("asymmetric",):
                attrs["coordinate_transformation_mode"] = "asymmetric"  # no ties at half-way points
        if self.chance(0.6):
            f = float(self.choice([2.0, 2.0, 0.5, 3.0, 1.5]))
            out = [int(np.floor(h * f)), int(np.floor(w * f))]
            if min(out) < 1:
                raise Skip("resize")
            if ctm == "align_corners" and (h * f != out[0] or w * f != out[1]):
                # ONNX's reference aligns the corners of the real-valued
                # width (scale x input), ONNX Runtime and PyTorch those of
                # the integer output: xonnx follows ONNX's test data, and
                # the engines legitimately differ here.
                raise Skip("align_corners with a fractional output width")
            scales = self.const(np.asarray([1, 1, f, f], F32))
            return self.node("Resize", [x.name, "", scales], [n, c] + out, **attrs)
        out = [int(self.rng.integers(1, 2 * h + 2)), int(self.rng.integers(1, 2 * w + 2))]
        sizes = self.ints_const([n, c] + out)
        return self.node("Resize", [x.name, "", "", sizes], [n, c] + out, **attrs)

    def pool(self):
        x = self.pick(lambda v: v.rank == 4 and min(v.shape[2:]) >= 2)
        n, c, h, w = x.shape
        if self.chance(0.25):
            return self.node(self.choice(["GlobalAveragePool", "GlobalMaxPool"]), [x.name], [n, c, 1, 1])
        op = self.choice(["MaxPool", "AveragePool"])
        k, s = int(self.choice([2, 3, 3])), int(self.choice([1, 2, 2]))
        pads = [int(self.rng.integers(0, k)) for _ in range(4)] if self.chance(0.5) else [0] * 4
        ceil = int(self.chance(0.3))
        attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=pads, ceil_mode=ceil)
        if op == "AveragePool":
            attrs["count_include_pad"] = int(self.chance(0.5))

        def size(d, p0, p1):
            span = d + p0 + p1 - k
            o = (-(-span // s) if ceil else span // s) + 1
            if ceil and (o - 1) * s >= d + p0:
                # A last window that starts in the padding: ONNX counts it,
                # PyTorch and ONNX Runtime do not.
                raise Skip("ceil-mode window in the padding")
            return o
        out = [size(h, pads[0], pads[2]), size(w, pads[1], pads[3])]
        if min(out) < 1 or h + pads[0] + pads[2] < k or w + pads[1] + pads[3] < k:
            raise Skip("pool")
        return self.node(op, [x.name], [n, c] + out, **attrs)

    # --- data movement -------------------------------------------------------------
    def concat(self):
        x = self.pick(lambda v: v.rank >= 1)
        axis = int(self.rng.integers(0, x.rank)) if not (x.rank == 4 and self.chance(0.6)) else 1
        fits = [v for v in self.pool if v.rank == x.rank and all(
            a == b for i, (a, b) in enumerate(zip(v.shape, x.shape)) if i != axis)]
        parts = [x] + [self.choice(fits) for _ in range(int(self.rng.integers(1, 3)))]
        self.rng.shuffle(parts)
        shape = list(x.shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        return self.node("Concat", [p.name for p in parts], shape, axis=axis - (x.rank if self.chance(0.3) else 0))

    def split(self):
        x = self.pick(lambda v: v.rank >= 1 and max(v.shape) >= 2)
        axis = self.choice([i for i, d in enumerate(x.shape) if d >= 2])
        cut = int(self.rng.integers(1, x.shape[axis]))
        sizes = [cut, x.shape[axis] - cut]
        shapes = []
        for sz in sizes:
            s = list(x.shape)
            s[axis] = sz
            shapes.append(s)
        return self.node("Split", [x.name, self.ints_const(sizes)], None, n_out=2, shapes=shapes, axis=axis)[
            int(self.rng.integers(0, 2))]

    def slice(self):
        x = self.pick(lambda v: v.rank >= 1)
        axes = sorted(set(int(a) for a in self.rng.integers(0, x.rank, int(self.rng.integers(1, x.rank + 1)))))
        starts, ends, steps, shape = [], [], [], list(x.shape)
        for a in axes:
            d = x.shape[a]
            step = int(self.choice([1, 1, 1, 2, -1, 3, -2]))
            lo, hi = sorted(int(t) for t in self.rng.integers(0, d + 1, 2))
            if hi == lo:
                hi = min(d, lo + 1)
                lo = hi - 1
            if step > 0:
                st, en = lo, hi
                n = -(-(en - st) // step)
            else:
                st, en = hi - 1, lo - 1
                n = -(-(st - en) // -step)
            # Written as ONNX allows: negative positions, and ends past the
            # dimension clamped.
            if self.chance(0.3):
                st -= d
            if en == -1:
                en = -d - 1 - int(self.rng.integers(0, 5))
            elif self.chance(0.3) and en == d:
                en = d + int(self.rng.integers(1, 1000))
            starts.append(st)
            ends.append(en)
            steps.append(step)
            shape[a] = n
        ins = [x.name, self.ints_const(starts), self.ints_const(ends), self.ints_const(axes), self.ints_const(steps)]
        return self.node("Slice", ins, shape)

    def transpose(self):
        x = self.pick(lambda v: v.rank >= 2)
        perm = [int(p) for p in self.rng.permutation(x.rank)]
        return self.node("Transpose", [x.name], [x.shape[p] for p in perm], perm=perm)

    def reshape(self):
        x = self.pick(lambda v: v.rank >= 1)
        kind = self.choice(["flatten", "merge", "split", "unsqueeze", "squeeze"])
        s = list(x.shape)
        if kind == "flatten":
            axis = int(self.rng.integers(0, x.rank + 1))
            return self.node("Flatten", [x.name], [int(np.prod(s[:axis])), int(np.prod(s[axis:]))], axis=axis)
        if kind == "merge" and x.rank >= 2:
            a = int(self.rng.integers(0, x.rank - 1))
            t = s[:a] + [s[a] * s[a + 1]] + s[a + 2:]
        elif kind == "split" and any(d % 2 == 0 for d in s):
            a = self.choice([i for i, d in enumerate(s) if d % 2 == 0])
            t = s[:a] + [2, s[a] // 2] + s[a + 1:]
        elif kind == "unsqueeze":
            a = int(self.rng.integers(0, x.rank + 1))
            t = s[:a] + [1] + s[a:]
            return self.node("Unsqueeze", [x.name, self.ints_const([a])], t)
        elif kind == "squeeze" and 1 in s:
            a = self.choice([i for i, d in enumerate(s) if d == 1])
            return self.node("Squeeze", [x.name, self.ints_const([a])], s[:a] + s[a + 1:])
        else:
            raise Skip("reshape")
        written = list(t)
        if self.chance(0.4):
            written[int(self.rng.integers(0, len(t)))] = -1
        return self.node("Reshape", [x.name, self.ints_const(written)], t)

    def pad(self):
        x = self.pick(lambda v: v.rank >= 1)
        mode = self.choice(["constant", "constant", "reflect", "edge"])
        pads = []
        for d in x.shape:
            hi = d - 1 if mode == "reflect" else 3
            pads.append(int(self.rng.integers(0, hi + 1)) if hi > 0 else 0)
        for d in x.shape:
            hi = d - 1 if mode == "reflect" else 3
            pads.append(int(self.rng.integers(0, hi + 1)) if hi > 0 else 0)
        if mode == "constant" and self.chance(0.3):  # negative pads crop
            a = int(self.rng.integers(0, x.rank))
            if x.shape[a] + pads[a + x.rank] >= 2:
                pads[a] = -1
        shape = [d + pads[i] + pads[i + x.rank] for i, d in enumerate(x.shape)]
        ins = [x.name, self.ints_const(pads)]
        if mode == "constant":
            ins.append(self.const(F32(self.rng.standard_normal())))
        return self.node("Pad", ins, shape, mode=mode)

    def depth_space(self):
        x = self.pick(lambda v: v.rank == 4)
        n, c, h, w = x.shape
        if c % 4 == 0 and self.chance(0.5):
            return self.node("DepthToSpace", [x.name], [n, c // 4, h * 2, w * 2], blocksize=2,
                             mode=self.choice(["DCR", "CRD"]))
        if h % 2 == 0 and w % 2 == 0:
            return self.node("SpaceToDepth", [x.name], [n, c * 4, h // 2, w // 2], blocksize=2)
        raise Skip("depth/space")

    def expand_tile(self):
        x = self.pick(lambda v: 1 <= v.rank <= 4 and v.size <= 4096)
        if self.chance(0.5):
            reps = [int(self.choice([1, 1, 2, 3])) for _ in x.shape]
            return self.node("Tile", [x.name, self.ints_const(reps)], [d * r for d, r in zip(x.shape, reps)])
        target = [d if d != 1 else int(self.choice([1, 2, 5])) for d in x.shape]
        if self.chance(0.3):
            target = [2] + target
        return self.node("Expand", [x.name, self.ints_const(target)], target)

    def gather(self):
        x = self.pick(lambda v: v.rank >= 1)
        axis = int(self.rng.integers(0, x.rank))
        d = x.shape[axis]
        ishape = self.choice([(), (int(self.rng.integers(1, 6)),), (2, int(self.rng.integers(1, 4)))])
        idx = self.rng.integers(-d, d, ishape)
        shape = x.shape[:axis] + tuple(ishape) + x.shape[axis + 1:]
        return self.node("Gather", [x.name, self.ints_const(idx)], shape, axis=axis)

    def gather_runtime(self):
        """A Gather whose indices are a graph input (in range, some negative):
        the indices the runtime checks."""
        x = self.pick(lambda v: v.rank >= 1)
        axis = int(self.rng.integers(0, x.rank))
        d = x.shape[axis]
        n = int(self.rng.integers(1, 9))
        name = self.name("idx")
        self.inputs.append(Value(name, (n,), np.int64))
        self.feeds[name] = self.rng.integers(-d, d, n).astype(np.int64)
        shape = x.shape[:axis] + (n,) + x.shape[axis + 1:]
        return self.node("Gather", [x.name, name], shape, axis=axis)

    def scatter(self):
        """ScatterND or ScatterElements with indices and updates as graph
        inputs: some indices negative, repeated where a reduction combines
        them (distinct without one, where ONNX leaves repeats undefined)."""
        x = self.pick(lambda v: v.rank >= 1 and v.size <= 4096)
        reduction = self.choice(["none", "none", "add", "mul"])
        r = self.rng
        if self.chance(0.5):
            k = int(r.integers(1, x.rank + 1))
            cells = int(np.prod(x.shape[:k]))
            n = int(r.integers(1, min(cells, 8) + 1))
            flat = r.choice(cells, n, replace=False) if reduction == "none" else r.integers(0, cells, n)
            idx = np.stack(np.unravel_index(flat, x.shape[:k]), axis=-1).astype(np.int64)
            # Some negative: counted from the end.
            neg = r.random(idx.shape) < 0.3
            idx = np.where(neg, idx - np.asarray(x.shape[:k], np.int64), idx)
            ushape = (n,) + tuple(x.shape[k:])
            op, attrs = "ScatterND", {}
        elif self.chance(0.4):
            # Rows: one index per position along the axis, expanded over the
            # other dims (a graph network's edge list, torch's expand_as).
            axis = int(r.integers(0, x.rank))
            d = x.shape[axis]
            m = int(r.integers(1, d + 1)) if reduction == "none" else int(r.integers(1, 2 * d + 1))
            rows = r.choice(d, m, replace=False) if reduction == "none" else r.integers(0, d, m)
            rows = np.where(r.random(m) < 0.3, rows - d, rows).astype(np.int64)
            ishape = tuple(int(r.integers(1, n + 1)) if k != axis else m for k, n in enumerate(x.shape))
            rname = self.name("rows")
            self.inputs.append(Value(rname, (m,), np.int64))
            self.feeds[rname] = rows
            lead = [k for k in range(x.rank) if k != axis]
            unsq = self.node("Unsqueeze", [rname, self.ints_const(lead)], [1 if k != axis else m for k in range(x.rank)],
                             dtype=np.int64)
            idx_v = self.node("Expand", [unsq.name, self.ints_const(list(ishape))], ishape, dtype=np.int64)
            uname = self.name("upd")
            self.inputs.append(Value(uname, ishape))
            self.feeds[uname] = r.standard_normal(ishape).astype(F32)
            attrs = {"axis": axis}
            if reduction != "none":
                attrs["reduction"] = reduction
            if self.chance(0.3):  # the same rows read back
                return self.node("GatherElements", [x.name, idx_v.name], ishape, axis=axis)
            return self.node("ScatterElements", [x.name, idx_v.name, uname], x.shape, **attrs)
        else:
            axis = int(r.integers(0, x.rank))
            d = x.shape[axis]
            m = int(r.integers(1, d + 1))
            if self.chance(0.25):
                # GatherElements of any indices, the other dims possibly
                # shorter than the data's (as torch.gather allows).
                ishape = tuple(m if k == axis else int(r.integers(1, n + 1)) for k, n in enumerate(x.shape))
                iname = self.name("idx")
                self.inputs.append(Value(iname, ishape, np.int64))
                self.feeds[iname] = r.integers(-d, d, ishape).astype(np.int64)
                return self.node("GatherElements", [x.name, iname], ishape, axis=axis)
            ishape = x.shape[:axis] + (m,) + x.shape[axis + 1:]
            if reduction == "none":
                # Distinct along the axis in every line.
                keys = r.random(x.shape[:axis] + (d,) + x.shape[axis + 1:])
                idx = np.argsort(keys, axis=axis).take(range(m), axis=axis).astype(np.int64)
            else:
                idx = r.integers(0, d, ishape).astype(np.int64)
            idx = np.where(r.random(idx.shape) < 0.3, idx - d, idx)
            ushape = tuple(ishape)
            op, attrs = "ScatterElements", {"axis": axis}
        iname, uname = self.name("idx"), self.name("upd")
        self.inputs.append(Value(iname, idx.shape, np.int64))
        self.feeds[iname] = idx
        self.inputs.append(Value(uname, ushape))
        self.feeds[uname] = r.standard_normal(ushape).astype(F32)
        if reduction != "none":
            attrs["reduction"] = reduction
        return self.node(op, [x.name, iname, uname], x.shape, **attrs)

    def topk(self):
        # Of a graph input: computed values tie or nearly tie (a resize of a
        # constant), and which of two equal-looking values comes first is
        # then rounding, not semantics.
        x = self.pick(lambda v: v.rank >= 1 and v.shape[-1] >= 2 and v in self.inputs)
        axis = int(self.rng.integers(0, x.rank))
        k = int(self.rng.integers(1, x.shape[axis] + 1))
        shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
        vals = self.node("TopK", [x.name, self.ints_const([k])], shape, n_out=2, shapes=[shape, shape], axis=axis,
                         largest=int(self.chance(0.7)), sorted=1)
        # The indices output is an int64 value (an output, never read).
        self.pool.remove(vals[1])
        vals[1].dtype = np.int64
        self.ints.append(vals[1])
        return vals[0]

    def detect(self):
        """A detector's post-processing on graph inputs: a score mask read by
        two NonZero (as exporters write x[mask] and where(mask)), the kept
        scores gathered, NonMaxSuppression and its boxes gathered. Counts
        depend on the values, so these run on the host between programs;
        the shapes come from a numpy reference of the same selection."""
        r = self.rng
        n, c = int(r.integers(1, 121)), int(self.choice([1, 2, 4]))
        center, half = r.uniform(0, 64, (n, 2)), r.uniform(0.5, 12, (n, 2))
        corners = np.concatenate([center - half, center + half], 1)
        iou_th, score_th = float(self.choice([0.0, 0.3, 0.5, 0.7])), float(self.choice([0.0, 0.25, 0.6]))
        iou = pairwise_iou(corners)
        if np.any(np.abs(iou - iou_th) < 1e-5):
            raise Skip("a pair of boxes on the IoU threshold")
        center_box = self.chance(0.3)
        if center_box:
            stored = np.concatenate([center, 2 * half], 1)
        else:  # ONNX takes either diagonal pair of corners
            flip = r.random(n) < 0.2
            stored = np.where(flip[:, None], corners[:, [2, 3, 0, 1]], corners)
        scores = ((r.permutation(c * n) + 1) / (c * n + 1)).astype(F32).reshape(1, c, n)
        max_out = int(self.choice([1, 3, 100]))
        bname, sname = self.name("boxes"), self.name("scores")
        self.inputs += [Value(bname, (1, n, 4)), Value(sname, (1, c, n))]
        self.feeds[bname], self.feeds[sname] = stored.astype(F32).reshape(1, n, 4), scores
        flat = self.node("Reshape", [sname, self.ints_const([-1])], (c * n,))
        mask = self.node("Greater", [flat.name, self.const(np.asarray(score_th, F32))], (c * n,), dtype=np.bool_)
        hits = int((scores.ravel() > F32(score_th)).sum())
        where = self.node("NonZero", [mask.name], (1, hits), dtype=np.int64)
        self.node("NonZero", [mask.name], (1, hits), dtype=np.int64)  # the same node again: an output
        idx = self.node("Reshape", [where.name, self.ints_const([-1])], (hits,), dtype=np.int64)
        kept = self.node("Gather", [flat.name, idx.name], (hits,))
        selected = nms_reference(corners, scores[0], max_out, iou_th, score_th)
        sel = self.node("NonMaxSuppression", [bname, sname, self.ints_const([max_out]), self.const(np.asarray([iou_th], F32)),
                                              self.const(np.asarray([score_th], F32))], (len(selected), 3),
                        dtype=np.int64, center_point_box=int(center_box))
        col = self.node("Gather", [sel.name, self.ints_const(2)], (len(selected),), dtype=np.int64, axis=1)
        rows = self.node("Reshape", [bname, self.ints_const([n, 4])], (n, 4))
        self.node("Gather", [rows.name, col.name], (len(selected), 4))
        return kept

    def half_round_trip(self):
        # Of a graph input: rounding a computed value to 16 bits turns the
        # last-bit differences of two correct engines into 16-bit steps.
        x = self.pick(lambda v: v in self.inputs)
        t = self.choice([TensorProto.FLOAT16, TensorProto.BFLOAT16])
        c = self.node("Cast", [x.name], x.shape, to=t)
        self.pool.remove(c)
        return self.node("Cast", [c.name], x.shape, to=TensorProto.FLOAT)

    def recurrent(self):
        x = self.pick(lambda v: v.rank == 3 and v.shape[-1] <= 64 and v.shape[0] <= 16)
        t, n, d = x.shape
        op = self.choice(["LSTM", "GRU", "RNN"])
        gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        hidden = int(self.choice([4, 8, 16]))
        dirs = self.choice(["forward", "reverse", "bidirectional"])
        nd = 2 if dirs == "bidirectional" else 1
        w = self.weight([nd, gates * hidden, d], d)
        r = self.weight([nd, gates * hidden, hidden], hidden)
        b = self.const((self.rng.standard_normal([nd, 2 * gates * hidden]) * 0.1).astype(F32), "b")
        y = self.node(op, [x.name, w, r, b], [t, nd, n, hidden], hidden_size=hidden, direction=dirs)
        return self.node("Reshape", [y.name, self.ints_const([t, n, nd * hidden])], [t, n, nd * hidden])

    def cumsum(self):
        x = self.pick(lambda v: v.rank >= 1)
        axis = int(self.rng.integers(0, x.rank))
        return self.node("CumSum", [x.name, self.ints_const(axis)], x.shape, exclusive=int(self.chance(0.3)),
                         reverse=int(self.chance(0.3)))

    def reduce(self):
        x = self.pick(lambda v: v.rank >= 1)
        op = self.choice(["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceLogSumExp",
                          "ReduceSumSquare"])
        axes = sorted(set(int(a) for a in self.rng.integers(0, x.rank, int(self.rng.integers(1, x.rank + 1)))))
        keep = int(self.chance(0.6))
        shape = [1 if i in axes else d for i, d in enumerate(x.shape)] if keep else \
            [d for i, d in enumerate(x.shape) if i not in axes]
        if op == "ReduceSum":
            return self.node(op, [x.name, self.ints_const(axes)], shape, keepdims=keep)
        return self.node(op, [x.name], shape, axes=axes, keepdims=keep)

    def argmax(self):
        x = self.pick(lambda v: v.rank >= 1 and v in self.inputs)
        axis = int(self.rng.integers(0, x.rank))
        keep = int(self.chance(0.5))
        shape = [1 if i == axis else d for i, d in enumerate(x.shape)] if keep else \
            [d for i, d in enumerate(x.shape) if i != axis]
        return self.node(self.choice(["ArgMax", "ArgMin"]), [x.name], shape, dtype=np.int64, axis=axis,
                         keepdims=keep)

    # --- patterns ---------------------------------------------------------------
    def squeeze_excite(self):
        x = self.pick(lambda v: v.rank == 4 and v.shape[1] >= 2)
        n, c = x.shape[:2]
        r = max(1, c // 4)
        g = self.node("GlobalAveragePool", [x.name], [n, c, 1, 1])
        a = self.node("Conv", [g.name, self.weight([r, c, 1, 1], c)], [n, r, 1, 1], kernel_shape=[1, 1])
        a = self.node("Relu", [a.name], a.shape)
        b = self.node("Conv", [a.name, self.weight([c, r, 1, 1], r)], [n, c, 1, 1], kernel_shape=[1, 1])
        s = self.node("Sigmoid", [b.name], b.shape)
        return self.node("Mul", [x.name, s.name], x.shape)

    def residual_block(self):
        x = self.pick(lambda v: v.rank == 4 and v.shape[1] <= 64)
        n, c, h, w = x.shape
        if n * c * c * h * w * 9 * 2 > MAX_MACS:
            raise Skip("block")
        t = self.node("Relu", [x.name], x.shape) if self.chance(0.5) else x
        d = int(self.choice([1, 1, 2]))
        a = self.node("Conv", [t.name, self.weight([c, c, 3, 3], 9 * c), self.const(np.zeros(c, F32))], x.shape,
                      kernel_shape=[3, 3], pads=[d] * 4, dilations=[d, d])
        a = self.node("Relu", [a.name], x.shape)
        b = self.node("Conv", [a.name, self.weight([c, c, 3, 3], 9 * c)], x.shape, kernel_shape=[3, 3], pads=[1] * 4)
        return self.node("Add", [b.name, x.name] if self.chance(0.5) else [x.name, b.name], x.shape)

    def upsample_merge(self):
        """A decoder step: upsample the coarse value x2 and add or
        concatenate a skip value of the finer size."""
        x = self.pick(lambda v: v.rank == 4)
        n, c, h, w = x.shape
        fine = [v for v in self.pool if v.rank == 4 and v.shape[0] == n and v.shape[2:] == (2 * h, 2 * w)]
        if not fine:
            raise Skip("no skip value")
        skip = self.choice(fine)
        ctm = self.choice(["align_corners", "half_pixel", "pytorch_half_pixel"])
        up = self.node("Resize", [x.name, "", self.const(np.asarray([1, 1, 2, 2], F32))], [n, c, 2 * h, 2 * w],
                       mode="linear", coordinate_transformation_mode=ctm)
        if skip.shape[1] == c and self.chance(0.5):
            return self.node("Add", [up.name, skip.name], up.shape)
        return self.node("Concat", [up.name, skip.name], [n, c + skip.shape[1], 2 * h, 2 * w], axis=1)

    def attention(self):
        x = self.pick(lambda v: v.rank == 3 and v.shape[-1] <= 64 and v.shape[1] <= 64)
        n, t, d = x.shape
        q, k, v = (self.node("MatMul", [x.name, self.weight([d, d], d)], x.shape) for _ in range(3))
        kt = self.node("Transpose", [k.name], [n, d, t], perm=[0, 2, 1])
        qs = self.node("Mul", [q.name, self.const(F32(1 / np.sqrt(d)))], q.shape)
        s = self.node("MatMul", [qs.name, kt.name], [n, t, t])
        p = self.node("Softmax", [s.name], s.shape, axis=-1)
        o = self.node("MatMul", [p.name, v.name], x.shape)
        return self.node("Add", [o.name, x.name], x.shape)

    TEMPLATES = [(conv, 12), (conv_transpose, 3), (matmul, 5), (unary, 10), (smooth_unary, 3), (binary, 10),
                 (where, 2), (variadic, 2), (batchnorm, 3), (layernorm, 3), (instancenorm, 2), (softmax, 3),
                 (resize, 5), (pool, 5), (concat, 6), (split, 3), (slice, 5), (transpose, 4), (reshape, 5),
                 (pad, 3), (depth_space, 2), (expand_tile, 2), (gather, 3), (cumsum, 1), (reduce, 4),
                 (argmax, 1), (squeeze_excite, 3), (residual_block, 5), (upsample_merge, 4), (attention, 2),
                 (gather_runtime, 2), (topk, 2), (half_round_trip, 1), (recurrent, 2), (scatter, 2),
                 (detect, 1)]

    def start(self):
        r = self.rng
        kind = self.choice(["image", "image", "image", "sequence", "matrix"])
        if kind == "image":
            n = int(self.choice([1, 1, 2]))
            c = int(self.choice([1, 3, 4, 8, 16, 24, 32]))
            h = int(r.integers(3, 33))
            w = h if self.chance(0.6) else int(r.integers(3, 33))
            while n * c * h * w > MAX_ELEMENTS // 2:
                h, w = max(3, h // 2), max(3, w // 2)
            x = self.add_input([n, c, h, w])
            if self.chance(0.3):
                self.add_input([n, int(self.choice([c, 8, 16])), h, w])
        elif kind == "sequence":
            self.add_input([int(self.choice([1, 2])), int(r.integers(2, 33)), int(self.choice([8, 16, 32, 48, 64]))])
        else:
            self.add_input([int(r.integers(1, 17)), int(r.integers(1, 65))])
        return kind

    def build(self):
        self.start()
        fns = [t for t, _ in self.TEMPLATES]
        w = np.asarray([wt for _, wt in self.TEMPLATES], np.float64)
        tries = 0
        while len(self.nodes) < self.max_nodes and tries < 20 * self.max_nodes:
            tries += 1
            fn = fns[int(self.rng.choice(len(fns), p=w / w.sum()))]
            mark = (len(self.nodes), len(self.inits), len(self.pool), len(self.ints))
            try:
                fn(self)
            except Skip:
                self.undo_to(mark)
        return self.finish()

    def finish(self):
        produced = {v.name: v for v in self.pool + self.ints}
        read = {i for n in self.nodes for i in n.input}
        leaves = [v for v in self.pool + self.ints if v.name not in read and v not in self.inputs]
        middle = [v for v in self.pool if v.name in read and v not in self.inputs]
        outs = leaves[-4:]
        for v in middle:
            if self.chance(0.15) and len(outs) < 6:
                outs.append(v)
        if not outs:
            outs = [self.pool[-1]] if self.pool[-1] not in self.inputs else []
        if not outs:  # no node applied: one Identity
            outs = [self.node("Identity", [self.inputs[0].name], self.inputs[0].shape)]
        assert all(o.name in produced or o in self.inputs for o in outs)
        return make_model(self.nodes, self.inits, self.inputs, outs), dict(self.feeds)


def pairwise_iou(corners):
    """IoU of every pair of boxes given as (y1, x1, y2, x2) with y1 < y2, x1 < x2."""
    lo = np.maximum(corners[:, None, :2], corners[None, :, :2])
    hi = np.minimum(corners[:, None, 2:], corners[None, :, 2:])
    inter = np.prod(np.clip(hi - lo, 0, None), axis=-1)
    area = np.prod(corners[:, 2:] - corners[:, :2], axis=-1)
    return inter / (area[:, None] + area[None, :] - inter)


def nms_reference(corners, scores, max_out, iou_th, score_th):
    """ONNX NonMaxSuppression of one batch: per class, boxes over the score
    threshold by falling score, each kept unless a kept one overlaps it by
    more than the IoU threshold, at most max_out; rows (0, class, box)."""
    iou = pairwise_iou(corners)
    rows = []
    for c, s in enumerate(scores):
        kept = []
        for k in np.argsort(-s, kind="stable"):
            if len(kept) >= max_out or not s[k] > np.float32(score_th):
                break
            if all(iou[k, j] <= iou_th for j in kept):
                kept.append(k)
        rows += [(0, c, k) for k in kept]
    return rows


def elem_type(dtype):
    return {np.dtype(F32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
            np.dtype(np.bool_): TensorProto.BOOL}[np.dtype(dtype)]


def make_model(nodes, inits, inputs, outputs, name="difftest"):
    g = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(v.name, elem_type(v.dtype), v.shape) for v in inputs],
        [helper.make_tensor_value_info(v.name, elem_type(v.dtype), v.shape) for v in outputs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="xonnx-difftest")
    m.ir_version = 8
    return m
