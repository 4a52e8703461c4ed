"""Family hook for ops that move, copy or resample data by shape: Reshape, Expand, Tile, Pad, Slice,
Resize, Upsample, Range, ConstantOfShape, Split, Squeeze, Unsqueeze, CenterCropPad, Flatten,
SpaceToDepth, DepthToSpace, Transpose, GridSample and the reductions whose ``axes`` is an input.

Each builder draws the data shape first and derives the shape-like inputs and attributes from it
(a Reshape target whose size matches, Slice starts/ends/steps per axis, Pad pads that never remove
more than an axis holds, Resize scales or sizes of the right length ...), so every case is valid by
construction. Versions differ in where a parameter lives (attribute in old versions, input later):
the builders branch on what the version has, never on its number.
"""

from __future__ import annotations

import math

import numpy as np

from ...core.dtypes import np_dtype
from ...core.onnx_types import INT_RANGES
from ..case import NotGeneratable
from ..context import ABSENT, Context, Draft, distinct_axes, int_tensor, values
from . import contrib_draws
from .resample import _affine_grid, _grid_sample, _resize
from .shape_draws import (
    range_bounds,
    _BOOL,
    _axes_subset,
    _choices,
    _dims,
    _int,
    _ints,
    _one,
    _permuted,
    _rare,
    _signed_axes,
)


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


# ---------------------------------------------------------------------------------------------
# Reshape


def _reshape(draw, ctx: Context) -> Draft:
    rank = _int(draw, 0, 4)
    shape = _dims(draw, rank)
    data = values(draw, ctx.elem("data"), shape)
    n = math.prod(shape)
    allowzero = _int(draw, 0, 1) if ctx.has_attribute("allowzero") else 0
    out_rank = _int(draw, 0, 4)
    if n == 0:
        out_rank = max(out_rank, 1)
        target = [_int(draw, 1, 3) for _ in range(out_rank)]
        zero_at = _int(draw, 0, out_rank - 1)
        target[zero_at] = 0
        if allowzero:  # 0 is a literal zero; -1 only when there is no 0 at all
            spec = list(target)
            if draw(_BOOL):
                spec[zero_at] = -1
            elif out_rank > 1 and draw(_BOOL):
                spec[_int(draw, 0, out_rank - 1)] = 0
        else:  # 0 copies the input dim: a zero dim is a copy of an input 0, or the one -1
            spec = [0 if i < rank and shape[i] == t and t != 0 and draw(_BOOL) else t for i, t in enumerate(target)]
            spec[zero_at] = 0 if zero_at < rank and shape[zero_at] == 0 and draw(_BOOL) else -1
    else:
        target = [1] * out_rank
        factors = _prime_factors(n)
        if out_rank == 0 and factors:
            target, out_rank = [1], 1
        for f in factors:
            target[_int(draw, 0, out_rank - 1)] *= f
        spec = [0 if not allowzero and i < rank and shape[i] == t and draw(_BOOL) else t
                for i, t in enumerate(target)]
        if out_rank and draw(_BOOL):
            spec[_int(draw, 0, out_rank - 1)] = -1
    draft = Draft()
    if ctx.has_attribute("allowzero"):
        draft.attributes["allowzero"] = allowzero if (allowzero or draw(_BOOL)) else ABSENT
    if ctx.has_input("shape"):
        draft.inputs["shape"] = int_tensor("int64", spec, (len(spec),))
    else:
        draft.attributes["shape"] = spec
    if ctx.has_attribute("consumed_inputs"):
        draft.attributes["consumed_inputs"] = ABSENT
    draft.inputs["data"] = data
    return draft


# ---------------------------------------------------------------------------------------------
# Expand, Tile


def _expand(draw, ctx: Context) -> Draft:
    rank = _int(draw, 0, 3)
    shape = [1 if draw(_BOOL) else d for d in _dims(draw, rank)]
    target_rank = _int(draw, 0, 4)
    target = []
    for i in range(target_rank):  # aligned from the right
        j = rank - target_rank + i
        if j < 0:  # a new leading dim
            target.append(0 if _rare(draw, 10) else _int(draw, 1, 3))
        elif shape[j] == 1:
            target.append(0 if _rare(draw, 10) else _int(draw, 1, 3))
        else:
            target.append(_one(draw, (1, shape[j])))
    return Draft(inputs={"input": values(draw, ctx.elem("input"), shape),
                         "shape": int_tensor("int64", target, (target_rank,))})


