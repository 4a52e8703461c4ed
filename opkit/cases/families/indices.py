"""Family hook for ops driven by index tensors: gathers, scatters, OneHot, TopK, Compress, CumSum,
ArgMax/ArgMin, Unique, ReverseSequence and TensorScatter.

Every index tensor is built in range for the data it addresses (negative indices only where the
version's text allows them: ``[-s, s-1]`` in the indices doc or "allowed to be negative"), scatter
targets are unique per position when ``reduction`` is ``none`` (ONNX leaves duplicates undefined
there) and may repeat when a reduction combines them. Shapes are drawn together so that they agree
(ranks, batch dims, ``indices.shape[-1]`` ...). Zero-size dims occur where the op allows them.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..draws import cast
from ..context import ABSENT, Context, Draft, axis_in, by_op, int_tensor, values
from . import contrib_draws

# a dimension size: mostly 1..3, sometimes 4, one time in sixteen 0 (shrinks towards 1)
_DIM = st.sampled_from((1, 2, 3, 2, 1, 3, 4, 2, 3, 1, 2, 3, 1, 2, 4, 0))
_DIM_POS = st.sampled_from((1, 2, 3, 2, 1, 3, 4))
_BOOL = st.booleans()
_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _dims(draw, rank: int, zero: bool = True) -> list[int]:
    return [draw(_DIM if zero else _DIM_POS) for _ in range(rank)]


def _negatives_ok(ctx: Context, name: str = "indices") -> bool:
    """Whether the version's text allows negative indices (``[-s, s-1]`` / "allowed to be negative")."""
    doc = ctx.version.doc
    param = ctx.input(name)
    return "[-s" in (param.doc if param else "") or "[-s" in doc or "allowed to be negative" in doc


def _index_values(draw, n: int, size: int, negative: bool) -> list[int]:
    """``n`` indices into an axis of ``size`` (repeats allowed), in [-size, size-1] or [0, size-1]."""
    if n == 0:
        return []
    if size <= 0:
        raise ValueError("non-empty indices into an empty axis")  # a hook bug, never a draw
    lo = -size if negative else 0
    return draw(st.lists(st.integers(lo, size - 1), min_size=n, max_size=n))


def _distinct_values(draw, n: int, size: int, negative: bool) -> list[int]:
    """``n`` <= ``size`` distinct positions of an axis of ``size``, each maybe written negatively."""
    if n == 0:
        return []
    picks = draw(st.permutations(range(size)))[:n]
    if negative:
        picks = [p - size if draw(_BOOL) else p for p in picks]
    return picks


def _upto(draw, hi: int) -> int:
    """A count in [1, hi], or 0 one time in eight (an empty tensor); 0 when ``hi`` is."""
    if hi <= 0:
        return 0
    return 0 if draw(st.integers(0, 7)) == 7 else draw(st.integers(1, hi))


def _maybe_smaller(draw, d: int) -> int:
    """``d`` or, now and then, a smaller size (indices that cover part of a dim)."""
    return d if draw(st.integers(0, 3)) else _upto(draw, d)


def _reduction(draw, ctx: Context, elem: str) -> str | None:
    """A ``reduction`` the version accepts (``None`` when it has no such attribute)."""
    attr = ctx.attribute("reduction")
    if attr is None:
        return None
    dom = attr.domain
    if dom is not None and dom.values is not None:
        allowed = list(dom.values)
    else:  # the modes the attribute's doc names
        allowed = [r for r in _REDUCTIONS if r == "none" or f"'{r}'" in attr.doc]
    if elem == "string":  # add/mul/max/min have no meaning on strings
        allowed = ["none"]
    return draw(st.sampled_from(allowed))


def _set_reduction(draw, draft: Draft, reduction: str | None) -> None:
    if reduction is not None:
        draft.attributes["reduction"] = ABSENT if reduction == "none" and draw(_BOOL) else reduction


