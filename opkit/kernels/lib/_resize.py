"""Resize: per-axis interpolation matrices (nearest, linear, cubic, antialiased) and the INTEGER rule."""

from __future__ import annotations

import numpy as np


def _cubic_weights(t, A):
    t1, t2, t3 = t + 1, 1 - t, 2 - t
    return np.stack([
        ((A * t1 - 5 * A) * t1 + 8 * A) * t1 - 4 * A,
        ((A + 2) * t - (A + 3)) * t * t + 1,
        ((A + 2) * t2 - (A + 3)) * t2 * t2 + 1,
        ((A * t3 - 5 * A) * t3 + 8 * A) * t3 - 4 * A,
    ], axis=-1)


def _cubic_kernel(d, A):
    d = np.abs(d)
    return np.where(d <= 1, ((A + 2) * d - (A + 3)) * d * d + 1,
                    np.where(d < 2, ((A * d - 5 * A) * d + 8 * A) * d - 4 * A, 0.0))


def _resize_matrix(in_len, out_len, scale, mode, coord_mode, nearest_mode, A, exclude_outside, antialias,
                   roi_start, roi_end):
    """(out_len x in_len) interpolation weights along one axis, and the mask of outputs whose
    source coordinate lies outside the input (tf_crop_and_resize extrapolation)."""
    x = np.arange(out_len, dtype=np.float64)
    if coord_mode == "half_pixel":
        src = (x + 0.5) / scale - 0.5
    elif coord_mode == "half_pixel_symmetric":
        adjustment = out_len / (scale * in_len)
        center = in_len / 2
        src = center * (1 - adjustment) + (x + 0.5) / scale - 0.5
    elif coord_mode == "pytorch_half_pixel":
        src = (x + 0.5) / scale - 0.5 if out_len > 1 else np.zeros_like(x)
    elif coord_mode == "align_corners":  # the resized length is in_len * scale, not rounded
        src = x * (in_len - 1) / (in_len * scale - 1) if in_len * scale != 1 else np.zeros_like(x)
    elif coord_mode == "asymmetric":
        src = x / scale
    elif coord_mode == "tf_half_pixel_for_nn":  # Resize-11
        src = (x + 0.5) / scale
    elif coord_mode == "tf_crop_and_resize":
        if out_len > 1:
            src = roi_start * (in_len - 1) + x * (roi_end - roi_start) * (in_len - 1) / (out_len - 1)
        else:
            src = np.full_like(x, 0.5 * (roi_start + roi_end) * (in_len - 1))
    else:
        raise ValueError(f"unknown coordinate_transformation_mode {coord_mode!r}")
    outside = (src < 0) | (src > in_len - 1)
    m = np.zeros((out_len, in_len), dtype=np.float64)
    rows = np.arange(out_len)
    if mode == "nearest":
        frac = src - np.floor(src)
        if nearest_mode == "round_prefer_floor":
            idx = np.where(frac == 0.5, np.floor(src), np.round(src))
        elif nearest_mode == "round_prefer_ceil":
            idx = np.where(frac == 0.5, np.ceil(src), np.round(src))
        elif nearest_mode == "floor":
            idx = np.floor(src)
        elif nearest_mode == "ceil":
            idx = np.ceil(src)
        else:
            raise ValueError(f"unknown nearest_mode {nearest_mode!r}")
        idx = np.clip(idx, 0, in_len - 1).astype(np.int64)
        m[rows, idx] = 1
        return m, outside
    support = 1.0 if mode == "linear" else 2.0
    s = min(scale, 1.0) if antialias else 1.0
    if not antialias:
        base = np.floor(src)
        t = src - base
        if mode == "linear":
            offs, w = np.array([0, 1]), np.stack([1 - t, t], axis=-1)
        else:
            offs, w = np.array([-1, 0, 1, 2]), _cubic_weights(t, A)
        idx = base[:, None].astype(np.int64) + offs[None, :]
        if exclude_outside:
            w = np.where((idx < 0) | (idx > in_len - 1), 0, w)
            w = w / np.sum(w, axis=1, keepdims=True)
        idx = np.clip(idx, 0, in_len - 1)
        for k in range(idx.shape[1]):
            np.add.at(m, (rows, idx[:, k]), w[:, k])
        return m, outside
    radius = support / s
    for r in range(out_len):
        c = src[r]
        lo, hi = int(np.floor(c - radius)) + 1, int(np.ceil(c + radius))
        js = np.arange(lo, hi)
        d = (js - c) * s
        w = np.maximum(1 - np.abs(d), 0) if mode == "linear" else _cubic_kernel(d, A)
        total = w.sum()
        if total != 0:
            w = w / total
        if exclude_outside:  # drop taps outside the input and renormalise; else they clamp to the edge
            w = np.where((js >= 0) & (js <= in_len - 1), w, 0)
            total = w.sum()
            w = w / total if total != 0 else w
        for j, wj in zip(np.clip(js, 0, in_len - 1), w):
            m[r, j] += wj
    return m, outside