def _tile(draw, ctx: Context) -> Draft:
    if ctx.has_input("repeats"):
        rank = _int(draw, 0, 3) if _rare(draw, 8) else _int(draw, 1, 3)
        shape = _dims(draw, rank)
        reps = [0 if _rare(draw, 10) else _int(draw, 1, 3) for _ in range(rank)]
        return Draft(inputs={"input": values(draw, ctx.elem("input"), shape),
                             "repeats": int_tensor(ctx.elem("repeats"), reps, (rank,))})
    # Tile-1: scalars tiles and axis, typed like the input
    rank = _int(draw, 1, 3)
    shape = _dims(draw, rank)
    elem = ctx.elem("input")
    one_d = draw(_BOOL)
    as_scalar = (lambda v: np.asarray(v, dtype=np_dtype(elem)).reshape((1,) if one_d else ()))
    return Draft(inputs={"input": values(draw, elem, shape),
                         "tiles": as_scalar(_int(draw, 0, 3)),
                         "axis": as_scalar(_int(draw, 0, rank - 1))})


# ---------------------------------------------------------------------------------------------
# Pad

_PAD_MODES = ("constant", "reflect", "edge")


def _pad_pair(draw, mode: str, dim: int) -> tuple[int, int]:
    """(before, after) for one axis of size ``dim``: negative values crop, never more than the axis
    holds; reflect pads stay below the size, edge/wrap need a non-empty axis. Wrap pads go past
    one period (up to 2 * dim + 1): the torus the text names repeats, and onnxruntime before 1.31
    filled a pad longer than the axis with the axis's first element."""
    if mode == "constant":
        before = _int(draw, -dim, 3)
        after = _int(draw, -(dim + min(before, 0)), 3)
        return before, after
    if draw(_ints(0, 3)) == 3:  # crop only (no growth on this axis: the crop order cannot matter)
        before = _int(draw, -dim, 0)
        return before, _int(draw, -(dim + before), 0)
    limit = {"reflect": min(dim - 1, 3), "edge": 3 if dim else 0, "wrap": 2 * dim + 1 if dim else 0}[mode]
    limit = max(0, limit)
    return _int(draw, 0, limit), _int(draw, 0, limit)


def edge_holds(case, version) -> bool:
    """What ``_pad_pair`` keeps by construction, for a case an edge changed (see
    ``families.edge_check``): outside constant mode an axis is cropped or padded, not both (the
    text does not say which comes first), and reflect pads stay below the axis size (one
    reflection; the text names no repeated one). Other shape ops: True."""
    if case.op != "Pad":
        return True
    attrs = case.kernel_attributes()
    mode = attrs.get("mode") or "constant"
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode == "constant":
        return True
    inputs = dict(case.inputs)
    data = inputs.get("data")
    pads = inputs.get("pads", attrs.get("pads"))
    if not isinstance(data, np.ndarray) or pads is None:
        return True
    pads = [int(p) for p in np.ravel(pads)]
    axes = inputs.get("axes")
    axes = list(range(data.ndim)) if axes is None else [int(a) % max(data.ndim, 1) for a in np.ravel(axes)]
    if len(pads) != 2 * len(axes):
        return True
    for i, a in enumerate(axes):
        before, after = pads[i], pads[i + len(axes)]
        if min(before, after) < 0 < max(before, after):
            return False
        if mode == "reflect" and max(before, after) > data.shape[a] - 1:
            return False
    return True


def _pad(draw, ctx: Context) -> Draft:
    rank = _int(draw, 0, 4) if _rare(draw, 10) else _int(draw, 1, 4)
    shape = _dims(draw, rank)
    elem = ctx.elem("data")
    mode = _one(draw, _choices(ctx, "mode", _PAD_MODES))
    draft = Draft(inputs={"data": values(draw, elem, shape)})
    draft.attributes["mode"] = ABSENT if mode == "constant" and draw(_BOOL) else mode
    axes = list(range(rank))
    if ctx.has_input("axes"):
        if draw(_BOOL):
            draft.inputs["axes"] = None
        else:
            axes = _axes_subset(draw, rank, 0)
            written = _signed_axes(draw, axes, rank)
            draft.inputs["axes"] = int_tensor(ctx.elem("axes"), written, (len(written),))
    pairs = [_pad_pair(draw, mode, shape[a]) for a in axes]
    pads = [b for b, _ in pairs] + [a for _, a in pairs]
    if ctx.has_input("pads"):
        draft.inputs["pads"] = int_tensor("int64", pads, (len(pads),))
    else:
        draft.attributes["pads" if ctx.has_attribute("pads") else "paddings"] = pads
    if ctx.has_attribute("value"):
        draft.attributes["value"] = ABSENT if draw(_BOOL) else _one(draw, (0.0, 1.5, -2.0, 7.0))
    if ctx.has_input("constant_value"):
        draft.inputs["constant_value"] = None if draw(_BOOL) else values(draw, elem, ())
    return draft