def _set_axis(draw, draft: Draft, axis: int, rank: int, default: int = 0) -> None:
    """Set ``axis``, leaving it to the default when they agree (half the time)."""
    norm = axis + rank if axis < 0 else axis
    dnorm = default + rank if default < 0 else default
    draft.attributes["axis"] = ABSENT if norm == dnorm and draw(_BOOL) else axis


# ---------------------------------------------------------------------------------------------
# gathers


def _gather(draw, ctx: Context) -> Draft:
    r = draw(st.integers(1, 3))
    shape = _dims(draw, r)
    axis = axis_in(draw, r)
    s = shape[axis]
    q = draw(st.integers(0, 3))
    ishape = _dims(draw, q)
    if s == 0 and int(np.prod(ishape)) != 0:
        ishape = ishape[:-1] + [0] if ishape else [0]
    n = int(np.prod(ishape))
    idx = _index_values(draw, n, s, _negatives_ok(ctx))
    draft = Draft()
    _set_axis(draw, draft, axis, r)
    draft.inputs["data"] = values(draw, ctx.elem("data"), shape)
    draft.inputs["indices"] = int_tensor(ctx.elem("indices"), idx, tuple(ishape))
    return draft


def _along_axis_shape(draw, shape: list[int], axis: int, along: int) -> list[int]:
    """The shape of GatherElements / ScatterElements indices: same rank as data, ``along`` on the
    axis, at most data's size elsewhere."""
    return [along if d == axis else _maybe_smaller(draw, n) for d, n in enumerate(shape)]


def _gather_elements(draw, ctx: Context) -> Draft:
    r = draw(st.integers(1, 3))
    shape = _dims(draw, r)
    axis = axis_in(draw, r)
    s = shape[axis]
    ishape = _along_axis_shape(draw, shape, axis % r, draw(_DIM) if s else 0)
    idx = _index_values(draw, int(np.prod(ishape)), s, _negatives_ok(ctx))
    draft = Draft()
    _set_axis(draw, draft, axis, r)
    draft.inputs["data"] = values(draw, ctx.elem("data"), shape)
    draft.inputs["indices"] = int_tensor(ctx.elem("indices"), idx, tuple(ishape))
    return draft


def _gather_nd(draw, ctx: Context) -> Draft:
    b = draw(st.integers(0, 2)) if ctx.has_attribute("batch_dims") else 0
    r = b + draw(st.integers(1, 3 if b < 2 else 2))
    k = draw(st.integers(1, r - b))
    middle = draw(st.integers(0, 2))  # indices rank q = b + middle + 1
    empty = middle > 0 and draw(st.integers(0, 5)) == 5  # no index tuples at all
    batch = _dims(draw, b, zero=draw(st.integers(0, 5)) == 5)  # now and then an empty batch
    indexed = _dims(draw, k, zero=empty)
    trailing = _dims(draw, r - b - k)
    mid = _dims(draw, middle, zero=False)
    if empty:
        mid[draw(st.integers(0, middle - 1))] = 0
    shape = batch + indexed + trailing
    n = int(np.prod(batch + mid))
    neg = _negatives_ok(ctx)
    cols = [_index_values(draw, n, indexed[j], neg) for j in range(k)] if n else [[] for _ in range(k)]
    idx = np.array(cols, dtype=np.int64).T.reshape(tuple(batch + mid) + (k,)) if n else \
        np.zeros(tuple(batch + mid) + (k,), dtype=np.int64)
    draft = Draft()
    if ctx.has_attribute("batch_dims"):
        draft.attributes["batch_dims"] = ABSENT if b == 0 and draw(_BOOL) else b
    draft.inputs["data"] = values(draw, ctx.elem("data"), shape)
    draft.inputs["indices"] = int_tensor(ctx.elem("indices"), idx.tolist(), idx.shape)
    return draft


# ---------------------------------------------------------------------------------------------
# scatters


