"""Normalization ops: BatchNormalization (and its RANGE rule), LayerNormalization,
GroupNormalization, RMSNormalization and their stash types."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ..runtime import as_dtype, compute_dtype, onnx_dtype, widen
from ._shared import _finite_abs


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