# ---------------------------------------------------------------------------------------------
# Slice


def _slice_bound(draw, dim: int, lo_big: int, hi_big: int) -> int:
    """A start or end for an axis of size ``dim``: in range, negative, or out of range (clamped)."""
    k = draw(_ints(0, 7))
    if k == 6:
        return hi_big
    if k == 7:
        return lo_big
    return _int(draw, -dim - 2, dim + 2)


def _slice(draw, ctx: Context) -> Draft:
    rank = _int(draw, 1, 4)
    shape = _dims(draw, rank, hi=4)
    draft = Draft(inputs={"data": values(draw, ctx.elem("data"), shape)})
    inputs = ctx.has_input("starts")
    ielem = ctx.elem("starts") if inputs else "int64"
    lo_big, hi_big = INT_RANGES[ielem]
    explicit_axes = draw(_BOOL)
    if explicit_axes:
        axes = _axes_subset(draw, rank)
        written = _signed_axes(draw, axes, rank)
    else:
        axes = list(range(_int(draw, 1, rank)))
        written = None
    k = len(axes)
    has_steps = ctx.has_input("steps") and draw(_BOOL)
    steps = [_one(draw, (1, 1, 2, 3, -1, -2)) for _ in range(k)] if has_steps else [1] * k
    starts = [_slice_bound(draw, shape[a], lo_big, hi_big) for a in axes]
    ends = [_slice_bound(draw, shape[a], lo_big, hi_big) for a in axes]
    if inputs:
        draft.inputs["starts"] = int_tensor(ielem, starts, (k,))
        draft.inputs["ends"] = int_tensor(ielem, ends, (k,))
        draft.inputs["axes"] = None if written is None else int_tensor(ielem, written, (k,))
        if ctx.has_input("steps"):
            draft.inputs["steps"] = int_tensor(ielem, steps, (k,)) if has_steps else None
    else:
        draft.attributes["starts"] = starts
        draft.attributes["ends"] = ends
        draft.attributes["axes"] = ABSENT if written is None else written
    return draft


# ---------------------------------------------------------------------------------------------
# Range, ConstantOfShape


def _range(draw, ctx: Context) -> Draft:
    elem = ctx.elem("start")
    start, limit, delta = range_bounds(draw, elem)
    dt = np_dtype(elem)
    draft = Draft(inputs={"start": np.asarray(start, dtype=dt), "limit": np.asarray(limit, dtype=dt),
                          "delta": np.asarray(delta, dtype=dt)})
    if ctx.has_attribute("stash_type"):
        draft.attributes["stash_type"] = _one(draw, (ABSENT, 1))
    return draft


def _constant_of_shape(draw, ctx: Context) -> Draft:
    rank = _int(draw, 0, 4)
    target = _dims(draw, rank, lo=1, hi=3)
    draft = Draft(inputs={"input": int_tensor("int64", target, (rank,))})
    out = ctx.output_elem("output")
    if out == "float" and draw(_BOOL):
        draft.attributes["value"] = ABSENT  # the default: float32 zero
    else:
        draft.attributes["value"] = values(draw, out, (1,))
    return draft


# ---------------------------------------------------------------------------------------------
# Split, Squeeze, Unsqueeze, Flatten, Transpose, CenterCropPad


