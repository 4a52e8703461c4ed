"""Magnitude bounds for the rules that check no intermediate of a computation leaves its type's
range (RANGE rules of Einsum, ReduceProd, Mean, and the sampling and convolution ops)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np


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
