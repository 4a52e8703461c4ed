"""Softmax, LogSoftmax, Hardmax (opset < 13 in 2-D) and the losses built on them
(NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss)."""

from __future__ import annotations

import numpy as np

from ..runtime import as_dtype, widen


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


def softmax_cross_entropy(scores, labels, weights=None, *, ignore_index=None, reduction="mean"):
    """SoftmaxCrossEntropyLoss: the loss from the unrounded log-probabilities (float32 for
    float16 / bfloat16 scores), rounded once; log_prob rounded to the scores' type."""
    log_prob = _log_softmax_wide(widen(scores), 1) if scores.size else widen(scores)
    loss = nll_loss(log_prob, labels, weights, ignore_index=ignore_index, reduction=reduction,
                    out_dtype=scores.dtype)
    return loss, as_dtype(log_prob, scores.dtype)
