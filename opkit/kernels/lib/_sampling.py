"""Sampling at computed locations: GridSample (and its tie rule), AffineGrid, RoiAlign, MaxRoiPool,
NonMaxSuppression."""

from __future__ import annotations

import numpy as np

from ._ranges import sampling_abs_max, sampling_type_max
from ._resize import _cubic_weights


def non_max_suppression(boxes, scores, max_output_boxes_per_class=None, iou_threshold=None,
                        score_threshold=None, center_point_box=0):
    max_out = 0 if max_output_boxes_per_class is None or np.size(max_output_boxes_per_class) == 0 \
        else int(np.asarray(max_output_boxes_per_class).reshape(-1)[0])
    iou_t = 0.0 if iou_threshold is None or np.size(iou_threshold) == 0 else float(np.asarray(iou_threshold).reshape(-1)[0])
    score_t = None if score_threshold is None or np.size(score_threshold) == 0 \
        else float(np.asarray(score_threshold).reshape(-1)[0])
    selected = []
    for b in range(scores.shape[0]):
        bx = boxes[b].astype(np.float64)
        if center_point_box:
            xc, yc, w, h = bx[:, 0], bx[:, 1], bx[:, 2], bx[:, 3]
            y1, x1, y2, x2 = yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
        else:
            y1 = np.minimum(bx[:, 0], bx[:, 2])
            y2 = np.maximum(bx[:, 0], bx[:, 2])
            x1 = np.minimum(bx[:, 1], bx[:, 3])
            x2 = np.maximum(bx[:, 1], bx[:, 3])
        area = (y2 - y1) * (x2 - x1)
        for c in range(scores.shape[1]):
            if max_out <= 0:
                continue
            s = scores[b, c].astype(np.float64)
            order = [int(i) for i in np.argsort(-s, kind="stable") if score_t is None or s[i] > score_t]
            keep: list[int] = []
            for i in order:
                if len(keep) >= max_out:
                    break
                ok = True
                for j in keep:
                    ih = max(0.0, min(y2[i], y2[j]) - max(y1[i], y1[j]))
                    iw = max(0.0, min(x2[i], x2[j]) - max(x1[i], x1[j]))
                    inter = ih * iw
                    union = area[i] + area[j] - inter
                    if union > 0 and inter / union > iou_t:
                        ok = False
                        break
                if ok:
                    keep.append(i)
            selected.extend([b, c, i] for i in keep)
    return np.array(selected, dtype=np.int64).reshape(-1, 3)


def _reflect(x, lo, hi):
    rng = hi - lo
    if rng == 0:
        return np.full_like(x, lo)
    below, above = x < lo, x > hi
    d = np.where(below, lo - x, np.where(above, x - hi, 0.0))
    n = np.floor(d / rng)
    r = d - n * rng
    even = (n % 2) == 0
    low_side = np.where(even, lo + r, hi - r)
    high_side = np.where(even, hi - r, lo + r)
    return np.where(below, low_side, np.where(above, high_side, x))


