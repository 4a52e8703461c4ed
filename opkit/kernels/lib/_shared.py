"""Private helpers several kernel families share: exact integer conversions, finite magnitudes,
attribute lists with defaults."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np


def _is_float(dtype) -> bool:
    """float16, float, double (numpy kind 'f') and bfloat16 (an ml_dtypes type of kind 'V')."""
    return dtype.kind == "f" or dtype == ml_dtypes.bfloat16


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


def _ints(value, n, default):
    if value is None or len(value) == 0:
        return [default] * n
    return [int(v) for v in value]


def _finite_abs(a):
    """|a| in float64, with inf and NaN as 0: the finite terms of a sum of products."""
    a = np.asarray(a).astype(np.float64)
    return np.where(np.isfinite(a), np.abs(a), 0.0)