def _split(draw, ctx: Context) -> Draft:
    """1 to 4 parts, declared as that many node outputs: explicit sizes (zeros allowed), equal
    parts without sizes (the axis a multiple of the count), or, from opset 18, ``num_outputs``
    with a smaller last chunk where the axis does not divide evenly."""
    rank = _int(draw, 1, 4)
    shape = _dims(draw, rank)
    axis = _int(draw, -rank, rank - 1)
    parts = _int(draw, 1, 4)
    has_sizes = ctx.has_input("split") or ctx.has_attribute("split")
    counted = ctx.has_attribute("num_outputs")
    mode = _one(draw, (["sizes"] if has_sizes else []) + (["count"] if counted else ["equal"]))
    sizes = None
    if mode == "sizes":
        sizes = [0 if _rare(draw) else _int(draw, 1, 3) for _ in range(parts)]
        shape[axis] = sum(sizes)
    elif mode == "equal":
        shape[axis] = parts * _int(draw, 0 if _rare(draw) else 1, 2)
    else:  # ceil-sized chunks, the last one shorter but not empty
        chunk = _int(draw, 1, 3)
        shape[axis] = chunk * (parts - 1) + _int(draw, 1, chunk)
    draft = Draft(inputs={"input": values(draw, ctx.elem("input"), shape)}, n_outputs=parts)
    draft.attributes["axis"] = ABSENT if axis == 0 and draw(_BOOL) else axis
    if ctx.has_input("split"):
        draft.inputs["split"] = None if sizes is None else int_tensor("int64", sizes, (parts,))
    elif ctx.has_attribute("split"):
        draft.attributes["split"] = ABSENT if sizes is None else sizes
    if counted:
        draft.attributes["num_outputs"] = parts if mode == "count" else ABSENT
    return draft


def _squeeze(draw, ctx: Context) -> Draft:
    rank = _int(draw, 0, 4)
    shape = _dims(draw, rank)
    ones = [i for i in range(rank) if draw(_BOOL)]
    for i in ones:
        shape[i] = 1
    ones = [i for i, d in enumerate(shape) if d == 1]
    draft = Draft(inputs={"data": values(draw, ctx.elem("data"), shape)})
    chosen = None
    if ones and draw(_ints(0, 3)) != 0:
        chosen = [ones[i] for i in _axes_subset(draw, len(ones))]
        negative = not (ctx.has_attribute("axes") and "non-negative" in (ctx.attribute("axes").doc or ""))
        chosen = _signed_axes(draw, chosen, rank, negative)
    if ctx.has_input("axes"):
        draft.inputs["axes"] = None if chosen is None else int_tensor("int64", chosen, (len(chosen),))
    else:
        draft.attributes["axes"] = ABSENT if chosen is None else chosen
    return draft


def _unsqueeze(draw, ctx: Context) -> Draft:
    rank = _int(draw, 0, 3)
    shape = _dims(draw, rank)
    k = _int(draw, 1, 5 - rank if rank < 4 else 1)
    out_rank = rank + k
    axes = _permuted(draw, list(range(out_rank)))[:k]
    negative = not (ctx.has_attribute("axes") and "non-negative" in (ctx.attribute("axes").doc or ""))
    axes = _signed_axes(draw, axes, out_rank, negative)
    draft = Draft(inputs={"data": values(draw, ctx.elem("data"), shape)})
    if ctx.has_input("axes"):
        draft.inputs["axes"] = int_tensor("int64", axes, (k,))
    else:
        draft.attributes["axes"] = axes
    return draft


def _flatten(draw, ctx: Context) -> Draft:
    rank = _int(draw, 0, 4)
    shape = _dims(draw, rank)
    negative = "[-r, r]" in (ctx.attribute("axis").doc or "")
    axis = _int(draw, -rank if negative else 0, rank)
    return Draft(attributes={"axis": ABSENT if axis == 1 and rank >= 1 and draw(_BOOL) else axis},
                 inputs={"input": values(draw, ctx.elem("input"), shape)})


def _transpose(draw, ctx: Context) -> Draft:
    rank = _int(draw, 0, 5)
    shape = _dims(draw, rank)
    perm = ABSENT if _rare(draw, 4) else _permuted(draw, list(range(rank)))
    return Draft(attributes={"perm": perm}, inputs={"data": values(draw, ctx.elem("data"), shape)})


def _center_crop_pad(draw, ctx: Context) -> Draft:
    rank = _int(draw, 1, 4)
    shape = _dims(draw, rank, hi=4)
    axes = list(range(rank))
    draft = Draft(inputs={"input_data": values(draw, ctx.elem("input_data"), shape)})
    if draw(_BOOL):
        axes = _axes_subset(draw, rank)
        draft.attributes["axes"] = _signed_axes(draw, axes, rank)
    else:
        draft.attributes["axes"] = ABSENT
    target = [_int(draw, 0, 5) if _rare(draw, 8) else _int(draw, 1, 5) for _ in axes]
    draft.inputs["shape"] = int_tensor(ctx.elem("shape"), target, (len(target),))
    return draft


