"""Compute helpers shared by several kernels (families of versions of one op, or related ops).

Spec ``python:`` bodies call these where versions differ only in how arguments arrive (an
attribute in one version, an input in the next): the semantics live here once.
"""

from __future__ import annotations

import contextvars
import math

import ml_dtypes
import numpy as np

from .runtime import as_dtype, compute_dtype, onnx_dtype, reduce_core, widen

__all__ = [
    "gather_nd", "scatter_elements", "scatter_nd", "split_core", "slice_core", "pad_core",
    "cumulative", "topk_core", "softmax", "log_softmax", "hardmax", "softmax_2d", "REDUCERS",
    "dropout_core", "unique_core", "batch_norm", "string_split", "string_normalizer",
    "window_geometry", "pool", "conv", "conv_transpose", "quantize", "dequantize", "matmul_integer",
    "conv_integer", "qlinear_matmul", "qlinear_conv", "max_unpool", "non_max_suppression", "col2im",
    "tensor_scatter", "rnn_core", "dft", "stft", "mel_weight_matrix", "resize", "grid_sample", "roi_align",
    "resize_is_whole", "conv_transpose_in_range", "roi_align_in_range", "sampling_abs_max", "sampling_type_max",
    "tfidf_vectorizer", "deform_conv", "depth_to_space", "space_to_depth", "layer_norm", "group_norm",
    "rms_norm", "rotary_embedding", "center_crop_pad", "affine_grid", "nll_loss", "mean_defined", "softmax_cross_entropy",
    "dynamic_quantize_linear", "window", "max_roi_pool", "rng", "attention", "attention_defined", "causal_conv_with_state",
    "linear_attention", "linear_attention_defined", "reduce_float64", "log_sum_exp", "int_pow", "int_pow_defined", "int_div", "reduce_mean", "stash_dtype",
    "shrink", "shrink_defined", "sigmoid",
    "conv_in_range", "causal_conv_in_range", "einsum_in_range", "batch_norm_in_range", "prod_in_range",
    "nearest_ties_clear",
]

REDUCERS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _is_float(dtype) -> bool:
    """float16, float, double (numpy kind 'f') and bfloat16 (an ml_dtypes type of kind 'V')."""
    return dtype.kind == "f" or dtype == ml_dtypes.bfloat16


def reduce_float64(data, axes, keepdims, noop_with_empty_axes, fn, pre=None, post=None, empty=None):
    """``reduce_core`` with floating data accumulated in float64, rounded once to the input type.

    float16 / bfloat16 squares, sums and products overflow (or lose most of their digits) long
    before the result does: ReduceL2 of float16 982.5 is inf when squared in float16. onnxruntime
    accumulates in a wider type. Integer data is NOT widened (float64 would change the results):
    sums and products stay in its own type and wrap around as C integer arithmetic does (which
    gives the exact value whenever it fits), while the reductions that end in a square root or a
    logarithm (ReduceL2, ReduceLogSum, ReduceLogSumExp) are computed exactly, see
    _reduce_integers_exactly."""
    if data.dtype.kind in "iu" and (post is not None or fn is log_sum_exp):
        return _reduce_integers_exactly(data, axes, keepdims, noop_with_empty_axes, fn, pre, post)
    if not _is_float(data.dtype):
        return reduce_core(data, axes, keepdims, noop_with_empty_axes, fn, pre=pre, post=post, empty=empty)
    r = reduce_core(data.astype(np.float64), axes, keepdims, noop_with_empty_axes, fn, pre=pre, post=post,
                    empty=empty)
    return as_dtype(r, data.dtype)


def _reduce_integers_exactly(data, axes, keepdims, noop_with_empty_axes, fn, pre, post):
    """ReduceL2, ReduceLogSum, ReduceLogSumExp of integers: the exact value, truncated toward zero.

    Their sums may pass the type's range where the result does not (int32 ReduceL2 of 46341,
    46341 is 65536, but 46341**2 * 2 wraps around in int32), so the sums and squares are Python
    integers, sqrt is math.isqrt (exact), log is math.log of the exact integer, and
    log(sum(exp(x))) is m + log(sum(exp(x - m))) with the integer maximum m kept exact. Where the
    value is not a real number (log of 0 or of a negative sum) the result is whatever numpy's
    float-to-integer cast gives: ONNX leaves it undefined."""
    def finish(value):
        if isinstance(value, int):
            return value
        return value if not math.isfinite(value) else math.trunc(value)

    def sqrt(r):
        return np.frompyfunc(lambda v: math.isqrt(v) if v >= 0 else math.nan, 1, 1)(r)

    def log(r):
        return np.frompyfunc(lambda v: finish(math.log(v)) if v > 0 else (-math.inf if v == 0 else math.nan), 1, 1)(r)

    def lse(x, axis, keepdims):
        if x.size == 0:  # log(0): -inf
            return np.full(np.sum(np.zeros(x.shape), axis=axis, keepdims=keepdims).shape, -math.inf, dtype=object)
        m = np.max(x, axis=axis, keepdims=True)
        shifted = np.frompyfunc(lambda v: math.exp(float(v)), 1, 1)(x - m)  # x - m <= 0, exact
        total = np.sum(shifted, axis=axis, keepdims=True)  # in [1, n]
        r = np.frompyfunc(lambda mm, t: _truncated_sum(np.asarray(mm, dtype=object), math.log(t)).item(), 2, 1)(m, total)
        r = np.asarray(r, dtype=object)
        return r if keepdims else np.squeeze(r, axis=axis)

    step = {np.sqrt: sqrt, np.log: log}.get(post, post)
    reduce = lse if fn is log_sum_exp else fn
    r = reduce_core(data.astype(object), axes, keepdims, noop_with_empty_axes, reduce, pre=pre, post=step)
    flat = [finish(v) for v in np.asarray(r, dtype=object).reshape(-1).tolist()]
    exact = [v for v in flat if isinstance(v, int)]
    if len(exact) == len(flat):
        return _wrap_to(np.asarray(flat, dtype=object).reshape(np.shape(r)), data.dtype)
    with np.errstate(invalid="ignore"):  # NaN / inf to an integer: undefined, numpy's cast
        out = np.asarray([float(v) for v in flat], dtype=np.float64).astype(data.dtype)
    ints = np.asarray([isinstance(v, int) for v in flat])
    out[ints] = _wrap_to(np.asarray([v for v in flat if isinstance(v, int)], dtype=object), data.dtype)
    return out.reshape(np.shape(r))


def reduce_mean(x, axis, keepdims):
    """The mean over ``axis`` (a reduction with numpy's signature).

    Floating data: np.mean. Integer data exactly: the sum in Python integers (no wraparound, no
    float64: np.mean of int64 goes through float64 and loses the low digits of values past 2**53),
    divided by the count truncating toward zero as ONNX's integer Div does. The mean of values of a
    type always fits the type. An empty reduction (ONNX: undefined) gives 0."""
    if x.dtype.kind not in "iu":
        return np.mean(x, axis=axis, keepdims=keepdims)
    axes = tuple(range(x.ndim)) if axis is None else tuple(np.atleast_1d(axis).tolist())
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    total = np.sum(x.astype(object), axis=axes, keepdims=keepdims)
    if count == 0:
        return np.zeros(np.shape(total), dtype=x.dtype)
    quotient = np.frompyfunc(lambda s: -(-s // count) if s < 0 else s // count, 1, 1)
    return np.asarray(quotient(total)).astype(x.dtype)


def shrink(x, lambd, bias):
    """Shrink: x + bias where x < -lambd, x - bias where x > lambd, 0 elsewhere.

    Floating x (float16 / bfloat16 already widened by the unary template): lambd and bias as
    given (float32), not rounded to x's type. Integer x: the formula's exact value, converted to
    x's type as Cast converts a real number, toward zero (4 - 1.5 is 2), wrapping around out of
    range (Cast's integer rule); computed in Python integers, where a trip through float32 turns
    int32 2147483646 into -2147483648 and one through float64 int64 2**63 - 1 into -2**63. (The
    function body casts bias to x's type first, "BiasCast = CastLike (Bias, input)", 4 - 1 = 3:
    see docs/reference-disagreements.md, "Shrink".)"""
    if x.dtype.kind not in "iu":
        return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0))
    exact = x.astype(object)  # Python integers: no float rounding of large values
    below = np.asarray(exact < math.ceil(-lambd) if math.isfinite(lambd) else x < -lambd, dtype=bool)
    above = np.asarray(exact > math.floor(lambd) if math.isfinite(lambd) else x > lambd, dtype=bool)
    y = np.where(below, _truncated_sum(exact, bias), np.where(above, _truncated_sum(exact, -bias), 0))
    return _wrap_to(y, x.dtype)


def shrink_defined(x, lambd, bias) -> bool:
    """Whether Shrink's two readings agree on integer ``x`` (always True for floating ``x``).

    The formula ("If x > lambd, y = x - bias") and the function body ("BiasCast = CastLike (Bias,
    input)", "InputSubBias = Sub (input, BiasCast)", "Less (LambdCast, input)") give the same
    integers when bias is integral, lambd is in [0, the type's max] (CastLike of lambd is then
    defined, and x > lambd iff x > trunc(lambd)) and x + bias, x - bias stay in the type's range
    (the body's Add/Sub would overflow; ONNX does not define integer overflow)."""
    x = np.asarray(x)
    if x.dtype.kind not in "iu":
        return True
    info = np.iinfo(x.dtype)
    if not (math.isfinite(bias) and bias == math.trunc(bias) and math.isfinite(lambd) and 0 <= lambd <= info.max):
        return False
    exact = x.astype(object).reshape(-1)  # Python integers
    b = int(bias)
    sums = [v + b if v < -lambd else v - b for v in exact if v < -lambd or v > lambd]
    return all(info.min <= v <= info.max for v in sums)


