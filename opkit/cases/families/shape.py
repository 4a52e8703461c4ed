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

import functools
import math

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

from ...core.dtypes import FLOATS, np_dtype
from ...core.onnx_types import INT_RANGES
from ..strategies import NotGeneratable
from ..context import ABSENT, Context, Draft, distinct_axes, int_tensor, values

_BOOL = st.booleans()


@functools.lru_cache(maxsize=None)
def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


@functools.lru_cache(maxsize=None)
def _pick(options: tuple) -> st.SearchStrategy:
    return st.sampled_from(options)


def _int(draw, lo: int, hi: int) -> int:
    return draw(_ints(lo, hi)) if hi > lo else lo


def _one(draw, options):
    options = tuple(options)
    return options[0] if len(options) == 1 else draw(_pick(options))


def _rare(draw, one_in: int = 6) -> bool:
    """True about once in ``one_in`` draws (shrinks to False)."""
    return draw(_ints(0, one_in - 1)) == one_in - 1


def _dims(draw, rank: int, lo: int = 1, hi: int = 3, zero: bool = True) -> list[int]:
    """``rank`` sizes in [lo, hi]; with ``zero`` one of them is sometimes 0 (an empty tensor)."""
    out = [_int(draw, lo, hi) for _ in range(rank)]
    if zero and rank and _rare(draw):
        out[_int(draw, 0, rank - 1)] = 0
    return out


def _choices(ctx: Context, name: str, fallback: tuple) -> tuple:
    """The values the spec allows for attribute ``name`` (its ``values:``), else ``fallback``."""
    attr = ctx.attribute(name)
    if attr is not None and attr.domain is not None and attr.domain.values is not None:
        return tuple(attr.domain.values)
    return fallback


def _index_elem(ctx: Context, name: str) -> str:
    return ctx.elem(name) if ctx.has_input(name) else "int64"


def _ints_input(ctx: Context, name: str, data) -> np.ndarray:
    """A 1-D integer input (``Tind`` or int64) holding ``data``."""
    return int_tensor(_index_elem(ctx, name), list(data), (len(data),))


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


def _signed_axes(draw, axes: list[int], rank: int, allow_negative: bool = True) -> list[int]:
    if not allow_negative:
        return list(axes)
    return [a - rank if draw(_BOOL) else a for a in axes]


@functools.lru_cache(maxsize=None)
def _permutation(n: int) -> st.SearchStrategy:
    return st.permutations(range(n))


@functools.lru_cache(maxsize=None)
def _subsets(n: int, min_size: int) -> st.SearchStrategy:
    return st.lists(_ints(0, n - 1), min_size=min(min_size, n), max_size=n, unique=True)


def _permuted(draw, items: list) -> list:
    return [items[i] for i in draw(_permutation(len(items)))] if len(items) > 1 else list(items)


def _axes_subset(draw, rank: int, min_size: int = 1) -> list[int]:
    """Distinct axes of a rank-``rank`` tensor in drawn order (unsorted)."""
    return draw(_subsets(rank, min_size)) if rank else []


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
# Resize, Upsample

_COORD_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize")
# dyadic scales: in * scale is exact in float32 and float64 alike, so every runtime floors it the same
_SCALES = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0)
_UP_SCALES = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0)


# Upsample and Resize-10 define no coordinate mapping (rule MAPPING): nearest with whole scales
# (a repeat) and any mode with every scale 1 (a copy) are all their text defines
_WHOLE_SCALES = (1.0, 2.0, 3.0)


def _scale_for(draw, dim: int, upsample: bool, mode: str = "nearest", mapped: bool = True) -> float:
    """A scale that keeps the resized axis non-empty (floor(dim * scale) >= 1); without a
    coordinate mapping (``mapped`` False) a whole scale for nearest and 1 for linear."""
    if not mapped:
        return 1.0 if mode != "nearest" else _one(draw, _WHOLE_SCALES)
    pool = _UP_SCALES if upsample else tuple(s for s in _SCALES if math.floor(dim * s) >= 1)
    return 1.0 if draw(_ints(0, 3)) == 0 else _one(draw, pool)


def _upsample_1(draw, ctx: Context) -> Draft:
    shape = [_int(draw, 1, 2), _int(draw, 1, 2), _int(draw, 1, 3), _int(draw, 1, 3)]
    elem = ctx.elem("X")
    modes = _choices(ctx, "mode", ("nearest", "bilinear"))
    mode = "nearest" if elem in ("bool", "string") else _one(draw, modes)
    scale = functools.partial(_scale_for, draw, 1, True, "nearest" if mode == "nearest" else "linear", False)
    return Draft(attributes={"mode": ABSENT if mode == "nearest" and draw(_BOOL) else mode,
                             "height_scale": scale(), "width_scale": scale()},
                 inputs={"X": _sampled_values(values(draw, elem, shape), mode)})


