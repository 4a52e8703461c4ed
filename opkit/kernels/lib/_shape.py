"""Shape and layout ops: Split, Slice, Pad, DepthToSpace, SpaceToDepth, CenterCropPad."""

from __future__ import annotations

import numpy as np


def split_core(x, axis, sizes, n_outputs, uneven_ok: bool = False) -> tuple[np.ndarray, ...]:
    axis = axis + x.ndim if axis < 0 else axis
    length = x.shape[axis]
    if sizes is None or len(np.asarray(sizes).reshape(-1)) == 0:
        n = int(n_outputs or 1)
        if uneven_ok:
            chunk = -(-length // n)
            sizes = [min(chunk, max(length - i * chunk, 0)) for i in range(n)]
        else:  # "split to equal sized parts": a length n does not divide has no defined split
            if length % n:
                raise ValueError(f"an axis of length {length} does not split into {n} equal parts")
            sizes = [length // n] * n
    sizes = [int(s) for s in np.asarray(sizes).reshape(-1)]
    cuts = np.cumsum(sizes)[:-1]
    return tuple(np.split(x, cuts, axis=axis))


def slice_core(data, starts, ends, axes, steps) -> np.ndarray:
    starts = [int(s) for s in np.asarray(starts).reshape(-1)]
    ends = [int(e) for e in np.asarray(ends).reshape(-1)]
    axes = list(range(len(starts))) if axes is None else [int(a) for a in np.asarray(axes).reshape(-1)]
    steps = [1] * len(starts) if steps is None else [int(s) for s in np.asarray(steps).reshape(-1)]
    key = [slice(None)] * data.ndim
    for a, s, e, st in zip(axes, starts, ends, steps):
        a = a + data.ndim if a < 0 else a
        # ONNX's clamping (not Python's): negative indices count from the end, then starts clamp
        # to [0, dim] (forward) or [0, dim - 1] (backward) and ends to [0, dim] or [-1, dim - 1],
        # so a backward start below -dim still selects element 0 where Python selects nothing
        dim = data.shape[a]
        s, e = (s + dim if s < 0 else s), (e + dim if e < 0 else e)
        if st > 0:
            s, e = min(max(s, 0), dim), min(max(e, 0), dim)
        else:
            s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
        key[a] = slice(s, None if e < 0 else e, st)
    return data[tuple(key)]


def pad_core(data, pads, value, mode, axes) -> np.ndarray:
    mode = mode.decode() if isinstance(mode, bytes) else mode
    pads = [int(p) for p in np.asarray(pads).reshape(-1)]
    rank = data.ndim
    axes = list(range(rank)) if axes is None else [int(a) + rank if a < 0 else int(a)
                                                   for a in np.asarray(axes).reshape(-1)]
    n = len(axes)
    before, after = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        before[a], after[a] = pads[i], pads[i + n]
    # negative pads crop
    key = tuple(slice(-b if b < 0 else 0, data.shape[i] + a if a < 0 else None)
                for i, (b, a) in enumerate(zip(before, after)))
    x = data[key]
    width = [(max(b, 0), max(a, 0)) for b, a in zip(before, after)]
    if not width:  # a 0-D tensor has nothing to pad (np.pad rejects an empty pad_width)
        return x.copy()
    if mode == "constant":
        # the default constant is 0, the empty string or False
        v = np.asarray(value).reshape(-1)[0] if value is not None and np.asarray(value).size else \
            "" if data.dtype == object else 0
        return np.pad(x, width, mode="constant", constant_values=v).astype(data.dtype, copy=False)
    if mode == "reflect":
        return np.pad(x, width, mode="reflect")
    if mode == "edge":
        return np.pad(x, width, mode="edge")
    if mode == "wrap":
        return np.pad(x, width, mode="wrap")
    raise ValueError(f"unknown pad mode {mode!r}")


def depth_to_space(x, blocksize, mode="DCR"):
    b, c, h, w = x.shape
    bs = int(blocksize)
    if mode == "DCR":
        t = x.reshape(b, bs, bs, c // bs ** 2, h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(b, c // bs ** 2, bs, bs, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(b, c // bs ** 2, h * bs, w * bs)


def space_to_depth(x, blocksize, mode="DCR"):
    b, c, h, w = x.shape
    bs = int(blocksize)
    t = x.reshape(b, c, h // bs, bs, w // bs, bs)
    t = t.transpose(0, 3, 5, 1, 2, 4) if mode == "DCR" else t.transpose(0, 1, 3, 5, 2, 4)
    return t.reshape(b, c * bs ** 2, h // bs, w // bs)


def center_crop_pad(x, shape, axes=None):
    rank = x.ndim
    axes = list(range(rank)) if axes is None else [int(a) + rank if a < 0 else int(a) for a in axes]
    target = [int(s) for s in np.asarray(shape).reshape(-1)]
    out = x
    for a, t in zip(axes, target):
        dim = out.shape[a]
        if dim > t:
            start = (dim - t) // 2
            out = np.take(out, np.arange(start, start + t), axis=a)
        elif dim < t:
            before = (t - dim) // 2
            width = [(0, 0)] * rank
            width[a] = (before, t - dim - before)
            out = np.pad(out, width)
    return out