def grid_sample(X, grid, *, align_corners=0, mode="linear", padding_mode="zeros"):
    """GridSample for 2-D and 3-D inputs (grid's last axis is (x, y[, z]), i.e. reversed axes)."""
    n = X.ndim - 2
    N = X.shape[0]
    sizes = X.shape[2:]
    out_sp = grid.shape[1:-1]
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    coords = []
    for i in range(n):
        g = grid[..., n - 1 - i].astype(np.float64)
        s = sizes[i]
        c = (g + 1) / 2 * (s - 1) if align_corners else ((g + 1) * s - 1) / 2
        if padding_mode == "border":  # only coordinates outside the border move (to [0, s - 1]):
            # with align_corners=0 the border is [-0.5, s - 0.5], which cubic taps can tell apart
            lo, hi = (0.0, s - 1.0) if align_corners else (-0.5, s - 0.5)
            c = np.where((c < lo) | (c > hi), np.clip(c, 0, s - 1), c)
        elif padding_mode == "reflection":
            c = _reflect(c, 0, s - 1) if align_corners else _reflect(c, -0.5, s - 0.5)
        coords.append(c)
    bidx = np.arange(N).reshape((N,) + (1,) * len(out_sp))
    # nearest copies elements (exact for every type); linear and cubic weigh them in float
    xf = X if mode == "nearest" else X.astype(np.complex128 if X.dtype.kind == "c" else np.float64)

    def fetch(idx):
        valid = np.ones(idx[0].shape, dtype=bool)
        fixed = []
        for i in range(n):
            k = idx[i]
            if padding_mode == "zeros":
                valid &= (k >= 0) & (k <= sizes[i] - 1)
            elif padding_mode == "reflection":
                k = np.rint(_reflect(k.astype(np.float64), 0, sizes[i] - 1)).astype(np.int64) if align_corners \
                    else np.rint(_reflect(k.astype(np.float64), -0.5, sizes[i] - 0.5)).astype(np.int64)
            fixed.append(np.clip(k, 0, sizes[i] - 1))
        vals = xf[(bidx, slice(None)) + tuple(fixed)]  # (N, *out, C)
        return np.where(valid[..., None], vals, np.zeros((), dtype=xf.dtype)) if padding_mode == "zeros" else vals

    if mode == "nearest":
        out = fetch([np.rint(c).astype(np.int64) for c in coords])
    elif mode == "linear":
        base = [np.floor(c).astype(np.int64) for c in coords]
        out = 0.0
        for corner in np.ndindex(*([2] * n)):
            idx = [base[i] + corner[i] for i in range(n)]
            w = np.ones(coords[0].shape)
            for i in range(n):
                w = w * (1 - np.abs(coords[i] - idx[i]))
            out = out + fetch(idx) * w[..., None]
    else:
        base = [np.floor(c).astype(np.int64) for c in coords]
        ws = [_cubic_weights(coords[i] - base[i], -0.75) for i in range(n)]
        out = 0.0
        for offs in np.ndindex(*([4] * n)):
            idx = [base[i] + offs[i] - 1 for i in range(n)]
            w = np.ones(coords[0].shape)
            for i in range(n):
                w = w * ws[i][..., offs[i]]
            out = out + fetch(idx) * w[..., None]
    return np.moveaxis(np.asarray(out), -1, 1).astype(X.dtype)


def roi_align_in_range(X, rois, *, mode="avg", output_height=1, output_width=1, sampling_ratio=0, spatial_scale=1.0,
                       coordinate_transformation_mode="half_pixel"):
    """RoiAlign's rule RANGE: in mode avg a bin sums its samples (each a convex combination of X
    values) before dividing by their count; the largest |X| times the largest count per bin stays
    within the type's max, so no partial sum can overflow."""
    if mode not in ("avg", b"avg") or rois.shape[0] == 0:
        return True
    half = coordinate_transformation_mode in ("half_pixel", b"half_pixel")
    most = 1
    for r in range(rois.shape[0]):
        x1, y1, x2, y2 = (float(v) * spatial_scale for v in rois[r])
        rw, rh = x2 - x1, y2 - y1
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rh / output_height))
        gw = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rw / output_width))
        most = max(most, gh * gw)
    return sampling_abs_max(X) * most <= sampling_type_max(X)


def _bilinear_roi(img, y, x):
    H, W = img.shape[-2:]
    if y < -1.0 or y > H or x < -1.0 or x > W:
        return None
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = int(y), int(x)
    if y_low >= H - 1:
        y_high = y_low = H - 1
        y = float(y_low)
    else:
        y_high = y_low + 1
    if x_low >= W - 1:
        x_high = x_low = W - 1
        x = float(x_low)
    else:
        x_high = x_low + 1
    ly, lx = y - y_low, x - x_low
    hy, hx = 1 - ly, 1 - lx
    return ((hy * hx, img[:, y_low, x_low]), (hy * lx, img[:, y_low, x_high]),
            (ly * hx, img[:, y_high, x_low]), (ly * lx, img[:, y_high, x_high]))