def _whole_averages(x: np.ndarray, axes: list[int], moving: list[bool]) -> np.ndarray:
    """An integer ``x`` made constant along the axes that interpolation moves over (rule INTEGER:
    every weighted average of a constant, weights summing to 1, is that constant, a whole number),
    its values within 2^40 so that float64 weights rounding leave it whole."""
    for a, move in zip(axes, moving):
        if move and x.shape[a] > 1:
            x = np.repeat(np.take(x, [0], axis=a), x.shape[a], axis=a)
    info = np.iinfo(x.dtype)
    return np.clip(x, max(info.min, -(2**40)), min(info.max, 2**40)).astype(x.dtype)


def _resize(draw, ctx: Context) -> Draft:
    if ctx.has_attribute("height_scale"):
        return _upsample_1(draw, ctx)
    upsample = ctx.op == "Upsample"
    elem = ctx.elem("X")
    rank = _int(draw, 1, 4)
    shape = _dims(draw, rank, zero=False)
    draft = Draft(inputs={"X": values(draw, elem, shape)})
    attrs = draft.attributes
    # which axes the scales/sizes/roi refer to
    axes = list(range(rank))
    if ctx.has_attribute("axes") and draw(_BOOL):
        axes = _axes_subset(draw, rank)
        attrs["axes"] = _signed_axes(draw, axes, rank)
    elif ctx.has_attribute("axes"):
        attrs["axes"] = ABSENT
    n = len(axes)
    # interpolation: strings and booleans only have a meaning for nearest
    mode = "nearest" if elem in ("bool", "string") else _one(draw, _choices(ctx, "mode", ("nearest", "linear")))
    attrs["mode"] = ABSENT if mode == "nearest" and draw(_BOOL) else mode
    coord = None
    if ctx.has_attribute("coordinate_transformation_mode"):
        coords = _choices(ctx, "coordinate_transformation_mode", _COORD_MODES)
        if elem == "string":  # extrapolation_value (a float) cannot fill a string tensor
            coords = tuple(c for c in coords if c != "tf_crop_and_resize")
        coord = _one(draw, coords)
        attrs["coordinate_transformation_mode"] = ABSENT if coord == "half_pixel" and draw(_BOOL) else coord
    if ctx.has_attribute("nearest_mode"):
        attrs["nearest_mode"] = _one(draw, (ABSENT,) + _choices(ctx, "nearest_mode", ("round_prefer_floor",)))
    if ctx.has_attribute("cubic_coeff_a"):
        attrs["cubic_coeff_a"] = _one(draw, (ABSENT, -0.5, -0.75, -0.6))
    if ctx.has_attribute("exclude_outside"):
        attrs["exclude_outside"] = _one(draw, (ABSENT, 0, 1))
    if ctx.has_attribute("antialias"):
        attrs["antialias"] = _one(draw, (ABSENT, 0, 1))
    if ctx.has_attribute("extrapolation_value"):
        fractional = elem in FLOATS or elem.startswith("complex")
        attrs["extrapolation_value"] = _one(draw, (ABSENT, 0.0, -1.0, 10.0) + ((0.5, -2.25) if fractional else ()))
    # scales or sizes; linear and cubic mostly resize the last two axes only (N, C kept: the
    # layout runtimes optimise for), sometimes every axis (N-linear, N-cubic)
    image_like = mode != "nearest" and n >= 3 and draw(_BOOL)
    can_size = ctx.has_input("sizes")
    # rare: ONNX's inference (onnx 1.23) rejects a `sizes` graph input whose length is symbolic,
    # which is how opkit declares graph inputs; only a `sizes` fed as an initializer passes
    use_sizes = can_size and _rare(draw, 14)
    policy = "stretch"
    if use_sizes:
        sizes = [_int(draw, 1, 5) for _ in axes]
        if image_like:
            sizes[:-2] = [shape[a] for a in axes[:-2]]
        if ctx.has_attribute("keep_aspect_ratio_policy"):
            policy = _one(draw, _choices(ctx, "keep_aspect_ratio_policy", ("stretch", "not_larger", "not_smaller")))
            if policy == "not_larger":  # the common ratio must leave every axis non-empty
                r = min(s / shape[a] for s, a in zip(sizes, axes))
                if any(math.floor(r * shape[a] + 0.5) < 1 for a in axes):
                    policy = "not_smaller"
            attrs["keep_aspect_ratio_policy"] = ABSENT if policy == "stretch" and draw(_BOOL) else policy
        draft.inputs["sizes"] = int_tensor("int64", sizes, (n,))
        scales = None
    else:
        mapped = ctx.has_attribute("coordinate_transformation_mode")  # Upsample-7+, Resize-10 have none
        scales = [_scale_for(draw, shape[a], upsample, mode, mapped) for a in axes]
        if image_like:
            scales[:-2] = [1.0] * (n - 2)
        if can_size:
            draft.inputs["sizes"] = None
        if ctx.has_attribute("keep_aspect_ratio_policy"):
            attrs["keep_aspect_ratio_policy"] = ABSENT
    if ctx.has_attribute("scales"):  # Upsample-7
        attrs["scales"] = scales
    elif scales is not None:
        draft.inputs["scales"] = np.asarray(scales, dtype=np.float32)
    elif ctx.input("scales").option == "optional":
        draft.inputs["scales"] = None
    else:  # Resize-11: scales is required, empty when sizes are given
        draft.inputs["scales"] = np.zeros((0,), dtype=np.float32)
    # roi: only read by tf_crop_and_resize
    if ctx.has_input("roi"):
        relem = ctx.elem("roi")
        if coord == "tf_crop_and_resize":
            if scales is not None:  # end - start == 1: the output size floor(in * scale) is unambiguous
                starts = [_one(draw, (0.0, 0.0, 0.25, -0.25, 0.5)) for _ in axes]
                ends = [s + 1.0 for s in starts]
            else:
                starts = [_one(draw, (0.0, 0.125, 0.25, -0.25, 0.5)) for _ in axes]
                ends = [_one(draw, (1.0, 0.75, 0.5, 1.25, 0.875)) for _ in axes]
            draft.inputs["roi"] = np.asarray(starts + ends, dtype=np_dtype(relem))
        elif ctx.input("roi").option == "optional" and draw(_BOOL):
            draft.inputs["roi"] = None
        else:
            draft.inputs["roi"] = np.zeros((0,), dtype=np_dtype(relem))
    if mode != "nearest" and elem in INT_RANGES and coord is not None:  # rule INTEGER (Resize-11+)
        moving = [coord == "tf_crop_and_resize" or scales is None or scales[i] != 1.0 for i in range(n)]
        draft.inputs["X"] = _whole_averages(draft.inputs["X"], axes, moving)
    draft.inputs["X"] = _sampled_values(draft.inputs["X"], mode)  # rule FINITE
    return draft


