#!/usr/bin/env python3
"""Differential testing of tpusim against its reference evaluator (docs/testing.md).

Generates random valid HLO modules (elementwise, broadcast, transpose, reshape, slice,
concatenate, pad, reverse, reduce, reduce-window, dot, convolution, gather, sort, select,
clamp, iota, dynamic-slice, a while loop, s32 arithmetic, converts; a quarter with collectives
over replicas, a quarter of the rest global programs with sharded parameters that tpusim
partitions, 2 x 4 meshes included) from a seed, runs each with
`tpusim run FILE` (which simulates it with values and compares every output with the
evaluator), and sorts the outcomes: match, bf16-ulp (a module computing in bf16 that
`tpusim run`'s 1e-3 calls a mismatch but that lies within one bf16 ulp of the largest
value, the bf16 tolerance), timing-only (a kernel computes no values), refused (a clean
one-line error), rounding-flip (a MISMATCH that a floor or a comparison explains: gone
with each floor a copy, or on two other input seeds where the module compares or sorts;
printed but not a bug), and the bugs: MISMATCH, CRASH (a signal), HANG (timeout).
A failing module is reduced to the fewest outputs and instructions that still fail and
kept under --out.

  scripts/difftest.py --tpusim build/cli/tpusim --seed 1 --count 200 --out /tmp/difftest
"""
import argparse
import collections
import os
import random
import re
import subprocess
import sys
import tempfile

REDUCERS = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}