# ---------------------------------------------------------------------------------------------
# SpaceToDepth, DepthToSpace


def _blocks(draw, ctx: Context) -> Draft:
    bs = _one(draw, (1, 2, 2, 3))
    n = 0 if _rare(draw, 12) else _int(draw, 1, 2)
    if ctx.op == "DepthToSpace":
        shape = [n, bs * bs * _int(draw, 1, 2), _int(draw, 1, 3), _int(draw, 1, 3)]
    else:
        shape = [n, _int(draw, 1, 3), bs * _int(draw, 1, 2), bs * _int(draw, 1, 2)]
    draft = Draft(attributes={"blocksize": bs}, inputs={"input": values(draw, ctx.elem("input"), shape)})
    if ctx.has_attribute("mode"):
        mode = _one(draw, _choices(ctx, "mode", ("DCR", "CRD")))
        draft.attributes["mode"] = ABSENT if mode == "DCR" and draw(_BOOL) else mode
    return draft


# ---------------------------------------------------------------------------------------------
# reductions whose axes is an input


def _defined_reduce_data(ctx: Context, data):
    """Integer data clipped to where the op's result is defined (the spec rules): squares summing
    within the type for ReduceL2 / ReduceSumSquare (rules RANGE, OVERFLOW), values in [-700, 700]
    for ReduceLogSumExp-18, whose function body takes exp in double and casts the log back (EXP)."""
    if data.dtype.kind not in "iu" or data.size == 0:
        return data
    low = 0 if data.dtype.kind == "u" else None
    if ctx.op in ("ReduceL2", "ReduceSumSquare"):
        bound = math.isqrt(int(np.iinfo(data.dtype).max) // data.size)
    elif ctx.op == "ReduceLogSumExp" and ctx.since >= 18:
        bound = 700
    else:
        return data
    wide = data.astype(object)
    return np.asarray(np.clip(wide, -bound if low is None else low, bound)).astype(data.dtype)


def _reduce(draw, ctx: Context) -> Draft:
    rank = _int(draw, 0, 4)
    # the mean over no values is undefined (ReduceMean's rule V1 wants data): no empty data there
    shape = _dims(draw, rank, zero=ctx.op != "ReduceMean")
    draft = Draft(inputs={"data": _defined_reduce_data(ctx, values(draw, ctx.elem("data"), shape))})
    draft.attributes["keepdims"] = _one(draw, (ABSENT, 0, 1))
    if not ctx.has_input("axes"):  # ReduceMean-1/11/13: an axes attribute (absent: every axis)
        negative = "[-r, r-1]" in (ctx.attribute("axes").doc or "")
        draft.attributes["axes"] = ABSENT if rank == 0 or _rare(draw, 4) else \
            distinct_axes(draw, rank, min_size=1, allow_negative=negative)
        return draft
    k = draw(_ints(0, 5))
    if k == 0 or rank == 0 and k < 4:
        draft.inputs["axes"] = None
    elif k == 1 or rank == 0:
        draft.inputs["axes"] = int_tensor("int64", [], (0,))
    else:
        axes = distinct_axes(draw, rank, min_size=1)
        draft.inputs["axes"] = int_tensor("int64", axes, (len(axes),))
    draft.attributes["noop_with_empty_axes"] = _one(draw, (ABSENT, 0, 1))
    return draft


_BUILDERS = {
    "AffineGrid": _affine_grid, "Reshape": _reshape, "Expand": _expand, "Tile": _tile, "Pad": _pad, "Slice": _slice,
    "Resize": _resize, "Upsample": _resize, "Range": _range, "ConstantOfShape": _constant_of_shape,
    "Split": _split, "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Flatten": _flatten,
    "Transpose": _transpose, "CenterCropPad": _center_crop_pad, "SpaceToDepth": _blocks,
    "DepthToSpace": _blocks, "GridSample": _grid_sample,
}


def draw(draw, ctx: Context) -> Draft:
    if ctx.spec.domain == contrib_draws.DOMAIN:  # contrib ops have builders of their own
        return contrib_draws.contrib_draw("shape", draw, ctx, _BUILDERS)
    builder = _BUILDERS.get(ctx.op)
    if builder is None and ctx.op.startswith("Reduce"):
        builder = _reduce
    if builder is None:
        raise NotGeneratable(f"the shape family has no case builder for {ctx.op}-{ctx.since}")
    return builder(draw, ctx)
