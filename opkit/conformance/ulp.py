"""Units in the last place of ONNX's floating-point element types.

``ulp(x, elem)`` is the gap between the two representable values of ``elem`` around ``|x|``:
``2 ** (max(floor(log2 |x|), minexp) - nmant)``, so below the smallest normal it is the subnormal
spacing (the smallest subnormal), and ``ulp(0)`` is that spacing too. The format parameters come from
``ml_dtypes.finfo`` (which also answers for NumPy's own float16/32/64), so float8, float6 and
float4e2m1 get their real spacing (float4e2m1: 0.5 up to 2, then 1, then 2).

Values are computed in float64 whatever the element type: every format here has fewer exponent
and mantissa bits than float64, so each ulp is exactly representable, float64's own included.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..core.numpy_types import NUMPY_DTYPES
from ..core.dtypes import COMPLEX, FLOATS, elem_from_dtype

# complex types: each component is the float of the same width
_COMPONENT = {"complex64": "float", "complex128": "double"}


@dataclass(frozen=True)
class FloatFormat:
    """What the ULP of a type depends on: mantissa bits (without the implicit one) and the exponent
    of the smallest normal."""

    elem: str
    nmant: int
    minexp: int

    @property
    def eps(self) -> float:
        """ulp(1): the spacing of [1, 2)."""
        return float(np.ldexp(1.0, -self.nmant))

    @property
    def tiny(self) -> float:
        """The smallest normal number: below it the format has no relative precision to speak of."""
        return float(np.ldexp(1.0, self.minexp))


@functools.cache
def float_format(elem: str) -> FloatFormat | None:
    """The format of a float or complex element type; None for other types (or a missing ml_dtypes)."""
    base = _COMPONENT.get(elem, elem)
    dtype = NUMPY_DTYPES.get(base)
    if dtype is None or dtype.kind not in "fV":
        return None
    try:
        import ml_dtypes

        info = ml_dtypes.finfo(dtype)
    except (ImportError, ValueError, TypeError):
        if dtype.kind != "f":
            return None
        info = np.finfo(dtype)
    return FloatFormat(elem, int(info.nmant), int(info.minexp))


def ulp(x, elem: str) -> np.ndarray:
    """The ulp of ``elem`` at each ``|x|`` (float64; NaN where x is NaN, inf where x is inf).

    Magnitudes beyond the type's largest finite value keep doubling with the exponent, as the
    format would if it had more exponent bits: a summand magnitude above the type's range still
    gets an allowance that grows with it.
    """
    fmt = float_format(elem)
    if fmt is None:
        raise KeyError(f"no floating-point format for element type {elem!r}")
    mag = np.abs(np.asarray(x, dtype=np.complex128 if np.iscomplexobj(x) else np.float64)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(mag)
        _, exp = np.frexp(np.where(finite, mag, 1.0))  # mag = m * 2**exp with m in [0.5, 1): floor(log2) = exp - 1
        binade = np.maximum(np.where(mag > 0, exp - 1, fmt.minexp), fmt.minexp)  # frexp(0) says exp 0
        out = np.ldexp(1.0, binade - fmt.nmant)
    return np.where(finite, out, mag)  # inf stays inf, NaN stays NaN


def ulp_distance(expected, actual, elem: str) -> np.ndarray:
    """``|actual - expected|`` in ULPs of the larger magnitude (float64; what messages quote)."""
    e = np.asarray(expected, dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.abs(a - e) / ulp(np.maximum(np.abs(e), np.abs(a)), elem)


def float_elem(array) -> str | None:
    """The element type of an array that holds floats or complex values (with a known format), else None."""
    try:
        elem = elem_from_dtype(np.asarray(array).dtype)
    except KeyError:
        return None
    return elem if (elem in FLOATS or elem in COMPLEX) and float_format(elem) is not None else None


def wide(x) -> np.ndarray:
    """``x`` in float64 (complex128 for complex): room for any of the narrower formats' values."""
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