def _truncated_sum(x, c):
    """trunc(x + c) for Python integers x and a float c, exactly: x + floor(c) where x + c >= 0,
    x + ceil(c) below. Element by element in Python integers: a 0-d object array's arithmetic
    gives a bare int, which np.where would squeeze into an int64 (uint64 2**64 - 2 overflows)."""
    low, high = math.ceil(-c), (math.floor(c), math.ceil(c))
    add = np.frompyfunc(lambda v: v + (high[0] if v >= low else high[1]), 1, 1)
    return np.asarray(add(np.asarray(x, dtype=object)), dtype=object)


def _wrap_to(values, dtype):
    """Python integers into an integer ``dtype``, modulo 2**bits (two's complement)."""
    bits = np.dtype(dtype).itemsize * 8
    signed = np.dtype(dtype).kind == "i"
    wrap = np.frompyfunc(lambda v: (v + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1)) if signed
                         else v % (1 << bits), 1, 1)
    return np.asarray(wrap(np.asarray(values, dtype=object)), dtype=object).astype(dtype)


def sigmoid(x):
    """1 / (1 + exp(-x)) in float64 (at least), without overflow: exp(x) / (1 + exp(x)) for
    negative x. float32 sigmoid(-100) is the subnormal 3.7e-44, not 1 / (1 + inf) = 0, and
    Swish's x * sigmoid(x) of it keeps its digits (a float32 subnormal sigmoid has almost none)."""
    xw = np.asarray(x).astype(np.result_type(np.asarray(x).dtype, np.float64))
    e = np.exp(-np.abs(xw))
    return np.where(xw >= 0, 1 / (1 + e), e / (1 + e))


def log_sum_exp(x, axis, keepdims):
    """log(sum(exp(x))) over ``axis`` (a reduction with numpy's signature), in float64.

    Shifted by the maximum m, m + log(sum(exp(x - m))), so exp neither underflows (float32 -133.834
    alone: exp is 0 and the naive log gives -inf) nor overflows. Where m is not finite the shift is 0:
    all -inf or an empty reduction gives log(0) = -inf, any +inf gives +inf, any NaN gives NaN."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)  # initial: defined for empty axes
        m = np.where(np.isfinite(m), m, 0.0)
        r = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return r if keepdims else np.squeeze(r, axis=axis)


def int_div(A, B):
    """Integer division truncating toward zero (C semantics), exactly, in the inputs' type.

    np.trunc(np.divide(A, B)) goes through float64 and is off by hundreds for int64 quotients past
    2**53. Floor division corrected by one where the signs differ and there is a remainder gives
    the C quotient; INT_MIN / -1 wraps around (it traps in C, which ONNX leaves undefined)."""
    with np.errstate(all="ignore"):
        q = np.floor_divide(A, B)
        fix = (np.remainder(A, B) != 0) & ((A < 0) != (B < 0))
        return np.where(fix, q + np.ones((), q.dtype), q).astype(np.result_type(A, B))


def int_pow(X, Y):
    """Pow with an integer base X, in X's type, as C++ integer arithmetic would compute it.

    An integer exponent >= 0 is integer arithmetic: products wrap around on overflow (int32 X with
    Y = 3 is x*x*x mod 2**32, as onnxruntime gives, not the saturated value a trip through float
    gives). Computed in uint64, whose wraparound agrees with every narrower signed / unsigned type
    once truncated to X's type, and which never rejects a large exponent. A float or negative
    exponent is static_cast<T>(std::pow(double(x), double(y))): float64, truncated toward zero; out
    of range is undefined behaviour in C++ and whatever numpy's cast gives here."""
    with np.errstate(all="ignore"):
        via_float = np.power(X.astype(np.float64), Y.astype(np.float64)).astype(X.dtype)
        if Y.dtype.kind not in "iu":
            return via_float
        exponent = np.where(Y < 0, 0, Y).astype(np.uint64)
        via_int = np.power(X.astype(np.uint64), exponent).astype(X.dtype)
        return np.where(Y >= 0, via_int, via_float)


def int_pow_defined(X, Y) -> bool:
    """Pow's rule RESULT: for an integer X every x^y is an integer that X's type holds, computed
    exactly in Python integers. A negative exponent gives a fraction (or a division by zero for
    x = 0) unless |x| = 1, a non-integral float exponent a fraction, and a power past the type's
    range an overflow; the text ("f(x) = x^exponent", output in T) defines none of them. A float
    X is not this rule's business."""
    X, Y = np.asarray(X), np.asarray(Y)
    if X.dtype.kind not in "iu":
        return True
    info = np.iinfo(X.dtype)
    xs, ys = np.broadcast_arrays(X, Y)
    for x, y in zip(xs.ravel().tolist(), ys.ravel().tolist()):
        if isinstance(y, float):
            if not math.isfinite(y) or y != int(y):
                return False
            y = int(y)
        if y < 0:
            if abs(x) != 1:
                return False
        elif abs(x) > 1 and y > 64:  # |x| >= 2: 2**64 is past every integer type
            return False
        if not info.min <= x ** (y if y >= 0 else -y) <= info.max:
            return False
    return True


def gather_nd(data: np.ndarray, indices: np.ndarray, batch_dims: int) -> np.ndarray:
    b = int(batch_dims)
    batch_shape = data.shape[:b]
    n_batch = int(np.prod(batch_shape, dtype=np.int64))
    q = indices.shape[-1]
    d = data.reshape((n_batch,) + data.shape[b:])
    n_tuples = int(np.prod(indices.shape[b:-1], dtype=np.int64))  # not -1: ambiguous for an empty batch
    idx = indices.reshape((n_batch, n_tuples, q)).astype(np.int64)
    dims = np.array(data.shape[b:b + q], dtype=np.int64)
    idx = np.where(idx < 0, idx + dims, idx)
    out = np.stack([d[i][tuple(idx[i].T)] for i in range(n_batch)]) if n_batch else \
        np.zeros((0,) + idx.shape[1:2] + data.shape[b + q:], dtype=data.dtype)
    return out.reshape(indices.shape[:-1] + data.shape[b + q:])


def scatter_elements(data, indices, updates, axis, reduction) -> np.ndarray:
    axis = axis + data.ndim if axis < 0 else axis
    out = data.copy()
    idx = np.where(indices < 0, indices + data.shape[axis], indices).astype(np.int64)
    grids = list(np.indices(idx.shape, sparse=False))
    grids[axis] = idx
    key = tuple(grids)
    if reduction in (None, "none"):
        out[key] = updates
    else:
        REDUCERS[reduction].at(out, key, updates)
    return out


def scatter_nd(data, indices, updates, reduction) -> np.ndarray:
    out = data.copy()
    q = indices.shape[-1]
    idx = indices.reshape(-1, q).astype(np.int64)
    upd = updates.reshape((idx.shape[0],) + data.shape[q:])
    fn = None if reduction in (None, "none") else REDUCERS[reduction]
    for i in range(idx.shape[0]):
        key = tuple(idx[i])
        out[key] = upd[i] if fn is None else fn(out[key], upd[i])
    return out