def roi_align(X, rois, batch_indices, *, coordinate_transformation_mode="half_pixel", mode="avg",
              output_height=1, output_width=1, sampling_ratio=0, spatial_scale=1.0):
    half = coordinate_transformation_mode == "half_pixel"
    offset = 0.5 if half else 0.0
    C = X.shape[1]
    out = np.zeros((rois.shape[0], C, output_height, output_width), dtype=np.float64)
    xf = X.astype(np.float64)
    for r in range(rois.shape[0]):
        img = xf[int(batch_indices[r])]
        x1, y1, x2, y2 = (float(v) * spatial_scale - offset for v in rois[r])
        rw, rh = x2 - x1, y2 - y1
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / output_height, rw / output_width
        gh = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rh / output_height))
        gw = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rw / output_width))
        count = max(gh * gw, 1)
        for ph in range(output_height):
            for pw in range(output_width):
                acc = np.zeros(C) if mode == "avg" else None
                for iy in range(gh):
                    y = y1 + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        x = x1 + pw * bw + (ix + 0.5) * bw / gw
                        taps = _bilinear_roi(img, y, x)
                        if mode == "avg":
                            if taps is not None:
                                acc = acc + sum(w * v for w, v in taps)
                        else:
                            val = np.zeros(C) if taps is None else np.max(np.stack([w * v for w, v in taps]), axis=0)
                            acc = val if acc is None else np.maximum(acc, val)
                if mode == "avg":
                    out[r, :, ph, pw] = acc / count
                else:
                    out[r, :, ph, pw] = acc if acc is not None else 0
    return out.astype(X.dtype)


def affine_grid(theta, size, *, align_corners=0):
    dims = [int(s) for s in np.asarray(size).reshape(-1)]
    N, spatial = dims[0], dims[2:]

    def base(n):
        if align_corners:
            return np.linspace(-1, 1, n) if n > 1 else np.zeros(1)
        return (np.arange(n) * 2 + 1) / n - 1

    axes = [base(n) for n in spatial]  # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    coords = [m.reshape(-1) for m in mesh[::-1]]  # x, y[, z]
    pts = np.stack(coords + [np.ones_like(coords[0])], axis=0)  # (k + 1, P)
    grid = np.einsum("nij,jp->npi", theta.astype(np.float64), pts)
    return grid.reshape([N] + spatial + [len(spatial)]).astype(theta.dtype)


def max_roi_pool(X, rois, *, pooled_shape, spatial_scale=1.0):
    ph_n, pw_n = (int(v) for v in pooled_shape)
    H, W = X.shape[2:]
    out = np.zeros((rois.shape[0], X.shape[1], ph_n, pw_n), dtype=X.dtype)
    for r, roi in enumerate(rois):
        b = int(roi[0])
        x1, y1, x2, y2 = (int(np.round(float(v) * spatial_scale)) for v in roi[1:])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for ph in range(ph_n):
            hs = min(max(int(np.floor(ph * rh / ph_n)) + y1, 0), H)
            he = min(max(int(np.ceil((ph + 1) * rh / ph_n)) + y1, 0), H)
            for pw in range(pw_n):
                ws = min(max(int(np.floor(pw * rw / pw_n)) + x1, 0), W)
                we = min(max(int(np.ceil((pw + 1) * rw / pw_n)) + x1, 0), W)
                if he > hs and we > ws:
                    out[r, :, ph, pw] = X[b, :, hs:he, ws:we].max(axis=(1, 2))
    return out


def nearest_ties_clear(X, grid, align_corners=0) -> bool:
    """GridSample's nearest mode: every sampling location is exactly on a tie between two pixels
    or clearly off it. The location ((g + 1) * s - 1) / 2 (align_corners: (g + 1) / 2 * (s - 1)) is
    rounded to a pixel; within a few float32 roundings of a half-integer the pixel depends on the
    precision the location is computed in, which the text does not fix (grid 1.65e-5 on an axis of
    2 is 0.50000825: pixel 1 exactly, but 1 + 5.96e-8 is 1.0 in float32, a tie). Reflection about
    the border keeps a location's distance to the half-integers, so the unreflected one is checked."""
    g = np.asarray(grid).astype(np.float64)
    n = np.ndim(X) - 2
    for i in range(n):
        s = X.shape[2 + i]
        u = (g[..., n - 1 - i] + 1) / 2 * (s - 1) if align_corners else ((g[..., n - 1 - i] + 1) * s - 1) / 2
        u = u[np.isfinite(u)]
        off = np.abs((u - 0.5) - np.round(u - 0.5))
        if np.any((off > 0) & (off <= 2.0 ** -16 * (s + 1 + np.abs(u)))):
            return False
    return True