cond {
  s = (s32[], f32[8,16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[8,16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[8,16] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[8,16] tanh(x)
  ROOT out = (s32[], f32[8,16]) tuple(j, y)
}

"""
DIMS = [1, 2, 3, 4, 5, 8, 16, 24, 128, 130]
MAX_ELEMENTS = 1 << 16


def shape(dims, t="f32"):
    if t.startswith("(") or "[" in t:  # a tuple type or a whole shape, written whole
        return t
    return "%s[%s]" % (t, ",".join(str(d) for d in dims))


def count(dims):
    n = 1
    for d in dims:
        n *= d
    return n


class Module:
    """A module under construction: instructions as (name, dims, text) in order."""

    def __init__(self, rng):
        self.rng = rng
        self.instrs = []  # (name, dims or None for non-f32 values, text)
        self.params = 0
        self.replicas = 1  # 8: one program per replica of v3-8, with collectives
        # A global program partitioned over the 8 cores: its parameters' shardings, drawn
        # from their own generator so the module is the one the seed makes unsharded.
        self.mesh = None

    def add(self, dims, text, t="f32"):
        name = "v%d" % len(self.instrs)
        self.instrs.append((name, dims if t == "f32" else None, "%s = %s %s" % (name, shape(dims, t), text)))
        return name

    def param(self, dims, t="f32"):
        text = "parameter(%d)" % self.params
        if self.mesh:
            text += ", sharding=" + random_sharding(self.mesh, dims)
        p = self.add(dims, text, t)
        self.params += 1
        return p

    def values(self):
        return [(n, d) for n, d, _ in self.instrs if d is not None]

    def random_dims(self, rank=None):
        rank = rank if rank is not None else self.rng.randint(1, 3)
        while True:
            dims = [self.rng.choice(DIMS) for _ in range(rank)]
            if count(dims) <= MAX_ELEMENTS:
                return dims


def random_sharding(rng, dims):
    """A sharding over the 8 cores as JAX prints them: replicated, one dimension over all 8, a
    2 x 4 mesh over two dimensions (devices in order or in the mesh's transposed order), or one
    dimension over one mesh axis with the tiles copied over the other."""
    choices = ["{replicated}"]

    def tiled(split, copies=1, transposed=False):
        tiles = [split.get(k, 1) for k in range(len(dims))] + ([copies] if copies > 1 else [])
        order = "<=[2,4]T(1,0)" if transposed else "<=[8]"
        return "{devices=[%s]%s%s}" % (",".join(map(str, tiles)), order,
                                       " last_tile_dim_replicate" if copies > 1 else "")

    for i, d in enumerate(dims):
        if d % 8 == 0:
            choices.append(tiled({i: 8}))
        if d % 2 == 0:
            choices.append(tiled({i: 2}, copies=4))
        if d % 4 == 0:
            choices.append(tiled({i: 4}, copies=2, transposed=True))
        for j, e in enumerate(dims):
            if i != j and d % 2 == 0 and e % 4 == 0:
                choices.append(tiled({i: 2, j: 4}, transposed=rng.random() < 0.5))
    return rng.choice(choices)


def grow(m):
    """Adds one random op on existing values."""
    r = m.rng
    name, dims = r.choice([(n, d) for n, d in m.values() if d])  # arrays, not scalars
    kind = r.choice(["unary", "binary", "binary", "broadcast", "transpose", "reshape", "slice",
                     "concatenate", "pad", "reduce", "dot", "select", "convert", "reverse",
                     "iota", "window", "dynamic-slice", "clamp", "divide", "sort", "gather",
                     "convolution", "while", "integer", "batchnorm", "scatter", "tuple",
                     "batch-dot"] +
                    ["collective"] * (8 if m.replicas > 1 else 0))
    if kind == "unary":
        op = r.choice(["negate", "abs", "tanh", "logistic", "sine", "floor", "copy"])
        return m.add(dims, "%s(%s)" % (op, name))
    if kind == "binary":
        same = [n for n, d in m.values() if d == dims]
        other = r.choice(same)
        op = r.choice(["add", "subtract", "multiply", "maximum", "minimum"])
        return m.add(dims, "%s(%s, %s)" % (op, name, other))
    if kind == "broadcast" and len(dims) < 3:
        at = r.randint(0, len(dims))
        new = dims[:at] + [r.choice(DIMS)] + dims[at:]
        if count(new) > MAX_ELEMENTS:
            return None
        mapping = [d if d < at else d + 1 for d in range(len(dims))]
        return m.add(new, "broadcast(%s), dimensions={%s}" % (name, ",".join(map(str, mapping))))
    if kind == "transpose" and len(dims) >= 2:
        perm = list(range(len(dims)))
        r.shuffle(perm)
        return m.add([dims[p] for p in perm],
                      "transpose(%s), dimensions={%s}" % (name, ",".join(map(str, perm))))
    if kind == "reshape":
        if len(dims) >= 2 and r.random() < 0.5:
            k = r.randint(0, len(dims) - 2)
            new = dims[:k] + [dims[k] * dims[k + 1]] + dims[k + 2:]
        else:
            k = r.randint(0, len(dims) - 1)
            f = [x for x in (2, 3, 4, 8) if dims[k] % x == 0 and dims[k] > x]
            if not f or len(dims) >= 3:
                return None
            x = r.choice(f)
            new = dims[:k] + [x, dims[k] // x] + dims[k + 1:]
        return m.add(new, "reshape(%s)" % name)
    if kind == "slice":
        bounds, new = [], []
        for d in dims:
            lo = r.randint(0, d - 1)
            hi = r.randint(lo + 1, d)
            st = r.choice([1, 1, 2])
            bounds.append("[%d:%d:%d]" % (lo, hi, st))
            new.append((hi - lo + st - 1) // st)
        return m.add(new, "slice(%s), slice={%s}" % (name, ", ".join(bounds)))
    if kind == "concatenate":
        d = r.randint(0, len(dims) - 1)
        new = list(dims)
        new[d] *= 2
        if count(new) > MAX_ELEMENTS:
            return None
        return m.add(new, "concatenate(%s, %s), dimensions={%d}" % (name, name, d))
    if kind == "pad":
        zero = m.add([], "constant(0)")
        cfg, new = [], []
        for d in dims:
            lo, hi = r.randint(0, 2), r.randint(0, 2)
            cfg.append("%d_%d" % (lo, hi))
            new.append(d + lo + hi)
        if count(new) > MAX_ELEMENTS:
            return None
        return m.add(new, "pad(%s, %s), padding=%s" % (name, zero, "x".join(cfg)))
    if kind == "reduce":
        red = [d for d in range(len(dims)) if r.random() < 0.5] or [r.randint(0, len(dims) - 1)]
        fn = r.choice(["add", "max"])
        init = m.add([], "constant(%s)" % ("0" if fn == "add" else "-inf"))
        new = [dims[d] for d in range(len(dims)) if d not in red]
        return m.add(new, "reduce(%s, %s), dimensions={%s}, to_apply=%s" %
                     (name, init, ",".join(map(str, red)), fn))
    if kind == "dot" and len(dims) == 2:
        n = r.choice(DIMS)
        if dims[1] * n > MAX_ELEMENTS or dims[0] * n > MAX_ELEMENTS:
            return None
        w = m.param([dims[1], n])
        return m.add([dims[0], n], "dot(%s, %s), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
                     % (name, w))
    if kind == "select":
        same = [n for n, d in m.values() if d == dims]
        other = r.choice(same)
        p = m.add(dims, "compare(%s, %s), direction=%s" % (name, other, r.choice(["GT", "LT", "GE"])),
                  t="pred")
        return m.add(dims, "select(%s, %s, %s)" % (p, name, other))
    if kind == "reverse":
        flip = [d for d in range(len(dims)) if r.random() < 0.5] or [0]
        return m.add(dims, "reverse(%s), dimensions={%s}" % (name, ",".join(map(str, flip))))
    if kind == "iota":
        d = r.randint(0, len(dims) - 1)
        i = m.add(dims, "iota(), iota_dimension=%d" % d, t="s32")
        f = m.add(dims, "convert(%s)" % i)
        return m.add(dims, "multiply(%s, %s)" % (name, f))
    if kind == "window":  # pooling: max or sum over a window, strides and padding
        size = [r.choice([1, 2, 3]) if d >= 3 else 1 for d in dims]
        stride = [r.choice([1, 2]) if s > 1 else 1 for s in size]
        pad = [r.choice([0, 1]) if s > 1 else 0 for s in size]
        new = [(d + 2 * p - s) // st + 1 for d, s, st, p in zip(dims, size, stride, pad)]
        fn = r.choice(["add", "max"])
        init = m.add([], "constant(%s)" % ("0" if fn == "add" else "-inf"))
        win = "size=%s stride=%s pad=%s" % ("x".join(map(str, size)), "x".join(map(str, stride)),
                                            "x".join("%d_%d" % (p, p) for p in pad))
        return m.add(new, "reduce-window(%s, %s), window={%s}, to_apply=%s" % (name, init, win, fn))
    if kind == "dynamic-slice":
        sizes = [r.randint(1, d) for d in dims]
        starts = [m.add([], "constant(%d)" % r.randint(-1, d), t="s32") for d in dims]
        return m.add(sizes, "dynamic-slice(%s, %s), dynamic_slice_sizes={%s}" %
                     (name, ", ".join(starts), ",".join(map(str, sizes))))
    if kind == "clamp":
        lo = m.add([], "constant(-0.5)")
        hi = m.add([], "constant(0.75)")
        return m.add(dims, "clamp(%s, %s, %s)" % (lo, name, hi))
    if kind == "divide":  # by 1 + |x|: no division by zero
        one = m.add([], "constant(1)")
        ones = m.add(dims, "broadcast(%s), dimensions={}" % one)
        a = m.add(dims, "abs(%s)" % name)
        return m.add(dims, "divide(%s, %s)" % (name, m.add(dims, "add(%s, %s)" % (a, ones))))
    if kind == "sort":
        d = len(dims) - 1
        return m.add(dims, "sort(%s), dimensions={%d}, to_apply=lt" % (name, d))
    if kind == "gather" and len(dims) == 2:  # rows of `name` picked by s32 ids in [0, 8)
        if dims[0] < 8:
            return None
        b_ = r.choice([1, 4, 8, 16])
        ids = m.param([b_], t="s32")
        return m.add([b_, dims[1]], "gather(%s, %s), offset_dims={1}, collapsed_slice_dims={0}, "
                     "start_index_map={0}, index_vector_dim=1, slice_sizes={1,%d}"
                     % (name, ids, dims[1]))
    if kind == "convolution":  # NHWC, a k x k window with same padding, stride 1 or 2
        n, h, w, c, o = r.choice([1, 2, 8]), r.choice([4, 5, 8]), r.choice([4, 8]), \
            r.choice([3, 8, 16]), r.choice([4, 8])
        k = r.choice([1, 3])
        st = r.choice([1, 2])
        x = m.param([n, h, w, c])
        f = m.param([k, k, c, o])
        p = (k - 1) // 2
        oh, ow = (h + 2 * p - k) // st + 1, (w + 2 * p - k) // st + 1
        return m.add([n, oh, ow, o], "convolution(%s, %s), window={size=%dx%d stride=%dx%d "
                     "pad=%d_%dx%d_%d}, dim_labels=b01f_01io->b01f" % (x, f, k, k, st, st, p, p, p, p))
    if kind == "while":  # three trips of tanh over a f32[8,16] state
        x = m.param([8, 16])
        zero = m.add([], "constant(0)", t="s32")
        init = m.add([], "tuple(%s, %s)" % (zero, x), t="(s32[], f32[8,16])")
        loop = m.add([], "while(%s), condition=cond, body=body" % init, t="(s32[], f32[8,16])")
        return m.add([8, 16], "get-tuple-element(%s), index=1" % loop)
    if kind == "integer":  # s32 arithmetic on a new s32 parameter (values in [0, 8)), back to f32
        q = m.param(dims, t="s32")
        op = r.choice(["add", "subtract", "multiply", "maximum", "minimum", "negate", "abs",
                       "divide", "remainder", "and", "or", "xor", "shift-left"])
        if op in ("negate", "abs"):
            v = m.add(dims, "%s(%s)" % (op, q), t="s32")
        elif op in ("divide", "remainder"):  # by 1 + q: never zero
            one = m.add([], "constant(1)", t="s32")
            ones = m.add(dims, "broadcast(%s), dimensions={}" % one, t="s32")
            d = m.add(dims, "add(%s, %s)" % (q, ones), t="s32")
            v = m.add(dims, "%s(%s, %s)" % (op, q, d), t="s32")
        else:
            v = m.add(dims, "%s(%s, %s)" % (op, q, m.param(dims, t="s32")), t="s32")
        f = m.add(dims, "convert(%s)" % v)
        return m.add(dims, "add(%s, %s)" % (name, f))
    if kind == "convert":
        b = m.add(dims, "convert(%s)" % name, t="bf16")
        return m.add(dims, "convert(%s)" % b)
    if kind == "batchnorm":
        return batch_norm_layer(m, name, dims)
    if kind == "scatter" and len(dims) == 2:  # ids past the rows: XLA skips those updates
        # rows of new updates added into `name` at s32 ids in [0, 8) (an embedding gradient),
        # ids as [b] or [b, 1] (index_vector_dim past the last or on it)
        b_ = r.choice([1, 3, 8, 16])
        upd = m.param([b_, dims[1]])
        if r.random() < 0.5:
            ids, ivd = m.param([b_], t="s32"), 1
        else:
            ids, ivd = m.param([b_, 1], t="s32"), 1
        return m.add(dims, "scatter(%s, %s, %s), update_window_dims={1}, inserted_window_dims={0}, "
                     "scatter_dims_to_operand_dims={0}, index_vector_dim=%d, to_apply=add"
                     % (name, ids, upd, ivd))
    if kind == "tuple":  # through a tuple and back
        same = [n for n, d in m.values() if d == dims]
        t = m.add([], "tuple(%s, %s)" % (name, r.choice(same)),
                  t="(%s, %s)" % (shape(dims), shape(dims)))
        return m.add(dims, "get-tuple-element(%s), index=%d" % (t, r.randint(0, 1)))
    if kind == "batch-dot" and len(dims) == 3:  # [b, m, k] x [b, k, n] -> [b, m, n]
        n = r.choice(DIMS)
        if dims[0] * dims[2] * n > MAX_ELEMENTS or dims[0] * dims[1] * n > MAX_ELEMENTS:
            return None
        w = m.param([dims[0], dims[2], n])
        return m.add([dims[0], dims[1], n],
                     "dot(%s, %s), lhs_batch_dims={0}, rhs_batch_dims={0}, "
                     "lhs_contracting_dims={2}, rhs_contracting_dims={1}" % (name, w))
    if kind == "collective":
        return collective(m, name, dims)
    return None


def collective(m, name, dims):
    """A cross-replica collective over random groups of equal size: all-reduce (add or max),
    all-gather, reduce-scatter, all-to-all along a random dimension, or a collective-permute
    of a random (partial) permutation."""
    r = m.rng
    size = r.choice([1, 2, 4, 8])
    order = list(range(m.replicas))
    r.shuffle(order)
    groups = "{%s}" % ",".join("{%s}" % ",".join(map(str, sorted(order[i:i + size])))
                               for i in range(0, len(order), size))
    op = r.choice(["all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                   "collective-permute"])
    d = r.randint(0, len(dims) - 1)
    if op == "all-reduce":
        return m.add(dims, "all-reduce(%s), replica_groups=%s, to_apply=%s"
                     % (name, groups, r.choice(["add", "max"])))
    if op == "all-gather":
        new = list(dims)
        new[d] *= size
        if count(new) > MAX_ELEMENTS:
            return None
        return m.add(new, "all-gather(%s), replica_groups=%s, dimensions={%d}" % (name, groups, d))
    if op in ("reduce-scatter", "all-to-all"):
        if dims[d] % size:
            return None
        if op == "all-to-all":
            return m.add(dims, "all-to-all(%s), replica_groups=%s, dimensions={%d}"
                         % (name, groups, d))
        new = list(dims)
        new[d] //= size
        return m.add(new, "reduce-scatter(%s), replica_groups=%s, dimensions={%d}, to_apply=add"
                     % (name, groups, d))
    targets = list(range(m.replicas))
    r.shuffle(targets)
    pairs = [(s, t) for s, t in zip(range(m.replicas), targets) if r.random() < 0.8]
    if not pairs:
        return None
    return m.add(dims, "collective-permute(%s), source_target_pairs={%s}"
                 % (name, ",".join("{%d,%d}" % st for st in pairs)))


def batch_norm_layer(m, name, dims):
    """A layer forward and backward on new parameters, f32 or bf16: relu(bn(x)) (or, at a
    residual junction, relu(bn(x) + r)), its gradient select(relu > 0, g, 0) into
    batch-norm-grad; returns f32 dx + relu, and leaves dgamma as a value."""
    r = m.rng
    while True:
        n, h, w = r.choice([1, 2, 8]), r.choice([2, 4, 7, 8]), r.choice([2, 4, 7, 8])
        c = r.choice([64, 128, 256, 1024, 2048])
        if n * h * w * c % 1024 == 0 and n * h * w * c <= MAX_ELEMENTS:
            break
    t = r.choice(["f32", "bf16"])
    x4 = [n, h, w, c]
    x = m.param(x4, t=t)
    gamma, beta = m.param([c]), m.param([c])
    g = m.param(x4, t=t)
    tup = "(%s, f32[%d], f32[%d])" % (shape(x4, t), c, c)
    bn = m.add([], "batch-norm-training(%s, %s, %s), epsilon=0.001, feature_index=3"
               % (x, gamma, beta), t=tup)
    y = m.add(x4, "get-tuple-element(%s), index=0" % bn, t=t)
    mean = m.add([], "get-tuple-element(%s), index=1" % bn, t="f32[%d]" % c)
    var = m.add([], "get-tuple-element(%s), index=2" % bn, t="f32[%d]" % c)
    zero = m.add([], "constant(0)", t=t)
    zeros = m.add(x4, "broadcast(%s), dimensions={}" % zero, t=t)
    if r.random() < 0.3:
        y = m.add(x4, "add(%s, %s)" % (y, m.param(x4, t=t)), t=t)
    relu = m.add(x4, "maximum(%s, %s)" % (y, zeros), t=t)
    pos = m.add(x4, "compare(%s, %s), direction=GT" % (relu, zeros), t="pred")
    dy = m.add(x4, "select(%s, %s, %s)" % (pos, g, zeros), t=t)
    bg = m.add([], "batch-norm-grad(%s, %s, %s, %s, %s), epsilon=0.001, feature_index=3"
               % (x, gamma, mean, var, dy), t=tup)
    dx = m.add(x4, "get-tuple-element(%s), index=0" % bg, t=t)
    m.add([c], "get-tuple-element(%s), index=1" % bg)
    if t == "bf16":
        dx = m.add(x4, "convert(%s)" % dx)
        relu = m.add(x4, "convert(%s)" % relu)
    return m.add(x4, "add(%s, %s)" % (dx, relu))


def generate(seed):
    m = Module(random.Random(seed))
    # A quarter of the modules run one program per replica, with collectives; drawn apart
    # so the other seeds keep their modules.
    m.replicas = 8 if random.Random(seed * 7919 + 17).random() < 0.25 else 1
    # A third of the others are global programs with sharded parameters, partitioned over
    # the cores (docs/spmd.md), one value constrained to a sharding of its own.
    layout = random.Random(seed * 15485863 + 3)
    if m.replicas == 1 and layout.random() < 1 / 3:
        m.mesh = layout
    for _ in range(m.rng.randint(1, 3)):
        m.param(m.random_dims())
    for _ in range(m.rng.randint(3, 12)):
        grow(m)
    computed = [n for n, d, t in m.instrs if d and "parameter(" not in t]
    if not computed:
        computed = [grow(m) or m.add(m.values()[0][1], "negate(%s)" % m.values()[0][0])]
    outs = m.rng.sample(computed, min(len(computed), m.rng.randint(1, 3)))
    if m.mesh:
        arrays = [n for n, d, t in m.instrs if d and "parameter(" not in t]
        if arrays:
            v = m.mesh.choice(arrays)
            dims = [d for n, d, _ in m.instrs if n == v][0]
            outs.append(m.add(dims, "copy(%s), sharding=%s" % (v, random_sharding(m.mesh, dims))))
    return m, outs


def text(m, outs, name="difftest"):
    """The module with `outs` as its result; instructions nothing reaches are dropped."""
    by_name = {n: t for n, _, t in m.instrs}
    dims = {n: d for n, d, _ in m.instrs}
    live, work = set(), list(outs)
    while work:
        n = work.pop()
        if n in live:
            continue
        live.add(n)
        t = by_name[n]
        args = t[t.index("(") + 1:] if "(" in t else ""
        for other in by_name:
            if other in live:
                continue
            for sep in (",", ")"):
                if (" " + other + sep) in (" " + args) or ("(" + other + sep) in ("(" + args):
                    work.append(other)
                    break
    header = "HloModule %s" % name + (", replica_count=%d" % m.replicas if m.replicas > 1 else "")
    if m.mesh:
        header += ", num_partitions=8"
    lines = [header, "", REDUCERS + "ENTRY main {"]
    for n, _, t in m.instrs:
        if n in live or "parameter(" in t:
            lines.append("  " + t)
    root = "(%s)" % ", ".join(shape(dims[o]) for o in outs)
    lines.append("  ROOT out = %s tuple(%s)" % (root, ", ".join(outs)))
    lines.append("}")
    return "\n".join(lines) + "\n"


def run(tpusim, module_text, timeout, seed=1):
    with tempfile.NamedTemporaryFile("w", suffix=".hlo", delete=False) as f:
        f.write(module_text)
        path = f.name
    try:
        p = subprocess.run([tpusim, "run", path, "--seed", str(seed)], capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "HANG", "no result in %d s" % timeout
    finally:
        os.unlink(path)
    out = p.stdout + p.stderr
    if p.returncode < 0 or p.returncode >= 128:
        return "CRASH", "exit status %d" % p.returncode
    if "simulated values differ" in out:
        worst = [l for l in out.splitlines() if l.startswith("values: worst")]
        # bf16 tolerance where the module computes in bf16: the kernels normalize and sum in
        # f32 where the evaluator uses double, so a bf16 result may round to its neighbour;
        # after later ops that is at most one bf16 ulp of the largest value (2^-7 of it).
        # `tpusim run` holds every module to 1e-3 (docs/evaluator.md).
        error = re.search(r"max \|simulated - reference\| = ([0-9.e+-]+)", out)
        if "bf16" in module_text and error and float(error.group(1)) <= 2.0 ** -7:
            return "bf16-ulp", ""
        return "MISMATCH", worst[0] if worst else ""
    if p.returncode != 0:
        return "refused", out.strip().splitlines()[-1] if out.strip() else "exit %d" % p.returncode
    if "(match)" in out:
        return "match", ""
    if "timing-only" in out:  # grouped by the opcodes of the kernels that compute no values
        line = [l for l in out.splitlines() if "model only time" in l]
        ops = sorted(set(re.findall(r"\(([a-z-]+)\)", line[0]))) if line else []
        return "timing-only", " ".join(ops)
    return "unchecked", ""


def rounding_flip(tpusim, module_text, timeout):
    """Whether a MISMATCH is a discontinuity flipped by rounding. The kernels compute in f32
    where the evaluator uses double (and round bf16 results from those), so a value within
    an ulp of a step may fall on either side of it: a floor of a bf16 value one bf16 ulp
    below an integer, a ReLU mask of a normalized value that cancels to zero
    (docs/testing.md); the step moves the result far beyond any tolerance. A module with a
    floor is run again with each floor a copy: it is a flip if that one matches (or is within
    the bf16 tolerance). One that branches on float order (compare, sort) is a flip if it
    matches on the inputs of two other seeds.
    Returns the reason, or "" when it is not one."""
    entry = module_text[module_text.find("ENTRY"):]
    if " floor(" in entry:
        verdict = run(tpusim, module_text.replace(" floor(", " copy("), timeout)[0]
        return "a floor flipped by rounding (each floor a copy: %s)" % verdict if verdict in (
            "match", "bf16-ulp") else ""
    if "compare(" not in entry and "sort(" not in entry:
        return ""
    if all(run(tpusim, module_text, timeout, seed)[0] == "match" for seed in (2, 3)):
        return "a comparison flipped by rounding (matches on seeds 2, 3)"
    return ""


def minimize(tpusim, m, outs, verdict, timeout):
    """One output that still gives `verdict` (else all of them), with the instructions it needs."""
    for o in outs:
        if run(tpusim, text(m, [o]), timeout)[0] == verdict:
            outs = [o]
            break
    return text(m, outs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpusim", default="build/cli/tpusim")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--out", default="", help="keep each failing module (minimized) here")
    ap.add_argument("--write-modules", default="",
                    help="only write the generated modules into this folder (no run)")
    args = ap.parse_args()
    if args.write_modules:
        os.makedirs(args.write_modules, exist_ok=True)
        for seed in range(args.seed, args.seed + args.count):
            m, outs = generate(seed)
            with open(os.path.join(args.write_modules, "difftest_%d.hlo" % seed), "w") as f:
                f.write(text(m, outs, "difftest_%d" % seed))
        return 0
    tally = collections.Counter()
    reasons = collections.Counter()
    bugs = []
    refusals = []  # a valid module refused is a defect too: its seed is printed
    flips = []  # not a bug, but printed: each one is worth a look
    for seed in range(args.seed, args.seed + args.count):
        m, outs = generate(seed)
        module_text = text(m, outs, "difftest_%d" % seed)
        verdict, why = run(args.tpusim, module_text, args.timeout)
        flip = verdict == "MISMATCH" and rounding_flip(args.tpusim, module_text, args.timeout)
        if flip:
            verdict = "rounding-flip"
            flips.append((seed, flip))
        tally[verdict] += 1
        if verdict in ("refused", "timing-only"):
            reasons[(verdict, why)] += 1
        if verdict == "refused":
            refusals.append((seed, why))
        if verdict in ("MISMATCH", "CRASH", "HANG"):
            small = minimize(args.tpusim, m, outs, verdict, args.timeout)
            bugs.append((seed, verdict, why))
            if args.out:
                os.makedirs(args.out, exist_ok=True)
                with open(os.path.join(args.out, "seed_%d.hlo" % seed), "w") as f:
                    f.write(small)
    print("difftest: seeds %d..%d: %s" % (args.seed, args.seed + args.count - 1,
                                         ", ".join("%s %d" % kv for kv in sorted(tally.items()))))
    for (verdict, why), n in reasons.most_common(8):
        print("  %-11s x%-4d %s" % (verdict, n, why))
    for seed, why in refusals[:20]:
        print("  refused seed %d: %s" % (seed, why))
    for seed, why in flips:
        print("  rounding-flip seed %d: %s" % (seed, why))
    for seed, verdict, why in bugs:
        print("  %s seed %d: %s" % (verdict, seed, why))
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