def _scatter_elements(draw, ctx: Context) -> Draft:
    elem = ctx.elem("data")
    reduction = _reduction(draw, ctx, elem)
    unique = reduction in (None, "none")
    r = draw(st.integers(1, 3))
    shape = _dims(draw, r)
    axis = axis_in(draw, r)
    a = axis % r
    s = shape[a]
    along = _upto(draw, s if unique else s + 2) if s else 0  # with a reduction: more updates than slots
    ishape = _along_axis_shape(draw, shape, a, along)
    neg = _negatives_ok(ctx)
    idx = np.zeros(ishape, dtype=np.int64)
    lines = np.moveaxis(idx, a, -1)  # a view: one line per target position outside the axis
    for pos in np.ndindex(lines.shape[:-1]):
        lines[pos] = (_distinct_values if unique else _index_values)(draw, along, s, neg)
    draft = Draft()
    _set_axis(draw, draft, axis, r)
    _set_reduction(draw, draft, reduction)
    draft.inputs["data"] = values(draw, elem, shape)
    draft.inputs["indices"] = int_tensor(ctx.elem("indices"), idx.tolist(), idx.shape)
    draft.inputs["updates"] = values(draw, elem, ishape)
    return draft


def _scatter_nd(draw, ctx: Context) -> Draft:
    elem = ctx.elem("data")
    reduction = _reduction(draw, ctx, elem)
    unique = reduction in (None, "none")
    r = draw(st.integers(1, 3))
    shape = _dims(draw, r)
    k = draw(st.integers(1, r))
    space = int(np.prod(shape[:k]))  # how many distinct index tuples there are
    batch = _dims(draw, draw(st.integers(0, 2)))
    n = int(np.prod(batch))
    if space == 0 and n:
        batch = batch[:-1] + [0] if batch else [0]
    elif unique and n > space:
        batch = [_upto(draw, space)]
    n = int(np.prod(batch))
    flat = draw(st.permutations(range(space)))[:n] if unique else \
        draw(st.lists(st.integers(0, space - 1), min_size=n, max_size=n)) if n else []
    coords = np.array(np.unravel_index(np.array(flat, dtype=np.int64), shape[:k]), dtype=np.int64).T \
        if n else np.zeros((0, k), dtype=np.int64)
    if _negatives_ok(ctx) and n:
        flip = np.array(draw(st.lists(_BOOL, min_size=n * k, max_size=n * k))).reshape(n, k)
        coords = np.where(flip, coords - np.array(shape[:k], dtype=np.int64), coords)
    idx = coords.reshape(tuple(batch) + (k,))
    draft = Draft()
    _set_reduction(draw, draft, reduction)
    draft.inputs["data"] = values(draw, elem, shape)
    draft.inputs["indices"] = int_tensor(ctx.elem("indices"), idx.tolist(), idx.shape)
    draft.inputs["updates"] = values(draw, elem, batch + shape[k:])
    return draft


def _tensor_scatter(draw, ctx: Context) -> Draft:
    r = draw(st.integers(2, 4))
    shape = _dims(draw, r)
    axis = draw(st.integers(1, r - 1))  # never the batch axis
    if draw(_BOOL):
        axis -= r
    max_seq = shape[axis]
    seq = _upto(draw, max_seq)
    ushape = list(shape)
    ushape[axis] = seq
    mode = draw(st.sampled_from(("linear", "circular"))) if ctx.has_attribute("mode") else "linear"
    batch = shape[0]
    if draw(_BOOL):
        write = None
    elif mode == "linear":
        write = draw(st.lists(st.integers(0, max_seq - seq), min_size=batch, max_size=batch))
    else:
        write = draw(st.lists(st.integers(0, max(max_seq - 1, 0)), min_size=batch, max_size=batch))
    draft = Draft()
    draft.attributes["axis"] = ABSENT if axis in (-2, r - 2) and draw(_BOOL) else axis
    if ctx.has_attribute("mode"):
        draft.attributes["mode"] = ABSENT if mode == "linear" and draw(_BOOL) else mode
    elem = ctx.elem("past_cache")
    draft.inputs["past_cache"] = values(draw, elem, shape)
    draft.inputs["update"] = values(draw, elem, ushape)
    draft.inputs["write_indices"] = None if write is None else int_tensor(ctx.elem("write_indices"), write, (batch,))
    return draft