# ---------------------------------------------------------------------------------------------
# Range, ConstantOfShape


def _range(draw, ctx: Context) -> Draft:
    elem = ctx.elem("start")
    if elem in INT_RANGES:
        start = _int(draw, -5, 5)
        delta = _one(draw, (1, 2, 3, -1, -2, -3))
        limit = start + _int(draw, -6, 6)
    else:  # quarters: exact in every float type, so every runtime counts the same elements
        start = _int(draw, -12, 12) / 4
        delta = _one(draw, (1.0, 0.5, 2.0, 0.25, 1.5, -1.0, -0.5, -2.0, -0.75))
        limit = start + _int(draw, -12, 12) / 4
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
# GridSample


@functools.lru_cache(maxsize=None)
def _lattice(size: int) -> st.SearchStrategy:
    return st.lists(_ints(-10, 10), min_size=size, max_size=size)


def _grid_sample(draw, ctx: Context) -> Draft:
    modes = _choices(ctx, "mode", ("bilinear", "nearest", "bicubic"))
    paddings = _choices(ctx, "padding_mode", ("zeros", "border", "reflection"))
    elem = ctx.elem("X")
    if elem in ("string", "bool"):  # only a copy (nearest) of in-bounds positions has a meaning
        modes = ("nearest",)
        paddings = tuple(p for p in paddings if p != "zeros")
    # N-D since the "rank r+2" text; the 4-D only versions say so
    spatial = 2 if "only spatial (4-D)" in (ctx.version.doc or "") else _one(draw, (2, 2, 3))
    n = _int(draw, 1, 2)
    c = _int(draw, 1, 2)
    in_sp = _dims(draw, spatial, lo=1, hi=3, zero=False)
    out_sp = _dims(draw, spatial, lo=1, hi=3)
    mode = _one(draw, modes)
    padding = _one(draw, paddings)
    gelem = ctx.elem("grid")
    # coordinates on a 1/8 lattice in [-1.25, 1.25]: mostly inside, some outside (padding_mode);
    # exact in every float type, so the sampling positions are the same everywhere
    gshape = [n] + out_sp + [spatial]
    size = math.prod(gshape)
    grid = (np.asarray(draw(_lattice(size)), dtype=np.float64) / 8.0).reshape(gshape)
    if mode in ("cubic", "bicubic") and padding == "border":  # rule CUBIC_BORDER: inside [-1, 1]
        grid = np.clip(grid, -1.0, 1.0)
    grid = grid.astype(np_dtype(gelem))
    default_mode = ctx.attribute("mode").default
    return Draft(attributes={"mode": ABSENT if mode == default_mode and draw(_BOOL) else mode,
                             "padding_mode": ABSENT if padding == "zeros" and draw(_BOOL) else padding,
                             "align_corners": _one(draw, (ABSENT, 0, 1))},
                 inputs={"X": _sampled_values(values(draw, elem, [n, c] + in_sp), mode), "grid": grid})