def split_core(x, axis, sizes, n_outputs, uneven_ok: bool = False) -> tuple[np.ndarray, ...]:
    axis = axis + x.ndim if axis < 0 else axis
    length = x.shape[axis]
    if sizes is None or len(np.asarray(sizes).reshape(-1)) == 0:
        n = int(n_outputs or 1)
        if uneven_ok:
            chunk = -(-length // n)
            sizes = [min(chunk, max(length - i * chunk, 0)) for i in range(n)]
        else:
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


def cumulative(x, axis, exclusive, reverse, fn, identity) -> np.ndarray:
    a = int(np.asarray(axis).reshape(-1)[0])
    a = a + x.ndim if a < 0 else a
    y = widen(np.flip(x, a) if reverse else x)  # float16 / bfloat16 accumulate in float32
    r = fn(y, axis=a, dtype=y.dtype)
    if exclusive and r.shape[a]:  # an empty axis stays empty
        r = np.concatenate([np.full_like(np.take(r, [0], axis=a), identity),
                            np.take(r, np.arange(r.shape[a] - 1), axis=a)], axis=a)
    if reverse:
        r = np.flip(r, a)
    return as_dtype(r, x.dtype)


def topk_core(x, k, axis, largest, sorted_) -> tuple[np.ndarray, np.ndarray]:
    """Top k along ``axis``; among equal values the lower index comes first."""
    k = int(np.asarray(k).reshape(-1)[0])
    axis = axis + x.ndim if axis < 0 else axis
    if largest:
        # descending with ties in ascending index: stable ascending sort of the reversed axis,
        # read backwards, mapped back to original positions
        n = x.shape[axis]
        order = n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(x, idx, axis=axis)
    return values, idx.astype(np.int64)


def softmax(x, axis):
    """exp(x - max) / sum(exp(x - max)); float16 / bfloat16 in float32, rounded once."""
    if x.size == 0:  # a zero-size input gives a zero-size output
        return x.copy()
    xw = widen(x)
    m = np.max(xw, axis=axis, keepdims=True)
    e = np.exp(xw - m)
    return as_dtype(e / np.sum(e, axis=axis, keepdims=True), x.dtype)


def log_softmax(x, axis):
    """(x - max) - log(sum(exp(x - max))): finite where log(softmax(x)) underflows to -inf;
    float16 / bfloat16 in float32, rounded once."""
    if x.size == 0:  # a zero-size input gives a zero-size output
        return x.copy()
    return as_dtype(_log_softmax_wide(widen(x), axis), x.dtype)


def _log_softmax_wide(xw, axis):
    """log_softmax of already widened data, not rounded (SoftmaxCrossEntropyLoss reuses it)."""
    m = np.max(xw, axis=axis, keepdims=True)
    s = xw - m
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def hardmax(x, axis):
    axis = axis + x.ndim if axis < 0 else axis
    idx = np.expand_dims(np.argmax(x, axis=axis), axis)
    out = np.zeros_like(x)
    np.put_along_axis(out, idx, 1, axis=axis)
    return out


def softmax_2d(x, axis, fn):
    """Opset < 13: coerce to 2-D at ``axis``, apply ``fn`` along axis 1, restore the shape."""
    axis = axis + x.ndim if axis < 0 else axis
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = int(np.prod(x.shape[axis:], dtype=np.int64))  # not -1: a zero-size input cannot infer it
    return fn(x.reshape(outer, inner), 1).reshape(x.shape)


def dropout_core(data, ratio, training_mode, seed):
    """Identity (and an all-true mask) unless training; then a mask drawn from a seeded
    ``np.random.RandomState`` (seed attribute, default 0) keeps values >= ratio, scaled by 1/(1-ratio)."""
    r = 0.5 if ratio is None else float(np.asarray(ratio).reshape(-1)[0])
    training = False if training_mode is None else bool(np.asarray(training_mode).reshape(-1)[0])
    if not training or r == 0:
        return data.copy(), np.ones(data.shape, dtype=bool)
    rng = np.random.RandomState(0 if seed is None else int(seed))
    mask = rng.uniform(0, 1.0, data.shape) >= r
    return as_dtype(mask * data / (1 - r), data.dtype), mask


def _unique_object_slices(x, axis):
    """``np.unique(x, axis=axis, return_index=True, return_inverse=True, return_counts=True)`` for an
    object (string) array: the distinct slices along ``axis``, sorted lexicographically by their
    flattened values as NumPy sorts them."""
    moved = np.moveaxis(x, axis, 0)
    rows = [tuple(np.asarray(moved[i], dtype=object).reshape(-1).tolist()) for i in range(moved.shape[0])]
    keys = sorted(set(rows))
    pos = {k: i for i, k in enumerate(keys)}
    inverse = np.array([pos[r] for r in rows], dtype=np.int64)
    first = np.array([rows.index(k) for k in keys], dtype=np.int64)
    counts = np.bincount(inverse, minlength=len(keys))
    return np.moveaxis(moved[first], 0, axis), first, inverse, counts


def unique_core(x, axis, sorted_):
    if axis is None:
        flat = x.reshape(-1)
        values, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True,
                                                   return_counts=True)
    elif x.dtype == object:  # strings: np.unique takes no axis for object arrays
        axis = axis + x.ndim if axis < 0 else axis
        values, first, inverse, counts = _unique_object_slices(x, axis)
    else:
        axis = axis + x.ndim if axis < 0 else axis
        values, first, inverse, counts = np.unique(x, axis=axis, return_index=True, return_inverse=True,
                                                   return_counts=True)
    inverse = inverse.reshape(-1)
    if not sorted_:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values = values[order] if axis is None else np.take(values, order, axis=axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    i64 = np.int64
    return values, first.astype(i64), inverse.astype(i64), counts.astype(i64)


def batch_norm_in_range(x, scale, bias, mean, var, epsilon, training_mode):
    """BatchNormalization's rule RANGE: over the finite values, no intermediate of the training
    statistics (sums of X and of squared deviations, n * (2 max|X|)^2) and no intermediate of Y,
    |X - mean| * max(|scale|, 1) * max(1 / sqrt(var + epsilon), 1) + |B|, leaves the computation
    type (float for float16 / bfloat16 X: "ReduceMean and ReduceVar uses float", and runtimes
    compute the rest in float too), so neither overflows in one evaluation order and not another."""
    if x.size == 0:
        return True
    half = x.dtype in (np.float16, ml_dtypes.bfloat16)
    top = stat_top = float(np.finfo(np.float32).max) if half else float(ml_dtypes.finfo(x.dtype).max)
    c = x.shape[1] if x.ndim >= 2 else 1
    xs = np.asarray(x).astype(np.float64).reshape((x.shape[0], c, -1))
    xs = np.where(np.isfinite(xs), xs, 0.0)
    shape = (1, c, 1)
    with np.errstate(over="ignore", invalid="ignore"):
        if training_mode:
            n = xs.shape[0] * xs.shape[2]
            big = np.abs(xs).max(axis=(0, 2))
            if np.any(np.abs(xs).sum(axis=(0, 2)) > stat_top) or np.any(n * (2 * big) ** 2 > stat_top):
                return False
            m, v = xs.mean(axis=(0, 2)), xs.var(axis=(0, 2))
        else:
            m = np.asarray(mean).astype(np.float64)
            m, v = np.where(np.isfinite(m), m, 0.0), _finite_abs(var)
        dev = np.abs(xs - m.reshape(shape))
        inv = 1.0 / np.sqrt(v + float(epsilon))
        y = dev * np.maximum(_finite_abs(scale), 1.0).reshape(shape) * np.maximum(inv, 1.0).reshape(shape) \
            + _finite_abs(bias).reshape(shape)
    return bool(np.all(y <= top))


def batch_norm(x, scale, bias, mean, var, epsilon, momentum, training_mode):
    """Y (and in training mode the running mean and variance, each in its own input's type).

    Training mode normalises with the batch's statistics: the mean and the population variance
    (divided by N, not N - 1) over every axis but the channel. float16 / bfloat16 operands are
    computed in float32 and every output rounded once: "The computation of ReduceMean and
    ReduceVar uses float to avoid overflow for float16 inputs" (BatchNormalization-14/15); the
    running statistics mix input_mean / input_var with the batch's in that precision too."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    xw, scale_w, bias_w = widen(x), widen(scale).reshape(shape), widen(bias).reshape(shape)
    if training_mode:
        axes = (0,) + tuple(range(2, x.ndim))
        with np.errstate(invalid="ignore", divide="ignore"):  # an empty batch: NaN statistics
            batch_mean = np.mean(xw, axis=axes)
            centred = xw - batch_mean.reshape(shape)
            batch_var = np.mean(np.square(centred), axis=axes)
            y = centred / np.sqrt(batch_var.reshape(shape) + epsilon) * scale_w + bias_w
        running_mean = widen(mean) * momentum + batch_mean * (1 - momentum)
        running_var = widen(var) * momentum + batch_var * (1 - momentum)
        return (as_dtype(y, x.dtype), as_dtype(running_mean, mean.dtype), as_dtype(running_var, var.dtype))
    # scale / sqrt(var + epsilon) first: with scale = 0 the exact result is B, which evaluating
    # ((X - mean) / sqrt(var + epsilon)) * scale left to right loses when the quotient overflows
    # (inf * 0 = NaN) for a finite X near the type's maximum
    with np.errstate(invalid="ignore", over="ignore"):
        factor = scale_w / np.sqrt(widen(var).reshape(shape) + epsilon)
        y = (xw - widen(mean).reshape(shape)) * factor + bias_w
    return as_dtype(y, x.dtype)


def string_split(x, delimiter, maxsplit):
    delim = delimiter if delimiter else None
    n = -1 if maxsplit is None else int(maxsplit)
    parts = [str(s).split(delim, n) if delim is not None else str(s).split(None, n) for s in x.reshape(-1)]
    width = max((len(p) for p in parts), default=0)
    y = np.full((len(parts), width), "", dtype=object)
    for i, p in enumerate(parts):
        y[i, :len(p)] = p
    counts = np.array([len(p) for p in parts], dtype=np.int64).reshape(x.shape)
    return y.reshape(x.shape + (width,)), counts


def string_normalizer(x, action, case_sensitive, stopwords, locale):
    words = list(x.reshape(-1))
    if stopwords:
        stop = set(stopwords) if case_sensitive else {w.lower() for w in stopwords}
        words = [w for w in words if (w if case_sensitive else w.lower()) not in stop]
    if action == "LOWER":
        words = [w.lower() for w in words]
    elif action == "UPPER":
        words = [w.upper() for w in words]
    if not words:
        words = [""]
    out = np.array(words, dtype=object)
    return out.reshape(1, -1) if x.ndim == 2 else out


# -- convolution and pooling ----------------------------------------------------------------------

def _ints(value, n, default):
    if value is None or len(value) == 0:
        return [default] * n
    return [int(v) for v in value]


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


def _finite_abs(a):
    """|a| in float64, with inf and NaN as 0: the finite terms of a sum of products."""
    a = np.asarray(a).astype(np.float64)
    return np.where(np.isfinite(a), np.abs(a), 0.0)


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


def einsum_in_range(Inputs, equation):
    """Einsum's rule RANGE (float operands): no operand holds inf, and the einsum of max(|x|, 1)
    (NaN read as 1) stays within the type's max: then no product of some of a term's factors and no
    partial sum overflows, in whatever order the operands are contracted (NaN propagates in every
    order; inf * 0 would not)."""
    if not Inputs or Inputs[0].dtype.kind not in "fV":
        return True
    xs = [np.asarray(x).astype(np.float64) for x in Inputs]
    if any(np.isinf(x).any() for x in xs):
        return False
    bounded = [np.where(np.isnan(x), 1.0, np.maximum(np.abs(x), 1.0)) for x in xs]
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.einsum(equation.replace(" ", ""), *bounded)
    return bool(np.all(y <= sampling_type_max(Inputs[0])))


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


# -- quantization ---------------------------------------------------------------------------------

def _broadcast_param(param, x_shape, axis, block_size):
    """A per-tensor / per-axis / blocked scale or zero point, broadcastable against ``x_shape``."""
    p = np.asarray(param)
    rank = len(x_shape)
    if p.size == 1 and not block_size:
        return p.reshape(())
    axis = axis + rank if axis < 0 else axis
    if block_size:
        return np.repeat(p, block_size, axis=axis).take(np.arange(x_shape[axis]), axis=axis)
    if p.ndim == 1:
        return p.reshape([-1 if i == axis else 1 for i in range(rank)])
    return p


def _int_range(dtype):
    try:
        info = ml_dtypes.iinfo(dtype)
    except (TypeError, ValueError):
        info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _division_dtype(y_scale, precision) -> np.dtype:
    """The type QuantizeLinear divides in: "The type of `y_scale` determines the precision of the
    division operation between `x` and `y_scale`, unless the `precision` attribute is specified"
    (opset 23+; before, x and y_scale share one type, or y_scale is float32). An integer scale has
    no rounding of its own: float64 holds every int32 quotient's digits. float8e8m0 (a power of
    two) divides in float32, where dividing by it is exact."""
    dtype = onnx_dtype(int(precision)) if precision else y_scale.dtype
    if dtype.kind in "iu":
        return np.dtype(np.float64)
    if dtype in (np.float16, np.float32, np.float64, ml_dtypes.bfloat16):
        return np.dtype(dtype)
    return np.dtype(np.float32)


def quantize(x, y_scale, y_zero_point=None, axis=1, block_size=0, output_dtype=0, saturate=1, precision=0):
    """QuantizeLinear: `y = saturate((x / y_scale) + y_zero_point)`, x / y_scale divided in the
    precision the spec names (see _division_dtype) and rounded half to even; integer outputs
    saturate to their range (+-inf to the ends), float8 / float4 / float6 outputs are Cast with
    ``saturate``."""
    from .runtime import ONNX_TO_NUMPY, cast_to

    if y_zero_point is not None:
        out = y_zero_point.dtype
    elif output_dtype:
        out = onnx_dtype(output_dtype)
    else:
        out = np.dtype(np.uint8)
    division = _division_dtype(y_scale, precision)
    scale = _broadcast_param(y_scale, x.shape, axis, block_size or 0).astype(division)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = x.astype(division) / scale
    zp = 0 if y_zero_point is None else _broadcast_param(y_zero_point, x.shape, axis, block_size or 0)
    name = [k for k, dt in ONNX_TO_NUMPY.items() if dt == out][0]
    if out.kind in "iu" or name in ("int4", "uint4", "int2", "uint2"):
        lo, hi = _int_range(out)
        # in float64: every rounded quotient plus zero point is exact there, and clipping before
        # the integer conversion saturates what no integer type holds (1e30, inf)
        q = np.rint(v).astype(np.float64) + (np.asarray(zp).astype(np.float64) if y_zero_point is not None else 0)
        return np.clip(q, lo, hi).astype(np.int64).astype(out)
    with np.errstate(over="ignore", invalid="ignore"):
        zf = np.asarray(zp).astype(division) if y_zero_point is not None else division.type(0)
        return cast_to(np.asarray(v + zf).astype(np.float32) if division != np.float64 else v + zf, name,
                       saturate=saturate)


def dequantize(x, x_scale, x_zero_point=None, axis=1, block_size=0, output_dtype=0):
    """DequantizeLinear: `y = (x - x_zero_point) * x_scale`, exactly (float64 holds every product
    of a <= 32-bit integer and a float32 scale) and rounded once to the output type."""
    out = onnx_dtype(output_dtype) if output_dtype else x_scale.dtype
    scale = _broadcast_param(x_scale, x.shape, axis, block_size or 0).astype(np.float64)
    xf = x.astype(np.float64)
    if x_zero_point is not None:
        xf = xf - _broadcast_param(x_zero_point, x.shape, axis, block_size or 0).astype(np.float64)
    return as_dtype(xf * scale, out)


def _zp_rows(zp, rows_axis_len, as_column):
    if zp is None:
        return 0
    z = np.asarray(zp).astype(np.int64)
    if z.ndim == 1 and z.size != 1:
        return z.reshape(-1, 1) if as_column else z.reshape(1, -1)
    return z.reshape(()) if z.size == 1 else z


def matmul_integer(A, B, a_zero_point=None, b_zero_point=None):
    a = A.astype(np.int64) - _zp_rows(a_zero_point, A.shape[-2] if A.ndim > 1 else 1, True)
    b = B.astype(np.int64) - _zp_rows(b_zero_point, B.shape[-1], False)
    return np.matmul(a, b).astype(np.int32)


def conv_integer(x, w, x_zero_point=None, w_zero_point=None, **attrs):
    xi = x.astype(np.float64) - (0 if x_zero_point is None else np.asarray(x_zero_point).astype(np.float64))
    wz = 0 if w_zero_point is None else np.asarray(w_zero_point).astype(np.float64)
    if np.ndim(wz) == 1 and np.size(wz) > 1:
        wz = wz.reshape((-1,) + (1,) * (w.ndim - 1))
    wi = w.astype(np.float64) - wz
    y = conv(xi, wi, None, attrs.get("kernel_shape"), attrs.get("strides"), attrs.get("pads"),
             attrs.get("dilations"), attrs.get("auto_pad"), attrs.get("group", 1))
    return np.rint(y).astype(np.int32)


def _per_row(p):
    """a's scale / zero point against a: a vector of M values is per row ([M, 1]); N-D ([..., M, 1])
    and 1-element ones broadcast as they are."""
    p = np.asarray(p).astype(np.float64)
    if p.ndim == 1 and p.size != 1:
        return p.reshape(-1, 1)
    return p.reshape(()) if p.ndim <= 1 else p


def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    af = (a.astype(np.float64) - _per_row(a_zero_point)) * _per_row(a_scale)
    bf = (b.astype(np.float64) - np.asarray(b_zero_point).astype(np.float64)) * np.asarray(b_scale, np.float64)
    y = np.matmul(af, bf)
    return quantize(y.astype(np.float32), np.asarray(y_scale).astype(np.float32), y_zero_point)


def qlinear_conv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B=None, **attrs):
    xf = (x.astype(np.float64) - np.asarray(x_zero_point).astype(np.float64)) * np.asarray(x_scale, np.float64)
    shape_w = (-1,) + (1,) * (w.ndim - 1)
    wz = np.asarray(w_zero_point).astype(np.float64)
    ws = np.asarray(w_scale).astype(np.float64)
    wf = (w.astype(np.float64) - (wz.reshape(shape_w) if wz.size > 1 else wz)) * (ws.reshape(shape_w) if ws.size > 1 else ws)
    y = conv(xf, wf, None, attrs.get("kernel_shape"), attrs.get("strides"), attrs.get("pads"),
             attrs.get("dilations"), attrs.get("auto_pad"), attrs.get("group", 1))
    if B is not None:
        y = y + (B.astype(np.float64) * np.asarray(x_scale, np.float64) * ws).reshape((1, -1) + (1,) * (x.ndim - 2))
    ys = float(np.asarray(y_scale).reshape(-1)[0])
    q = np.rint(y / ys) + np.asarray(y_zero_point).astype(np.int64)
    lo, hi = _int_range(np.asarray(y_zero_point).dtype)
    return np.clip(q, lo, hi).astype(np.asarray(y_zero_point).dtype)


# -- misc ops -------------------------------------------------------------------------------------

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


def tensor_scatter(past_cache, update, write_indices=None, mode="linear", axis=-2):
    out = past_cache.copy()
    axis = axis + out.ndim if axis < 0 else axis
    batch = out.shape[0]
    idx = np.zeros(batch, dtype=np.int64) if write_indices is None else np.asarray(write_indices).astype(np.int64)
    n = update.shape[axis]
    length = out.shape[axis]
    for b in range(batch):
        pos = idx[b] + np.arange(n)
        if mode == "circular":
            pos = pos % length
        key = [slice(None)] * (out.ndim - 1)
        key[axis - 1] = pos
        out[b][tuple(key)] = update[b]
    return out


# -- recurrent networks ---------------------------------------------------------------------------

def _activation(name, alpha, beta):
    name = name.lower()
    table = {
        "relu": lambda x: np.maximum(x, 0),
        "tanh": np.tanh,
        "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "affine": lambda x: alpha * x + beta,
        "leakyrelu": lambda x: np.where(x >= 0, x, alpha * x),
        "thresholdedrelu": lambda x: np.where(x > alpha, x, 0),
        "scaledtanh": lambda x: alpha * np.tanh(beta * x),
        "hardsigmoid": lambda x: np.clip(alpha * x + beta, 0, 1),
        "elu": lambda x: np.where(x >= 0, x, alpha * (np.exp(x) - 1)),
        "softsign": lambda x: x / (1 + np.abs(x)),
        "softplus": lambda x: np.logaddexp(0, x),  # ln(exp(x) + 1) without overflowing exp(x)
    }
    return table[name]


# A relative error given to every activation's output in rnn_core (0: the exact recurrence). opkit's
# allowance for RNN, GRU and LSTM (opkit.conformance.accumulation) runs the kernel with it to see
# how far the recurrence carries one step's rounding: an update gate of 8000 turns a tanh 4 ULPs off
# into 35 ULPs three steps later.
RECURRENCE_PERTURBATION: contextvars.ContextVar[float] = contextvars.ContextVar("recurrence_perturbation",
                                                                                default=0.0)


def _perturbed(fn, bump: float):
    return fn if bump == 1.0 else (lambda x: fn(x) * bump)


_DEFAULT_ALPHA = {"leakyrelu": 0.01, "thresholdedrelu": 1.0, "hardsigmoid": 0.2, "elu": 1.0, "affine": 1.0,
                  "scaledtanh": 1.0}
_DEFAULT_BETA = {"hardsigmoid": 0.5, "affine": 0.0, "scaledtanh": 1.0}


def rnn_core(kind, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *,
             activations=None, activation_alpha=None, activation_beta=None, clip=None,
             direction="forward", hidden_size=None, layout=0, linear_before_reset=0, input_forget=0):
    """RNN / GRU / LSTM over the whole sequence; returns (Y, Y_h) or (Y, Y_h, Y_c)."""
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    n_act = {"RNN": 1, "GRU": 2, "LSTM": 3}[kind]
    default_acts = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]
    dirs = 2 if direction == "bidirectional" else 1
    x = np.swapaxes(X, 0, 1) if layout else X  # [seq, batch, input]
    seq, batch = x.shape[0], x.shape[1]
    hidden = R.shape[-1]
    acts = list(activations) if activations else default_acts * dirs
    if len(acts) == n_act and dirs == 2:
        acts = acts * 2
    # alphas (betas) are consumed in the order of the functions, one by each function that takes
    # one (the keys of _DEFAULT_ALPHA / _DEFAULT_BETA); a function left without one takes its default
    alphas = iter(activation_alpha or [])
    betas = iter(activation_beta or [])
    funcs = []
    bump = 1.0 + RECURRENCE_PERTURBATION.get()
    for a in acts:
        key = a.lower()
        al = next(alphas, _DEFAULT_ALPHA[key]) if key in _DEFAULT_ALPHA else 0.0
        be = next(betas, _DEFAULT_BETA[key]) if key in _DEFAULT_BETA else 0.0
        funcs.append(_perturbed(_activation(a, al, be), bump))
    h0 = np.zeros((dirs, batch, hidden), dtype=X.dtype) if initial_h is None else \
        (np.swapaxes(initial_h, 0, 1) if layout else initial_h)
    c0 = np.zeros((dirs, batch, hidden), dtype=X.dtype) if initial_c is None else \
        (np.swapaxes(initial_c, 0, 1) if layout else initial_c)
    bias = np.zeros((dirs, 2 * gates * hidden), dtype=X.dtype) if B is None else B
    peep = np.zeros((dirs, 3 * hidden), dtype=X.dtype) if P is None else P
    lens = np.full(batch, seq, dtype=np.int64) if sequence_lens is None else np.asarray(sequence_lens).astype(np.int64)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    Y = np.zeros((seq, dirs, batch, hidden), dtype=X.dtype)
    Yh = np.zeros((dirs, batch, hidden), dtype=X.dtype)
    Yc = np.zeros((dirs, batch, hidden), dtype=X.dtype)
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        f = funcs[d * n_act:(d + 1) * n_act]
        w, r = W[d], R[d]
        wb, rb = bias[d][:gates * hidden], bias[d][gates * hidden:]
        h, c = h0[d].astype(np.float64), c0[d].astype(np.float64)
        for step in range(seq):
            t = seq - 1 - step if reverse else step
            active = (t < lens)[:, None] if not reverse else (t < lens)[:, None]
            xt = x[t].astype(np.float64)
            gx = xt @ w.T + wb
            if kind == "RNN":
                hn = f[0](cl(gx + h @ r.T + rb))
                cn = c
            elif kind == "GRU":
                H = hidden
                gh = h @ r.T
                z = f[0](cl(gx[:, :H] + gh[:, :H] + rb[:H]))
                rr = f[0](cl(gx[:, H:2 * H] + gh[:, H:2 * H] + rb[H:2 * H]))
                if linear_before_reset:
                    hh = f[1](cl(gx[:, 2 * H:] + rr * (gh[:, 2 * H:] + rb[2 * H:])))
                else:
                    hh = f[1](cl(gx[:, 2 * H:] + (rr * h) @ r[2 * H:].T + rb[2 * H:]))
                hn = (1 - z) * hh + z * h
                cn = c
            else:
                H = hidden
                g = gx + h @ r.T + rb
                pi, po, pf = peep[d][:H], peep[d][H:2 * H], peep[d][2 * H:]
                i_g = f[0](cl(g[:, :H] + pi * c))
                f_g = f[0](cl(g[:, 2 * H:3 * H] + pf * c))
                if input_forget:
                    f_g = 1 - i_g
                c_g = f[1](cl(g[:, 3 * H:]))
                cn = f_g * c + i_g * c_g
                o_g = f[0](cl(g[:, H:2 * H] + po * cn))
                hn = o_g * f[2](cn)
            h = np.where(active, hn, h)
            c = np.where(active, cn, c)
            Y[t, d] = np.where(active, hn, 0)
        Yh[d], Yc[d] = h, c
    if layout:
        Y = np.transpose(Y, (2, 0, 1, 3))
        Yh, Yc = np.swapaxes(Yh, 0, 1), np.swapaxes(Yc, 0, 1)
    if kind == "LSTM":
        return Y, Yh, Yc
    return Y, Yh


# -- signal processing ----------------------------------------------------------------------------

def dft(input, dft_length=None, axis=None, *, inverse=0, onesided=0, attr_axis=1):
    """DFT along ``axis`` of a real ([..., 1]) or complex ([..., 2]) signal, computed in the
    input's precision (complex64 for float32 inputs); onesided + inverse is the IRFFT."""
    a = attr_axis if axis is None else int(np.asarray(axis).reshape(-1)[0])
    x = input
    a = a + x.ndim if a < 0 else a
    ctype = np.complex64 if x.dtype in (np.float32, np.float16) or x.dtype.kind == "V" else np.complex128
    ftype = np.float32 if ctype == np.complex64 else np.float64
    if x.shape[-1] == 1:
        sig = x[..., 0].astype(ftype).astype(ctype)
    else:
        sig = (x[..., 0].astype(ftype) + 1j * x[..., 1].astype(ftype)).astype(ctype)
    if onesided and inverse:
        n = 2 * (sig.shape[a] - 1) if dft_length is None else int(np.asarray(dft_length).reshape(-1)[0])
        res = np.fft.irfft(sig, n=n, axis=a)
        return res[..., None].astype(input.dtype)
    n = sig.shape[a] if dft_length is None else int(np.asarray(dft_length).reshape(-1)[0])
    res = np.fft.ifft(sig, n=n, axis=a) if inverse else np.fft.fft(sig, n=n, axis=a)
    if onesided:
        res = np.take(res, np.arange(n // 2 + 1), axis=a)
    return np.stack([res.real, res.imag], axis=-1).astype(input.dtype)


def stft(signal, frame_step, window=None, frame_length=None, *, onesided=1):
    step = int(np.asarray(frame_step).reshape(-1)[0])
    if frame_length is not None:
        length = int(np.asarray(frame_length).reshape(-1)[0])
    else:
        length = window.shape[0]
    sig = signal[..., 0].astype(np.float64) if signal.shape[-1] == 1 else \
        signal[..., 0].astype(np.float64) + 1j * signal[..., 1].astype(np.float64)
    n_frames = 1 + (sig.shape[1] - length) // step
    frames = np.stack([sig[:, f * step:f * step + length] for f in range(n_frames)], axis=1)
    if window is not None:
        frames = frames * window.astype(np.float64)
    res = np.fft.fft(frames, n=length, axis=-1)
    if onesided:
        res = res[..., :length // 2 + 1]
    return np.stack([res.real, res.imag], axis=-1).astype(signal.dtype)


def mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, *,
                      output_datatype=1):
    from .runtime import onnx_dtype

    bins = int(np.asarray(num_mel_bins).reshape(-1)[0])
    n_fft = int(np.asarray(dft_length).reshape(-1)[0])
    rate = float(np.asarray(sample_rate).reshape(-1)[0])
    lo = float(np.asarray(lower_edge_hertz).reshape(-1)[0])
    hi = float(np.asarray(upper_edge_hertz).reshape(-1)[0])
    n_spec = n_fft // 2 + 1
    to_mel = lambda f: 2595 * np.log10(1 + f / 700)  # noqa: E731
    to_hz = lambda m: 700 * (10 ** (m / 2595) - 1)  # noqa: E731
    # bins + 2 points spaced (high - low) / (bins + 2) apart from low, as ONNX defines them
    step = (to_mel(hi) - to_mel(lo)) / (bins + 2)
    hz_points = to_hz(to_mel(lo) + np.arange(bins + 2) * step)
    freq_bins = np.floor((n_fft + 1) * hz_points / rate).astype(np.int64)
    out = np.zeros((n_spec, bins), dtype=np.float64)
    for i in range(bins):
        low, center, high = freq_bins[i], freq_bins[i + 1], freq_bins[i + 2]
        if center == low:
            out[center, i] = 1
        else:
            for j in range(low, center + 1):
                out[j, i] = (j - low) / (center - low)
        if high > center:
            for j in range(center, high):
                out[j, i] = (high - j) / (high - center)
    return out.astype(onnx_dtype(output_datatype))


# -- resize ---------------------------------------------------------------------------------------

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


# -- sampling ops ---------------------------------------------------------------------------------

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


def sampling_abs_max(X):
    """The largest |x| over the finite elements of X (0 when there is none), in float64."""
    a = np.abs(np.asarray(X).astype(np.complex128 if np.asarray(X).dtype.kind == "c" else np.float64))
    a = a[np.isfinite(a)]
    return float(a.max()) if a.size else 0.0


def sampling_type_max(X):
    """The largest finite value of X's float type (of its real part for complex types)."""
    dtype = np.asarray(X).dtype
    return float(ml_dtypes.finfo(np.float64 if dtype == np.complex128 else np.float32 if dtype.kind == "c"
                                 else dtype).max)


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


def tfidf_vectorizer(X, *, max_gram_length, max_skip_count, min_gram_length, mode, ngram_counts, ngram_indexes,
                     pool_int64s=None, pool_strings=None, weights=None):
    pool = list(pool_strings) if pool_strings is not None else [int(v) for v in pool_int64s]
    counts_at = list(ngram_counts) + [len(pool)]
    ngrams = {}
    ordinal = 0
    for g in range(len(ngram_counts)):
        n = g + 1
        chunk = pool[counts_at[g]:counts_at[g + 1]]
        for s in range(0, len(chunk), n):
            ngrams[(n, tuple(chunk[s:s + n]))] = ngram_indexes[ordinal]
            ordinal += 1
    width = max(ngram_indexes) + 1 if len(ngram_indexes) else 0
    rows = X.reshape(1, -1) if X.ndim == 1 else X
    out = np.zeros((rows.shape[0], width), dtype=np.float32)
    for b, row in enumerate(rows):
        tokens = [t if isinstance(t, str) else int(t) for t in row]
        for n in range(min_gram_length, max_gram_length + 1):
            for skip in range(0, (max_skip_count if n > 1 else 0) + 1):
                step = skip + 1
                for s in range(len(tokens)):
                    last = s + (n - 1) * step
                    if last >= len(tokens):
                        break
                    key = (n, tuple(tokens[s:last + 1:step]))
                    if key in ngrams:
                        out[b, ngrams[key]] += 1
    w = np.ones(width, dtype=np.float32)
    if weights is not None and len(weights):
        w = np.zeros(width, dtype=np.float32)
        for j, col in enumerate(ngram_indexes):
            w[col] = weights[j]
    if mode == "IDF":
        out = (out > 0).astype(np.float32) * w
    elif mode == "TFIDF":
        out = out * w
    return out.reshape(width) if X.ndim == 1 else out


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


# -- normalization, losses, layout ----------------------------------------------------------------

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


def stash_dtype(stash_type) -> np.dtype:
    """The numpy type of a ``stash_type`` attribute (a TensorProto.DataType code: 1 float32,
    11 float64, 10 float16, 16 bfloat16)."""
    return onnx_dtype(int(stash_type))


def _mean_in(x, axes, dtype):
    """ReduceMean rounded to ``dtype``: accumulated in float32 (float64 for float64), so a narrow
    stash type rounds the mean, not every partial sum."""
    wide = np.float64 if dtype == np.float64 else np.float32
    return np.mean(x.astype(wide), axis=axes, keepdims=True).astype(dtype)


def _standardize(x, axes, epsilon, stash, divide):
    """Stage one of Layer/Group normalization, every step in the ``stash`` type as the specs say
    ("casts all input variables to [stash_type], performs the computation"): returns
    (normalized, mean, inv_std_dev) in that type. ``divide``: Normalized = Div(D, StdDev)
    (GroupNormalization) rather than Mul(D, InvStdDev) (LayerNormalization)."""
    xs = x.astype(stash)
    mean = _mean_in(xs, axes, stash)
    d = xs - mean
    std = np.sqrt(_mean_in(d * d, axes, stash) + stash.type(epsilon))
    inv = np.reciprocal(std)
    return (d / std if divide else d * inv), mean, inv


def layer_norm(X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    """LayerNormalization: stage one (standardization) in the stash type, Normalized cast back to
    X's type, then "NormalizedScaled = Mul(Normalized, Scale); Y = Add(NormalizedScaled, B)" in
    X's type: "The second stage doesn't depends on stash_type". Mean and InvStdDev are in the
    stash type."""
    a = axis + X.ndim if axis < 0 else axis
    stash = stash_dtype(stash_type)
    with np.errstate(invalid="ignore", divide="ignore"):  # zero-size reductions: NaN statistics
        normalized, mean, inv = _standardize(X, tuple(range(a, X.ndim)), epsilon, stash, divide=False)
        y = normalized.astype(X.dtype) * Scale
        if B is not None:
            y = y + B
    return as_dtype(y, X.dtype), mean, inv


def group_norm(X, scale, bias, *, num_groups, epsilon=1e-5, stash_type=None, per_group_affine=False):
    """GroupNormalization. With ``stash_type`` (opset 21): stage one in the stash type, the
    normalized values cast back to X's type, then Mul(scale) and Add(bias) in X's type ("The
    floating-point precision used in the first stage is determined by the `stash_type` attribute
    ... The second stage does not depend on `stash_type`"). Without (opset 18, which says nothing
    about precision): the whole formula in float32 for float16 / bfloat16 (float64 for float64),
    rounded once. ``per_group_affine``: opset 18's scale and bias hold one value per group."""
    N, C = X.shape[:2]
    g = int(num_groups)
    grouped = (N, g, (C // g) * int(np.prod(X.shape[2:], dtype=np.int64)))  # -1 is ambiguous when N = 0
    shape = (1, -1) + (1,) * (X.ndim - 2)
    if per_group_affine:
        scale, bias = np.repeat(scale, C // g), np.repeat(bias, C // g)
    with np.errstate(invalid="ignore", divide="ignore"):  # zero-size groups: NaN statistics
        if stash_type is None:
            wide = compute_dtype(X.dtype)
            normalized, _, _ = _standardize(X.reshape(grouped), (-1,), epsilon, wide, divide=True)
            y = normalized.reshape(X.shape) * scale.astype(wide).reshape(shape) + bias.astype(wide).reshape(shape)
            return as_dtype(y, X.dtype)
        normalized, _, _ = _standardize(X.reshape(grouped), (-1,), epsilon, stash_dtype(stash_type), divide=True)
        y = normalized.astype(X.dtype).reshape(X.shape) * scale.astype(X.dtype).reshape(shape)
        return as_dtype(y + bias.astype(X.dtype).reshape(shape), X.dtype)


def rms_norm(X, scale, *, axis=-1, epsilon=1e-5, stash_type=1):
    """RMSNormalization: "Normalized = Div(X, RMS)" in the stash type, cast back to X's type, then
    "Y = Mul(Normalized, Scale)" in X's type."""
    a = axis + X.ndim if axis < 0 else axis
    stash = stash_dtype(stash_type)
    xs = X.astype(stash)
    with np.errstate(invalid="ignore", divide="ignore"):
        rms = np.sqrt(_mean_in(xs * xs, tuple(range(a, X.ndim)), stash) + stash.type(epsilon))
        return as_dtype((xs / rms).astype(X.dtype) * scale.astype(X.dtype), X.dtype)


def rotary_embedding(X, cos_cache, sin_cache, position_ids=None, *, interleaved=0, num_heads=0,
                     rotary_embedding_dim=0):
    if X.ndim == 4:
        x = X.transpose(0, 2, 1, 3)  # (batch, seq, heads, head_size)
    else:
        b, s, hidden = X.shape
        x = X.reshape(b, s, int(num_heads), hidden // int(num_heads))
    d = x.shape[-1]
    rd = int(rotary_embedding_dim) or d
    if position_ids is not None:
        cos, sin = cos_cache[position_ids], sin_cache[position_ids]
    else:
        cos, sin = cos_cache, sin_cache
    # float16 / bfloat16 rotations in float32, rounded once
    cos, sin = widen(cos[:, :, None, :rd // 2]), widen(sin[:, :, None, :rd // 2])
    xr, xp = widen(x[..., :rd]), x[..., rd:]
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
    else:
        x1, x2 = xr[..., :rd // 2], xr[..., rd // 2:]
    r1, r2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    rot = np.stack([r1, r2], axis=-1).reshape(xr.shape) if interleaved else np.concatenate([r1, r2], axis=-1)
    y = np.concatenate([rot.astype(X.dtype), xp], axis=-1)
    return y.transpose(0, 2, 1, 3) if X.ndim == 4 else y.reshape(X.shape)


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


def nll_loss(input, target, weight=None, *, ignore_index=None, reduction="mean", out_dtype=None):
    """NegativeLogLikelihoodLoss. float16 / bfloat16 in float32 (the products, the sums and the
    mean's division), rounded once to ``out_dtype`` (default: input's type). reduction="mean"
    divides by the total weight of the samples not ignored: zero (every sample ignored, or zero
    weights) gives 0 / 0 = NaN, as the formula `sum(loss) / sum(weight[target])` does."""
    out_dtype = input.dtype if out_dtype is None else out_dtype
    x = widen(input)
    C = x.shape[1]
    t = target.astype(np.int64)
    ignored = (t == ignore_index) if ignore_index is not None else np.zeros(t.shape, dtype=bool)
    safe = np.where(ignored, 0, t)
    picked = np.take_along_axis(x, safe[:, None], axis=1)[:, 0]
    w = np.ones(C, dtype=x.dtype) if weight is None else widen(weight)
    wt = np.where(ignored, 0, w[safe]).astype(x.dtype)
    # "loss is zero for the case when target-value equals ignore_index": 0, not 0 * input (which is
    # NaN where the ignored sample's input is infinite or NaN)
    with np.errstate(invalid="ignore"):
        loss = np.where(ignored, x.dtype.type(0), -picked * wt)
    if reduction == "none":
        return as_dtype(loss, out_dtype)
    if reduction == "sum":
        return as_dtype(loss.sum(), out_dtype)
    with np.errstate(divide="ignore", invalid="ignore"):  # no (weighted) sample: 0 / 0 = NaN
        return as_dtype(np.divide(loss.sum(), wt.sum()), out_dtype)


def mean_defined(tensors) -> bool:
    """Mean: no running sum of the inputs (in any order) leaves the inputs' type, i.e. the sum of the
    finite inputs' magnitudes fits it. Otherwise the result depends on the summation order and width
    (float16 65504 + 65504 + 1000.5: inf summed in float16, 44000 summed wider)."""
    if not tensors or tensors[0].dtype.kind not in "fV":
        return True
    top = float(ml_dtypes.finfo(tensors[0].dtype).max)
    total = 0.0
    try:
        for t in tensors:
            w = t.astype(np.float64)
            total = total + np.where(np.isfinite(w), np.abs(w), 0.0)
    except ValueError:  # shapes that do not broadcast: another rule's business
        return True
    return bool(np.all(np.asarray(total) <= top))


def softmax_cross_entropy(scores, labels, weights=None, *, ignore_index=None, reduction="mean"):
    """SoftmaxCrossEntropyLoss: the loss from the unrounded log-probabilities (float32 for
    float16 / bfloat16 scores), rounded once; log_prob rounded to the scores' type."""
    log_prob = _log_softmax_wide(widen(scores), 1) if scores.size else widen(scores)
    loss = nll_loss(log_prob, labels, weights, ignore_index=ignore_index, reduction=reduction,
                    out_dtype=scores.dtype)
    return loss, as_dtype(log_prob, scores.dtype)


def dynamic_quantize_linear(x):
    """DynamicQuantizeLinear, every step in float32 as its function body computes it (Sub, Div,
    Clip, Round half to even, then QuantizeLinear's float32 division). An all-zero x gives
    y_scale = (0 - 0) / 255 = 0, the spec's formula; the zero point and y are then 0 / 0, which the
    spec leaves undefined: here 0."""
    f32 = np.float32
    xf = x.astype(f32)
    x_min = min(f32(0), xf.min()) if xf.size else f32(0)
    x_max = max(f32(0), xf.max()) if xf.size else f32(0)
    scale = f32(x_max - x_min) / f32(255)
    if scale == 0:
        return np.zeros(x.shape, np.uint8), np.array(scale, f32), np.array(0, np.uint8)
    zp = np.rint(np.clip(f32(0) - x_min / scale, f32(0), f32(255)))
    with np.errstate(over="ignore"):
        y = np.clip(np.rint(xf / scale) + zp, 0, 255)
    return y.astype(np.uint8), np.array(scale, f32), np.array(zp, np.uint8)


def window(size, periodic, output_datatype, coefficients):
    """Hann / Hamming / Blackman windows: w[k] = A0 - A1 cos(2 pi k / N) + A2 cos(4 pi k / N) (N =
    size, or size - 1 for a symmetric window), the window "as described in the paper" with its
    exact coefficients (``coefficients``: strings or Fractions, 0.42 is 21/50), rounded once to
    float32 -- the functions bodies compute in float ("Cast <to: int = 1> (size)") and end with
    one "Cast <to: int = @output_datatype>" -- then cast to output_datatype with Cast's rules.

    The coefficients are exact rationals and each term is summed exactly, so the window is exactly
    0 and 1 where the formula is (cos 0 = 1, cos pi = -1 in float64): the symmetric Blackman window
    of size 3 peaks at 21/50 + 1/2 + 2/25 = 1 (an integer Cast gives 1). Summed in float64,
    0.42 + 0.5 + 0.08 is 0.9999999999999999; in the body's float32 steps 0.99999994; both Cast to
    0. IR.md: a function body "serves as a default or fallback implementation"."""
    from fractions import Fraction

    from .runtime import cast_to, element_type

    n = int(np.asarray(size).reshape(-1)[0])
    denominator = n if periodic else n - 1
    a0, a1, a2 = (Fraction(c) for c in coefficients)
    with np.errstate(divide="ignore", invalid="ignore"):  # size 1, symmetric: 0 / 0, NaN as in the body
        angle = 2 * np.pi * np.arange(n, dtype=np.float64) / (denominator if denominator else np.nan)
    c1, c2 = np.cos(angle), np.cos(2 * angle)
    w = np.array([float(a0 - a1 * Fraction(x) + a2 * Fraction(y)) if np.isfinite(x) else np.nan
                  for x, y in zip(c1.tolist(), c2.tolist())], dtype=np.float64)
    target = onnx_dtype(output_datatype)
    return cast_to(w.astype(np.float32), element_type(np.zeros(0, dtype=target)))


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


def rng(seed):
    """NumPy generator for the random ops: seeded when the node has a seed, else fresh entropy."""
    return np.random.default_rng(None if seed is None else int(seed))


# -- attention ------------------------------------------------------------------------------------

def attention(Q, K, V, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None, *,
              is_causal=0, kv_num_heads=None, q_num_heads=None, qk_matmul_output_mode=0, scale=None,
              softcap=0.0, softmax_precision=None, left_window_size=-1, right_window_size=-1, _exact=False):
    """Scaled dot-product attention (MHA / GQA / MQA) with the opset 23-25 masking rules.

    ``_exact``: the text's reading instead of the function body's, for ``attention_defined``: every
    step in long double (no rounding to T1, no overflow of intermediates), keys a query does not
    attend (boolean mask, causal rule, nonpad_kv_seqlen, windows) left out of its softmax and of its
    weighted sum of V rather than given a -inf bias; the outputs are rounded to T1 once."""
    from .runtime import onnx_dtype

    three_d = Q.ndim == 3
    if three_d:
        B, Sq = Q.shape[:2]
        q = Q.reshape(B, Sq, int(q_num_heads), -1).transpose(0, 2, 1, 3)
        k = K.reshape(B, K.shape[1], int(kv_num_heads), -1).transpose(0, 2, 1, 3)
        v = V.reshape(B, V.shape[1], int(kv_num_heads), -1).transpose(0, 2, 1, 3)
    else:
        q, k, v = Q, K, V
    B, Hq, Sq, D = q.shape
    past = 0
    if past_key is not None:
        past = past_key.shape[2]
        k = np.concatenate([past_key, k], axis=2)
        v = np.concatenate([past_value, v], axis=2)
    present_k, present_v = k, v
    Hkv, St = k.shape[1], k.shape[2]
    if Hq != Hkv:
        k = np.repeat(k, Hq // Hkv, axis=1)
        v = np.repeat(v, Hq // Hkv, axis=1)
    # the function body computes sqrt(scale) in float32 (scale is a float attribute; the default
    # 1 / sqrt(head_size) divides float constants) and only then casts it to T1, also for double
    f32 = np.float32
    s = f32(1) / np.sqrt(f32(D)) if scale is None else f32(scale)
    sq = np.sqrt(s)
    dt = Q.dtype

    native = dt.kind == "f"  # float16/32/64: compute in the input type; bfloat16: float32, rounded per step
    work_t = np.longdouble if _exact else (dt if native else np.float32)

    def up(x):  # to the working type (bfloat16 through float32)
        x = np.asarray(x)
        return (x if x.dtype.kind == "f" else x.astype(np.float32)).astype(work_t)

    def r(x):  # each step rounds to the input precision, as the op's function body does
        return np.asarray(x, dtype=work_t) if _exact else np.asarray(x).astype(dt).astype(work_t)

    def out(x):  # an output in T1 (long double to float64 first: numpy cannot cast it to bfloat16)
        return np.asarray(x).astype(np.float64).astype(Q.dtype) if _exact else np.asarray(x).astype(Q.dtype)

    sqt = up(np.asarray(sq).astype(dt))  # Cast <to: T1> (Sqrt (scale))
    qk = r(np.matmul(r(up(q) * sqt), np.swapaxes(r(up(k) * sqt), -1, -2)))
    qk_raw = qk
    if softcap:
        qk = r(softcap * r(np.tanh(r(qk / softcap))))
    qk_capped = qk
    bias = np.zeros((B, 1, Sq, St), dtype=work_t)
    allowed = np.ones((B, 1, Sq, St), dtype=bool)
    if attn_mask is not None:
        m = attn_mask
        if m.shape[-1] < St:  # shorter masks are padded with -inf (False)
            width = [(0, 0)] * (m.ndim - 1) + [(0, St - m.shape[-1])]
            m = np.pad(m, width, constant_values=False if m.dtype == bool else -np.inf)
        if m.dtype == bool:
            allowed = allowed & m
        else:
            bias = bias + up(m)
    j = np.arange(St).reshape(1, 1, 1, St)
    i = np.arange(Sq).reshape(1, 1, Sq, 1)
    if nonpad_kv_seqlen is not None:
        lens = np.asarray(nonpad_kv_seqlen).astype(np.int64).reshape(B, 1, 1, 1)
        allowed = allowed & (j < lens)
        offset = lens - Sq if past_key is None else past
    else:
        offset = past
    if is_causal:
        allowed = allowed & (j <= i + offset)
    pos = i + offset
    if left_window_size is not None and left_window_size >= 0:
        allowed = allowed & (j >= pos - left_window_size)
    if right_window_size is not None and right_window_size >= 0:
        allowed = allowed & (j <= pos + right_window_size)
    # the body sums the biases ("AttnBiasCausalOrNot = Add (AttnBias, MaskTri)"): a float mask's NaN
    # or +inf at a key the causal rule excludes stays NaN (+inf + -inf), it is not replaced by -inf
    bias = np.where(allowed, bias, -np.inf) if _exact else bias + np.where(allowed, 0, -np.inf).astype(work_t)
    qk = np.where(allowed, qk + bias, -np.inf) if _exact else r(qk + bias)
    qk_biased = qk
    work = qk.astype(onnx_dtype(softmax_precision)) if softmax_precision and not _exact else qk.astype(work_t)
    wf = work.astype(np.float32) if work.dtype.kind == "V" else work
    mx = np.max(wf, axis=-1, keepdims=True)
    # a fully-masked row (every key's combined bias is -inf) gives zeros, not NaN (the 1.23 errata);
    # a row whose scores are NaN or infinite is not masked and gives NaN, as softmax does
    dead = np.broadcast_to(np.all(np.isneginf(bias), axis=-1, keepdims=True), mx.shape)
    e = np.exp(wf - np.where(dead, 0, mx))
    total = np.sum(e, axis=-1, keepdims=True)
    p = np.where(dead, 0, e / np.where(total == 0, 1, total))
    if _exact:  # a key the query does not attend takes no part in its sum: 0 * inf is not computed
        y = out(np.where(allowed[..., None], p[..., None] * up(v)[:, :, None], 0).sum(axis=-2))
    else:
        if softmax_precision:
            p = p.astype(work.dtype)
        p = p.astype(Q.dtype)
        y = np.matmul(p.astype(work_t), r(v.astype(work_t))).astype(Q.dtype)
    if three_d:
        y = y.transpose(0, 2, 1, 3).reshape(B, Sq, -1)
    qk_out = out({0: qk_raw, 1: qk_capped, 2: qk_biased, 3: p}[int(qk_matmul_output_mode)])
    return y, present_k, present_v, qk_out


def attention_defined(Q, K, V, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None,
                      **attrs) -> bool:
    """Whether Attention's result is defined: the function body (each step rounded to T1) and the
    text's exact reading (``attention(..., _exact=True)``) agree, element by element of Y and
    qk_matmul_output, on NaN / +inf / -inf / finite.

    They disagree where a half-precision intermediate of the body (Q * sqrt(scale), the QK matmul,
    the mask Add) overflows or underflows and a runtime computing in float32 does not; where a
    finite product overflows next to an infinite operand in the QK dot product, so that summation
    order or a fused multiply-add decides between +-inf and NaN; and where NaN or inf sits in K or V
    at a key the query does not attend (the body adds -inf to it and multiplies it by a 0 weight,
    while the text leaves such keys out). A call the kernel cannot take at all counts as defined:
    the kernel reports it."""
    try:
        with np.errstate(all="ignore"):
            body = attention(Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen, **attrs)
            exact = attention(Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen, **attrs, _exact=True)
    except Exception:  # noqa: BLE001 -- inputs the kernel rejects are not this rule's business
        return True
    for b, e in ((body[0], exact[0]), (body[3], exact[3])):
        b = np.asarray(b).astype(np.float64)
        e = np.asarray(e).astype(np.float64)
        if b.shape != e.shape:
            return True
        for cls in (np.isnan, np.isposinf, np.isneginf):
            if not np.array_equal(cls(b), cls(e)):
                return False
    return True


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


def linear_attention_defined(query, key, value, past_state=None, decay=None, beta=None, *, kv_num_heads=1,
                             q_num_heads=1, scale=0.0, update_rule="gated_delta") -> bool:
    """LinearAttention's rule: finite inputs, and the recurrence (run in float64) keeps every
    intermediate (exp(decay), the state, S^T k, the output) and its terms well inside float32's range
    (below 2^100 * ... : 1e36 after the terms' count), so neither an implementation in float32 nor one
    in float64 meets an overflow, inf - inf or 0 * inf the text leaves unordered."""
    arrays = [a for a in (query, key, value, past_state, decay, beta) if a is not None]
    if not all(np.all(np.isfinite(np.asarray(a, dtype=np.float64))) for a in arrays):
        return False
    update_rule = update_rule or "gated_delta"
    try:
        hq, hkv = int(q_num_heads), int(kv_num_heads)
        B, T, _ = query.shape
        dk = query.shape[-1] // hq
        dv = value.shape[-1] // hkv
        limit = 1e36 / max(1, dk + dv)
        mag = lambda a: np.abs(np.asarray(a, dtype=np.float64))  # noqa: E731
        q = mag(query).reshape(B, T, hkv, hq // hkv, dk)
        k = mag(key).reshape(B, T, hkv, dk)
        v = mag(value).reshape(B, T, hkv, dv)
        S = np.zeros((B, hkv, dk, dv)) if past_state is None else mag(past_state).reshape(B, hkv, dk, dv)
        gated = update_rule in ("gated", "gated_delta") and decay is not None
        delta = update_rule in ("delta", "gated_delta") and beta is not None
        if gated:
            g = np.asarray(decay, dtype=np.float64)
            if float(np.max(g, initial=-np.inf)) > 80.0:  # exp(80) = 5.5e34
                return False
            g = g.reshape(B, T, hkv, dk) if g.shape[-1] == hkv * dk else g.reshape(B, T, hkv, 1)
        if delta:
            bt = np.broadcast_to(mag(beta).reshape(B, T, -1), (B, T, hkv))
        top = float(np.max(S, initial=0.0))
        with np.errstate(all="ignore"):
            for t in range(T):  # the recurrence on magnitudes: a bound on every term of the real one
                kt, vt = k[:, t], v[:, t]
                decayed = S * np.exp(g[:, t])[..., None] if gated else S
                if delta:
                    pred = np.einsum("bhkv,bhk->bhv", decayed, kt)
                    S = decayed + bt[:, t][..., None, None] * np.einsum("bhk,bhv->bhkv", kt, vt + pred)
                    top = max(top, float(np.max(pred, initial=0.0)))
                else:
                    S = decayed + np.einsum("bhk,bhv->bhkv", kt, vt)
                out = np.einsum("bhgk,bhkv->bhgv", q[:, t], S) * max(1.0, abs(float(scale or 0.0)))
                top = max(top, float(np.max(S, initial=0.0)), float(np.max(out, initial=0.0)))
    except (ValueError, IndexError, TypeError):  # shapes another rule refuses
        return True
    return bool(np.isfinite(top) and top <= limit)


def linear_attention(query, key, value, past_state=None, decay=None, beta=None, *, chunk_size=64,
                     kv_num_heads=None, q_num_heads=None, scale=0.0, update_rule="gated_delta"):
    """The recurrence of LinearAttention, run token by token (the definition, not a chunked kernel)."""
    B, T, _ = query.shape
    hq, hkv = int(q_num_heads), int(kv_num_heads)
    dk = query.shape[-1] // hq
    dv = value.shape[-1] // hkv
    q = query.reshape(B, T, hq, dk).astype(np.float64)
    k = key.reshape(B, T, hkv, dk).astype(np.float64)
    v = value.reshape(B, T, hkv, dv).astype(np.float64)
    s = 1 / np.sqrt(dk) if not scale else scale
    S = np.zeros((B, hkv, dk, dv)) if past_state is None else past_state.astype(np.float64).copy()
    if decay is not None:
        g = decay.astype(np.float64)
        g = g.reshape(B, T, hkv, dk) if g.shape[-1] == hkv * dk else g.reshape(B, T, hkv, 1)
    if beta is not None:
        bt = beta.astype(np.float64)
        bt = np.broadcast_to(bt.reshape(B, T, -1), (B, T, hkv)) if bt.shape[-1] in (1, hkv) else bt
    group = hq // hkv
    out = np.zeros((B, T, hq, dv))
    for t in range(T):
        kt, vt = k[:, t], v[:, t]  # (B, hkv, dk), (B, hkv, dv)
        if update_rule in ("gated", "gated_delta"):
            gate = np.exp(g[:, t])[..., None]  # (B, hkv, dk or 1, 1)
            decayed = S * gate
        else:
            decayed = S
        if update_rule in ("delta", "gated_delta"):
            pred = np.einsum("bhkv,bhk->bhv", decayed, kt)
            S = decayed + bt[:, t][..., None, None] * np.einsum("bhk,bhv->bhkv", kt, vt - pred)
        else:
            S = decayed + np.einsum("bhk,bhv->bhkv", kt, vt)
        qt = q[:, t].reshape(B, hkv, group, dk)
        out[:, t] = (s * np.einsum("bhgk,bhkv->bhgv", qt, S)).reshape(B, hq, dv)
    state_t = query.dtype if past_state is None else past_state.dtype  # present_state is of type S
    return out.reshape(B, T, hq * dv).astype(query.dtype), S.astype(state_t)


def prod_in_range(data):
    """Float data whose product no multiplication order can overflow or underflow: over the whole
    tensor (which bounds every reduced slice), the finite magnitudes above 1 multiply to at most
    T's max and the nonzero ones below 1 to at least T's smallest normal, so every partial
    product of every slice lies between the two."""
    if data.dtype.kind in "iub":
        return True
    a = np.abs(np.asarray(data).astype(np.float64)).ravel()
    a = a[np.isfinite(a)]
    info = ml_dtypes.finfo(data.dtype)
    big = float(np.sum(np.log2(a[a > 1])))
    small = float(np.sum(np.log2(a[(a > 0) & (a < 1)])))
    return big <= math.log2(float(info.max)) and small >= math.log2(float(info.smallest_normal))


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