# ---------------------------------------------------------------------------------------------
# index producers and consumers along one axis


def _one_hot(draw, ctx: Context) -> Draft:
    r = draw(st.integers(1, 3))  # ONNX inference rejects scalar indices
    ishape = _dims(draw, r)
    depth = draw(st.integers(1, 5))
    ielem = ctx.elem("indices")
    signed = not ielem.startswith("uint")
    # [-depth, depth-1] addresses a class; one past either end is defined too (all off_value)
    lo = -depth - 1 if signed else 0
    idx = draw(st.lists(st.integers(lo, depth), min_size=int(np.prod(ishape)), max_size=int(np.prod(ishape))))
    axis = axis_in(draw, r, end=True)
    draft = Draft()
    _set_axis(draw, draft, axis, r + 1, default=-1)
    draft.inputs["indices"] = cast(idx, ielem).reshape(ishape)
    draft.inputs["depth"] = cast([depth], ctx.elem("depth")).reshape(() if draw(_BOOL) else (1,))
    draft.inputs["values"] = values(draw, ctx.elem("values"), (2,))
    return draft


def _top_k(draw, ctx: Context) -> Draft:
    r = draw(st.integers(1, 3))
    shape = _dims(draw, r)
    axis = axis_in(draw, r)
    if shape[axis] == 0:
        shape[axis] = draw(_DIM_POS)  # K is positive, so the axis is not empty
    k = draw(st.integers(1, shape[axis]))
    draft = Draft()
    _set_axis(draw, draft, axis, r, default=-1)
    if ctx.has_attribute("largest"):
        draft.attributes["largest"] = draw(st.sampled_from((ABSENT, 1, 0)))
    if ctx.has_attribute("sorted"):
        # sorted=0 leaves the order of the K results unspecified: an ordered comparison would charge
        # a runtime for a legal order, so only the defined (sorted) order is drawn
        draft.attributes["sorted"] = draw(st.sampled_from((ABSENT, 1)))
    if ctx.has_attribute("k"):
        draft.attributes["k"] = k
    draft.inputs["X"] = values(draw, ctx.elem("X"), shape)
    if ctx.has_input("K"):
        draft.inputs["K"] = int_tensor(ctx.elem("K"), [k], (1,))
    return draft


def _compress(draw, ctx: Context) -> Draft:
    r = draw(st.integers(1, 3))
    shape = _dims(draw, r)
    draft = Draft()
    if draw(_BOOL):
        axis = axis_in(draw, r)
        length = shape[axis]
        draft.attributes["axis"] = axis
    else:
        length = int(np.prod(shape))  # flattened
        draft.attributes["axis"] = ABSENT
    n = length if draw(_BOOL) else _upto(draw, length)  # shorter: the rest is dropped
    cond = draw(st.lists(_BOOL, min_size=n, max_size=n))
    draft.inputs["input"] = values(draw, ctx.elem("input"), shape)
    draft.inputs["condition"] = np.array(cond, dtype=bool).reshape((n,))
    return draft


def _cum_sum(draw, ctx: Context) -> Draft:
    r = draw(st.integers(1, 3))
    shape = _dims(draw, r)
    axis = axis_in(draw, r)
    draft = Draft()
    for flag in ("exclusive", "reverse"):
        if ctx.has_attribute(flag):
            draft.attributes[flag] = draw(st.sampled_from((ABSENT, 1, 0)))
    draft.inputs["x"] = values(draw, ctx.elem("x"), shape)
    draft.inputs["axis"] = int_tensor(ctx.elem("axis"), axis, ())
    return draft


