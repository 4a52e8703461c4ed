"""Shape-family builders for the ops that resample data on a grid: Resize, Upsample, GridSample
and AffineGrid (scales or sizes of the right length, roi for tf_crop_and_resize, grids on an exact
lattice, values where interpolation stays defined)."""

from __future__ import annotations

import functools
import math

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

from ...core.dtypes import FLOATS, np_dtype
from ...core.onnx_types import INT_RANGES
from ..context import ABSENT, Context, Draft, int_tensor, values
from .shape_draws import _BOOL, _axes_subset, _choices, _dims, _int, _ints, _one, _rare, _signed_axes


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
    mode, coord = _resize_modes(draw, ctx, elem, attrs)
    scales = _resize_scales(draw, ctx, draft, shape, axes, mode, upsample)
    _resize_roi(draw, ctx, draft, coord, scales, axes)
    if mode != "nearest" and elem in INT_RANGES and coord is not None:  # rule INTEGER (Resize-11+)
        moving = [coord == "tf_crop_and_resize" or scales is None or scales[i] != 1.0 for i in range(n)]
        draft.inputs["X"] = _whole_averages(draft.inputs["X"], axes, moving)
    draft.inputs["X"] = _sampled_values(draft.inputs["X"], mode)  # rule FINITE
    return draft


def _resize_modes(draw, ctx: Context, elem: str, attrs: dict) -> tuple[str, str | None]:
    """Resize's interpolation attributes set in ``attrs``: (mode, coordinate mapping or None)."""
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
    return mode, coord


def _resize_scales(draw, ctx: Context, draft: Draft, shape: list[int], axes: list[int], mode: str,
                   upsample: bool) -> list[float] | None:
    """Resize's scales or sizes (as attribute or inputs) set in ``draft``: the scales, or None when
    sizes are given."""
    attrs = draft.attributes
    n = len(axes)
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
    return scales


def _resize_roi(draw, ctx: Context, draft: Draft, coord: str | None, scales: list[float] | None,
                axes: list[int]) -> None:
    """Resize's ``roi`` input set in ``draft`` (when the version has one)."""
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


# ---------------------------------------------------------------------------------------------
# GridSample


@functools.lru_cache(maxsize=None)
def _lattice(size: int) -> st.SearchStrategy:
    return st.lists(_ints(-10, 10), min_size=size, max_size=size)


def _grid_sample(draw, ctx: Context, grid_name: str = "grid") -> Draft:
    """GridSample's X and grid (``grid_name``: com.microsoft GridSample calls it Grid)."""
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
    gelem = ctx.elem(grid_name)
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
                 inputs={"X": _sampled_values(values(draw, elem, [n, c] + in_sp), mode), grid_name: grid})


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
