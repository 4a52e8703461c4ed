"""Reductions and scans: float64 accumulation, exact integer reductions, mean, log-sum-exp,
cumulative sums and products."""

from __future__ import annotations

import math

import numpy as np

from ..runtime import as_dtype, reduce_core, widen
from ._shared import _is_float, _truncated_sum, _wrap_to


REDUCERS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


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