def _arg_reduce(draw, ctx: Context) -> Draft:
    r = draw(st.integers(1, 3))
    shape = _dims(draw, r)
    axis = axis_in(draw, r)
    if shape[axis] == 0:
        shape[axis] = draw(_DIM_POS)  # no arg-max of an empty axis
    draft = Draft()
    _set_axis(draw, draft, axis, r)
    for flag in ("keepdims", "select_last_index"):
        if ctx.has_attribute(flag):
            draft.attributes[flag] = draw(st.sampled_from((ABSENT, 1, 0)))
    draft.inputs["data"] = values(draw, ctx.elem("data"), shape)
    return draft


def _unique(draw, ctx: Context) -> Draft:
    elem = ctx.elem("X")
    draft = Draft()
    draft.attributes["sorted"] = draw(st.sampled_from((ABSENT, 1, 0)))
    if draw(_BOOL):  # flattened
        r = draw(st.integers(0, 3))
        shape = _dims(draw, r)
        n = int(np.prod(shape))
        pool = values(draw, elem, (draw(st.integers(1, 4)),))  # few distinct values: repeats occur
        pick = draw(st.lists(st.integers(0, len(pool) - 1), min_size=n, max_size=n))
        draft.attributes["axis"] = ABSENT
        draft.inputs["X"] = pool[np.array(pick, dtype=np.int64)].reshape(shape)
        return draft
    r = draw(st.integers(1, 3))
    shape = _dims(draw, r)
    axis = axis_in(draw, r)
    a = axis % r
    if shape[a] == 0:
        shape[a] = draw(_DIM_POS)
    rest = [d for i, d in enumerate(shape) if i != a]
    pool = values(draw, elem, [draw(st.integers(1, 3))] + rest)  # distinct-ish slices, repeated
    pick = draw(st.lists(st.integers(0, pool.shape[0] - 1), min_size=shape[a], max_size=shape[a]))
    x = np.moveaxis(pool[np.array(pick, dtype=np.int64)], 0, a)
    draft.attributes["axis"] = axis
    draft.inputs["X"] = np.ascontiguousarray(x)
    return draft


def _reverse_sequence(draw, ctx: Context) -> Draft:
    r = draw(st.integers(2, 4))
    shape = _dims(draw, r)
    batch_axis, time_axis = draw(st.sampled_from(((1, 0), (0, 1))))
    n_batch, n_time = shape[batch_axis], shape[time_axis]
    lens = draw(st.lists(st.integers(0, n_time), min_size=n_batch, max_size=n_batch))
    draft = Draft()
    default = (batch_axis, time_axis) == (1, 0)
    keep = default and draw(_BOOL)
    draft.attributes["batch_axis"] = ABSENT if keep else batch_axis
    draft.attributes["time_axis"] = ABSENT if keep else time_axis
    draft.inputs["input"] = values(draw, ctx.elem("input"), shape)
    draft.inputs["sequence_lens"] = int_tensor(ctx.elem("sequence_lens"), lens, (n_batch,))
    return draft


_BUILDERS = {
    "Gather": _gather,
    "GatherElements": _gather_elements,
    "GatherND": _gather_nd,
    "Scatter": _scatter_elements,
    "ScatterElements": _scatter_elements,
    "ScatterND": _scatter_nd,
    "TensorScatter": _tensor_scatter,
    "OneHot": _one_hot,
    "TopK": _top_k,
    "Compress": _compress,
    "CumSum": _cum_sum,
    "CumProd": _cum_sum,  # same inputs and attributes
    "ArgMax": _arg_reduce,
    "ArgMin": _arg_reduce,
    "Unique": _unique,
    "ReverseSequence": _reverse_sequence,
}


_ONNX_DRAW = by_op("indices", _BUILDERS)


def draw(draw, ctx: Context) -> Draft:
    if ctx.spec.domain == contrib_draws.DOMAIN:  # contrib ops have builders of their own
        return contrib_draws.contrib_draw("indices", draw, ctx, _BUILDERS)
    return _ONNX_DRAW(draw, ctx)
