"""Sliding-window ops: output geometry, pooling, Conv, ConvTranspose, DeformConv, the causal
depthwise convolution, MaxUnpool, Col2Im, and the convolutions' RANGE rules."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ..runtime import as_dtype
from ._ranges import sampling_type_max
from ._shared import _finite_abs, _ints


def window_geometry(in_shape, kernel, strides, pads, dilations, auto_pad, ceil_mode=0):
    """Output sizes and (begin, end) pads per spatial axis, ONNX's rules for Conv and pooling."""
    n = len(in_shape)
    strides, dilations = _ints(strides, n, 1), _ints(dilations, n, 1)
    pads = _ints(pads, 2 * n, 0)
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else (auto_pad or "NOTSET")
    out, begin, end = [], [], []
    for i in range(n):
        size, k, s, d = in_shape[i], kernel[i], strides[i], dilations[i]
        span = (k - 1) * d + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-size // s)
            total = max((o - 1) * s + span - size, 0)
            small, big = total // 2, total - total // 2
            b, e = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
        elif auto_pad == "VALID":
            o = -(-(size - span + 1) // s)
            b = e = 0
        else:
            b, e = pads[i], pads[i + n]
            num = size + b + e - span
            if ceil_mode:
                o = -(-num // s) + 1
                if (o - 1) * s >= size + b:  # the last window must start inside the input or begin pad
                    o -= 1
            else:
                o = num // s + 1
        out.append(max(o, 0))
        begin.append(b)
        end.append(e)
    return out, begin, end, strides, dilations


def _windows(x, kernel, out, begin, strides, dilations, fill):
    """Gather every window: (N, C, *out, *kernel), padding with ``fill``; also the mask of real
    input elements and the mask of elements inside the explicit padding."""
    n = len(kernel)
    spatial = x.shape[2:]
    need = [(out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 for i in range(n)]
    after = [max(need[i] - begin[i] - spatial[i], 0) for i in range(n)]
    width = [(0, 0), (0, 0)] + [(begin[i], after[i]) for i in range(n)]
    xp = np.pad(x, width, mode="constant", constant_values=fill)
    valid = np.pad(np.ones(spatial, dtype=bool), width[2:], mode="constant", constant_values=False)
    index = []
    for i in range(n):
        idx = (np.arange(out[i]) * strides[i])[:, None] + (np.arange(kernel[i]) * dilations[i])[None, :]
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = out[i], kernel[i]
        idx_full = np.zeros((out[i], kernel[i]), dtype=np.int64) + idx
        index.append(idx_full.reshape([out[i] if j == i else 1 for j in range(n)]
                                      + [kernel[i] if j == i else 1 for j in range(n)]))
    win = xp[(slice(None), slice(None)) + tuple(index)]
    return win, valid[tuple(index)], index


def pool(x, mode, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode=0, count_include_pad=0,
         p=2, storage_order=0, with_indices=False):
    n = len(kernel_shape)
    kernel = [int(k) for k in kernel_shape]
    out, begin, end, strides, dilations = window_geometry(x.shape[2:], kernel, strides, pads, dilations,
                                                          auto_pad, ceil_mode)
    axes = tuple(range(-n, 0))
    if mode == "max":
        xf = x.astype(np.float64) if x.dtype.kind in "iub" else x
        win, valid, index = _windows(xf, kernel, out, begin, strides, dilations, 0)
        win = np.where(valid, win, -np.inf)
        y = np.max(win, axis=axes)
        if not with_indices:
            return as_dtype(y, x.dtype)
        # the first element equal to the max (NaN stays the maximum); -inf and the type's lowest
        # finite value keep their order (-1.8e308 beats -inf); a window whose real elements are
        # all -inf points at the first of them, not at the padding
        size = (int(np.prod(kernel)),)
        flat = win.astype(np.float64).reshape(win.shape[:2 + n] + size)  # not -1: zero-size batches
        arg = np.argmax(flat, axis=-1)
        real = np.broadcast_to(valid, win.shape).reshape(win.shape[:2 + n] + size)
        arg = np.where(np.max(flat, axis=-1) == -np.inf, np.argmax(real, axis=-1), arg)
        coords = np.unravel_index(arg, kernel)
        spatial = x.shape[2:]
        pos = []
        for i in range(n):
            o = np.arange(out[i]).reshape([out[i] if j == i else 1 for j in range(n)])
            pos.append(o * strides[i] + coords[i] * dilations[i] - begin[i])
        if storage_order:
            lin = np.zeros_like(arg)
            mult = 1
            for i in range(n):
                lin = lin + pos[i] * mult
                mult *= spatial[i]
        else:
            lin = np.ravel_multi_index(tuple(pos), spatial)
        nc = (np.arange(x.shape[0])[:, None] * x.shape[1] + np.arange(x.shape[1])[None, :]) \
            .reshape(x.shape[:2] + (1,) * n)
        lin = lin + nc * int(np.prod(spatial))
        return as_dtype(y, x.dtype), lin.astype(np.int64)
    # float16 / bfloat16 sums and powers in float32, rounded once: in their own type they overflow
    # (and underflow) long before the result does; runtimes accumulate them in float32
    xw = x.astype(np.float32) if x.dtype in (np.float16, ml_dtypes.bfloat16) else x
    win, valid, index = _windows(xw, kernel, out, begin, strides, dilations, 0)
    if mode == "lp":
        return as_dtype(np.power(np.sum(np.power(np.abs(np.where(valid, win, 0)), p), axis=axes), 1.0 / p),
                        x.dtype)
    # average
    total = np.sum(np.where(valid, win, 0), axis=axes)
    if count_include_pad:
        spatial = x.shape[2:]
        inside = np.ones([spatial[i] + begin[i] + end[i] for i in range(n)], dtype=bool)
        need_pad = [(0, max(int(index[i].max()) + 1 - inside.shape[i], 0)) if index[i].size else (0, 0)
                    for i in range(n)]
        inside = np.pad(inside, need_pad, constant_values=False)
        count = np.sum(inside[tuple(index)], axis=axes)
    else:
        count = np.sum(valid, axis=axes)
    return as_dtype(total / np.maximum(count, 1), x.dtype)


def _half_as_f32(fn, x, w, b, *rest):
    """float16 / bfloat16 convolutions in float32, rounded once: numpy's einsum has no bfloat16, and
    float16 products and sums overflow (inf - inf: NaN) long before the result does; runtimes
    accumulate them in float32."""
    f32 = [None if a is None else a.astype(np.float32) for a in (x, w, b)]
    return as_dtype(fn(*f32, *rest), x.dtype)


def conv(x, w, b, kernel_shape, strides, pads, dilations, auto_pad, group):
    if x.dtype in (np.float16, ml_dtypes.bfloat16):
        return _half_as_f32(conv, x, w, b, kernel_shape, strides, pads, dilations, auto_pad, group)
    n = x.ndim - 2
    kernel = [int(k) for k in kernel_shape] if kernel_shape else list(w.shape[2:])
    out, begin, end, strides, dilations = window_geometry(x.shape[2:], kernel, strides, pads, dilations, auto_pad)
    win, valid, _ = _windows(x, kernel, out, begin, strides, dilations, 0)  # (N, C, *out, *k)
    g = int(group)
    N, C = x.shape[:2]
    M = w.shape[0]
    win = win.reshape((N, g, C // g) + tuple(out) + tuple(kernel))
    wg = w.reshape((g, M // g, C // g) + tuple(kernel))
    letters = "ABCDEFGH"[:n]
    klet = "PQRSTUVW"[:n]
    y = np.einsum(f"ngc{letters}{klet},gmc{klet}->ngm{letters}", win, wg).reshape((N, M) + tuple(out))
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * n)
    return as_dtype(y, x.dtype)


def conv_in_range(x, w, b, *args):
    """Conv's rule RANGE: for every output the sum of |x * w| over its finite terms, plus |B|, stays
    within the type's max, so no product or partial sum of finite terms overflows whatever the
    summation order and precision (infinite terms then give the same inf or NaN in every order)."""
    with np.errstate(over="ignore", invalid="ignore"):
        y = conv(_finite_abs(x), _finite_abs(w), None if b is None else _finite_abs(b), *args)
    return bool(np.all(y <= sampling_type_max(x)))


def causal_conv_in_range(input, weight, bias=None, past_state=None):
    """CausalConvWithState's rule RANGE: as Conv's, over concat(past_state, input)."""
    with np.errstate(over="ignore", invalid="ignore"):
        y, _ = causal_conv_with_state(_finite_abs(input), _finite_abs(weight),
                                      None if bias is None else _finite_abs(bias),
                                      None if past_state is None else _finite_abs(past_state))
    return bool(np.all(y <= sampling_type_max(input)))


def conv_transpose_in_range(x, w, b, *args):
    """ConvTranspose's rule RANGE: for every output the sum of |x * w| over its finite terms, plus
    |B|, stays within the type's max, so no partial sum of finite terms overflows whatever the
    summation order (infinite terms then give the same inf or NaN in every order)."""
    with np.errstate(over="ignore", invalid="ignore"):
        y = conv_transpose(_finite_abs(x), _finite_abs(w), None if b is None else _finite_abs(b), *args)
    return bool(np.all(y <= sampling_type_max(x)))


def conv_transpose(x, w, b, kernel_shape, strides, pads, dilations, auto_pad, group, output_padding,
                   output_shape):
    if x.dtype in (np.float16, ml_dtypes.bfloat16):
        return _half_as_f32(conv_transpose, x, w, b, kernel_shape, strides, pads, dilations, auto_pad, group,
                            output_padding, output_shape)
    n = x.ndim - 2
    N, C = x.shape[:2]
    g = int(group)
    kernel = [int(k) for k in kernel_shape] if kernel_shape else list(w.shape[2:])
    strides, dilations = _ints(strides, n, 1), _ints(dilations, n, 1)
    out_pad = _ints(output_padding, n, 0)
    pads = _ints(pads, 2 * n, 0)
    auto_pad = auto_pad or "NOTSET"
    spatial = x.shape[2:]
    full = [strides[i] * (spatial[i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 for i in range(n)]
    if output_shape is not None and len(output_shape):
        target = [int(s) for s in output_shape][-n:]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = [spatial[i] * strides[i] for i in range(n)]
    else:
        target = None
    if target is not None:
        begin = []
        for i in range(n):
            total = full[i] - target[i]
            begin.append(total // 2 if auto_pad == "SAME_UPPER" else total - total // 2)
    else:
        begin = pads[:n]
        target = [full[i] - pads[i] - pads[i + n] for i in range(n)]
    M = w.shape[1] * g
    y = np.zeros((N, M) + tuple(full), dtype=np.float64)
    xg = x.reshape((N, g, C // g) + spatial)
    wg = w.reshape((g, C // g, M // g) + tuple(kernel))
    letters = "ABCDEFGH"[:n]
    for offs in np.ndindex(*kernel):
        contrib = np.einsum(f"ngc{letters},gcm->ngm{letters}", xg, wg[(slice(None),) * 3 + offs])
        contrib = contrib.reshape((N, M) + spatial)
        key = tuple(slice(offs[i] * dilations[i], offs[i] * dilations[i] + strides[i] * (spatial[i] - 1) + 1,
                          strides[i]) for i in range(n))
        y[(slice(None), slice(None)) + key] += contrib
    short = [max(begin[i] + target[i] - full[i], 0) for i in range(n)]
    if any(short):  # output_shape asks for more than the full result: zeros at the end
        y = np.pad(y, [(0, 0), (0, 0)] + [(0, k) for k in short])
    crop = tuple(slice(begin[i], begin[i] + target[i]) for i in range(n))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * n)
    return as_dtype(y, x.dtype)


def max_unpool(X, I, output_shape=None, kernel_shape=None, pads=None, strides=None):
    """Scatter X to the flat positions I of the pooled-from shape; an ``output_shape`` larger than
    that shape pads with zeros at the end of each axis (indices keep their coordinates)."""
    n = X.ndim - 2
    strides = _ints(strides, n, 1)
    pads = _ints(pads, 2 * n, 0)
    shape = X.shape[:2] + tuple((X.shape[2 + i] - 1) * strides[i] + int(kernel_shape[i]) - pads[i] - pads[i + n]
                                for i in range(n))
    out = np.zeros(int(np.prod(shape)), dtype=X.dtype)
    out[I.reshape(-1)] = X.reshape(-1)
    out = out.reshape(shape)
    if output_shape is not None:
        target = tuple(int(s) for s in output_shape)
        out = np.pad(out, [(0, max(t - s, 0)) for t, s in zip(target, shape)])
        out = out[tuple(slice(0, t) for t in target)]
    return out


def col2im(input, image_shape, block_shape, dilations=None, pads=None, strides=None):
    img = [int(s) for s in image_shape]
    blk = [int(s) for s in block_shape]
    n = len(img)
    dil, st, pd = _ints(dilations, n, 1), _ints(strides, n, 1), _ints(pads, 2 * n, 0)
    N, CK, L = input.shape
    k = int(np.prod(blk))
    C = CK // k
    out_sizes = [(img[i] + pd[i] + pd[i + n] - (dil[i] * (blk[i] - 1) + 1)) // st[i] + 1 for i in range(n)]
    padded = [img[i] + pd[i] + pd[i + n] for i in range(n)]
    y = np.zeros((N, C) + tuple(padded), dtype=input.dtype)
    if input.dtype == object:  # strings: the empty string is the zero the blocks are added to
        y[...] = ""
    cols = input.reshape((N, C) + tuple(blk) + tuple(out_sizes))
    for koff in np.ndindex(*blk):
        for ooff in np.ndindex(*out_sizes):
            pos = tuple(ooff[i] * st[i] + koff[i] * dil[i] for i in range(n))
            y[(slice(None), slice(None)) + pos] += cols[(slice(None), slice(None)) + koff + ooff]
    crop = tuple(slice(pd[i], pd[i] + img[i]) for i in range(n))
    return y[(slice(None), slice(None)) + crop]


def deform_conv(X, W, offset, B=None, mask=None, *, dilations=None, group=1, kernel_shape=None,
                offset_group=1, pads=None, strides=None):
    N, C, H, Wd = X.shape
    oC = W.shape[0]
    kh, kw = (int(k) for k in kernel_shape) if kernel_shape else W.shape[2:]
    dil, st, pd = _ints(dilations, 2, 1), _ints(strides, 2, 1), _ints(pads, 4, 0)
    oH = (H + pd[0] + pd[2] - (dil[0] * (kh - 1) + 1)) // st[0] + 1
    oW = (Wd + pd[1] + pd[3] - (dil[1] * (kw - 1) + 1)) // st[1] + 1
    og = int(offset_group)
    off = offset.reshape(N, og, kh, kw, 2, oH, oW).astype(np.float64)
    msk = np.ones((N, og, kh, kw, oH, oW)) if mask is None else mask.reshape(N, og, kh, kw, oH, oW).astype(np.float64)
    cols = np.zeros((N, C, kh, kw, oH, oW), dtype=np.float64)
    xf = X.astype(np.float64)
    cpg = C // og
    base_y = (np.arange(oH) * st[0] - pd[0])[:, None]
    base_x = (np.arange(oW) * st[1] - pd[1])[None, :]
    for n in range(N):
        for g in range(og):
            img = xf[n, g * cpg:(g + 1) * cpg]
            for i in range(kh):
                for j in range(kw):
                    y = base_y + i * dil[0] + off[n, g, i, j, 0]
                    x = base_x + j * dil[1] + off[n, g, i, j, 1]
                    y0, x0 = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
                    val = 0.0
                    for dy in (0, 1):
                        for dx in (0, 1):
                            yy, xx = y0 + dy, x0 + dx
                            w = (1 - np.abs(y - yy)) * (1 - np.abs(x - xx))
                            ok = (yy >= 0) & (yy < H) & (xx >= 0) & (xx < Wd)
                            v = img[:, np.clip(yy, 0, H - 1), np.clip(xx, 0, Wd - 1)]
                            val = val + np.where(ok, v * w, 0.0)
                    cols[n, g * cpg:(g + 1) * cpg, i, j] = val * msk[n, g, i, j]
    gr = int(group)
    colsg = cols.reshape(N, gr, C // gr, kh, kw, oH, oW)
    wg = W.reshape(gr, oC // gr, C // gr, kh, kw).astype(np.float64)
    y = np.einsum("ngcijhw,gmcij->ngmhw", colsg, wg).reshape(N, oC, oH, oW)
    if B is not None:
        y = y + B.reshape(1, -1, 1, 1)
    return y.astype(X.dtype)


def causal_conv_with_state(input, weight, bias=None, past_state=None, *, activation="none"):
    """Depthwise causal 1-D convolution over concat(past_state or zeros, input)."""
    B, C, L = input.shape
    k = weight.shape[-1]
    past = np.zeros((B, C, k - 1), dtype=input.dtype) if past_state is None else past_state
    full = np.concatenate([past, input], axis=-1).astype(np.float64)  # (B, C, k - 1 + L)
    w = weight.reshape(C, k).astype(np.float64)
    out = np.zeros((B, C, L))
    for t in range(k):
        out += full[:, :, t:t + L] * w[None, :, t:t + 1]
    if bias is not None:
        out += bias.reshape(1, C, 1)
    if activation in ("silu", "swish"):
        out = out / (1 + np.exp(-out))
    present = full[:, :, full.shape[-1] - (k - 1):] if k > 1 else np.zeros((B, C, 0))
    return out.astype(input.dtype), present.astype(input.dtype)