def _sampled_values(x: np.ndarray, mode: str) -> np.ndarray:
    """GridSample's, Resize's and Upsample's X where an interpolating mode reads it: non-finite
    values made 0 (rule FINITE: a tap of weight 0 on inf or NaN gives NaN or not), and for cubic |x|
    within a quarter of the type's max (GridSample's rule RANGE: cubic weights sum to at most 1.375
    in |.| per axis, 3 axes at most; Resize: keeps its partial sums in range too)."""
    if mode == "nearest" or x.dtype.kind in "iub" or x.dtype == object or not x.size:
        return x
    complex_ = x.dtype.kind == "c"
    wide = x.astype(np.complex128 if complex_ else np.float64)
    wide = np.where(np.isfinite(wide), wide, 0)
    if mode in ("cubic", "bicubic"):
        top = float(np.finfo(np.float32 if x.dtype == np.complex64 else np.float64).max) if complex_ \
            else float(ml_dtypes.finfo(x.dtype).max)
        bound = top / (4.0 if not complex_ else 8.0)
        clip = functools.partial(np.clip, a_min=-bound, a_max=bound)
        wide = clip(wide.real) + 1j * clip(wide.imag) if complex_ else clip(wide)
    return wide.astype(x.dtype)


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


# ---------------------------------------------------------------------------------------------
# AffineGrid


def _affine_grid(draw, ctx: Context) -> Draft:
    """theta (N, 2, 3) or (N, 3, 4) and size (N, C, H, W) or (N, C, D, H, W) with theta's N: the
    text's shapes. theta's entries are finite quarters in [-4, 4] (exact in every float type, so the
    grid is a short sum of exact products). Extents are at least 1 (rule EXTENT) and, with
    align_corners, at least 2 (rule ONE: one pixel's centre is both -1 and 1); an axis of 1
    without align_corners (the one position at 0) is drawn."""
    spatial = _one(draw, (2, 2, 3))
    n = _int(draw, 2 if spatial == 2 else 1, 3)  # rule BODY_BATCH: no 2-D batch of one
    align = _one(draw, (ABSENT, 0, 1))
    size = [n, _int(draw, 1, 3)] + _dims(draw, spatial, lo=2 if align == 1 else 1, hi=4, zero=False)
    shape = (n, spatial, spatial + 1)
    quarters = draw(st.lists(_ints(-16, 16), min_size=math.prod(shape), max_size=math.prod(shape)))
    theta = (np.asarray(quarters, dtype=np.float64) / 4.0).reshape(shape).astype(np_dtype(ctx.elem("theta")))
    return Draft(attributes={"align_corners": align},
                 inputs={"theta": theta, "size": int_tensor(ctx.elem("size"), size, (len(size),))})


_BUILDERS = {
    "AffineGrid": _affine_grid, "Reshape": _reshape, "Expand": _expand, "Tile": _tile, "Pad": _pad, "Slice": _slice,
    "Resize": _resize, "Upsample": _resize, "Range": _range, "ConstantOfShape": _constant_of_shape,
    "Split": _split, "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Flatten": _flatten,
    "Transpose": _transpose, "CenterCropPad": _center_crop_pad, "SpaceToDepth": _blocks,
    "DepthToSpace": _blocks, "GridSample": _grid_sample,
}


def draw(draw, ctx: Context) -> Draft:
    builder = _BUILDERS.get(ctx.op)
    if builder is None and ctx.op.startswith("Reduce"):
        builder = _reduce
    if builder is None:
        raise NotGeneratable(f"the shape family has no case builder for {ctx.op}-{ctx.since}")
    return builder(draw, ctx)