def resize(X, roi=None, scales=None, sizes=None, *, antialias=0, axes=None, coordinate_transformation_mode="half_pixel",
           cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, keep_aspect_ratio_policy="stretch",
           mode="nearest", nearest_mode="round_prefer_floor"):
    rank = X.ndim
    axes = list(range(rank)) if axes is None else [int(a) + rank if a < 0 else int(a) for a in axes]
    in_shape = [X.shape[a] for a in axes]
    if scales is not None and np.size(scales) > 0:
        sc = [float(v) for v in np.asarray(scales).reshape(-1)]
        out_sizes = [int(np.floor(in_shape[i] * sc[i])) for i in range(len(axes))]
    else:
        sz = [int(v) for v in np.asarray(sizes).reshape(-1)]
        if keep_aspect_ratio_policy in ("not_larger", "not_smaller"):
            ratios = [sz[i] / in_shape[i] for i in range(len(axes))]
            r = min(ratios) if keep_aspect_ratio_policy == "not_larger" else max(ratios)
            sc = [r] * len(axes)
            out_sizes = [int(np.floor(r * in_shape[i] + 0.5)) for i in range(len(axes))]
        else:
            sc = [sz[i] / in_shape[i] for i in range(len(axes))]
            out_sizes = sz
    roi_v = None if roi is None or np.size(roi) == 0 else np.asarray(roi, dtype=np.float64).reshape(-1)
    # nearest copies elements (exact for every type: strings, int64 extremes, inf next to finite
    # values); linear and cubic weigh them in float (complex stays complex)
    nearest = mode == "nearest"
    # integers (and the long doubles resize_is_whole passes) are weighed in extended precision:
    # every int64 is exact in it, so a whole weighted average rounds back to itself
    wide = np.complex128 if X.dtype.kind == "c" else (
        np.longdouble if X.dtype.kind in "iu" or X.dtype == np.longdouble else np.float64)
    y = X if nearest else X.astype(wide)
    mask = None
    for i, a in enumerate(axes):
        n = len(axes)
        if roi_v is not None:
            start, end = (roi_v[i], roi_v[i + n]) if len(roi_v) == 2 * n else (roi_v[a], roi_v[a + rank])
        else:
            start, end = 0.0, 1.0
        if in_shape[i] == out_sizes[i] and sc[i] == 1.0 and coordinate_transformation_mode != "tf_crop_and_resize":
            continue
        m, outside = _resize_matrix(in_shape[i], out_sizes[i], sc[i], mode, coordinate_transformation_mode,
                                    nearest_mode, cubic_coeff_a, exclude_outside, antialias, start, end)
        if nearest:
            y = np.take(y, np.argmax(m, axis=1), axis=a)
        else:
            y = np.moveaxis(np.tensordot(m, np.moveaxis(y, a, 0), axes=(1, 0)), 0, a)
        if coordinate_transformation_mode == "tf_crop_and_resize":
            shape = [1] * rank
            shape[a] = out_sizes[i]
            o = outside.reshape(shape)
            mask = o if mask is None else (mask | o)
    if mask is not None:
        fill = extrapolation_value
        if nearest and X.dtype.kind in "iu":  # keep the copied integers exact
            info = np.iinfo(X.dtype)
            fill = X.dtype.type(min(max(np.rint(fill), info.min), info.max))
        y = np.where(mask, fill, y)
    if X.dtype.kind in "iu" and y.dtype.kind not in "iu":
        y = np.clip(np.rint(y), np.iinfo(X.dtype).min, np.iinfo(X.dtype).max)
    return y.astype(X.dtype)


def resize_is_whole(X, *args, **kwargs):
    """Resize's rule INTEGER: for an integer X every output value (weighted average, or
    extrapolation_value) is a whole number, so no rounding is needed. Computed in long double from
    the float64 weights, as resize computes integers; a result within 2^-10 of a whole number counts
    as whole (the weights' rounding; resize's own result then rounds to that number)."""
    if X.dtype.kind not in "iu" or kwargs.get("mode", "nearest") in ("nearest", b"nearest") and (
            float(kwargs.get("extrapolation_value", 0.0)).is_integer()):
        return True
    y = resize(X.astype(np.longdouble), *args, **kwargs)
    return bool(np.all(np.abs(y - np.rint(y)) <= 2.0 ** -10))
