"""Family ``cast``: Cast and CastLike. A string input holds text that parses as the target type
(ONNX defines string -> number only for numeric text: "3.14", "1000", "1e-5", "-INF", "NaN"); a
floating-point input cast to an integer type holds integral values in the target's range (ONNX
leaves anything else undefined: "fixed point: undefined if OOR", and no rounding is named; the
specs' rule D1/D2, ``cast_defined``); every other input is drawn generically."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ...core.numpy_types import NUMPY_DTYPES
from ...core.onnx_types import INT_RANGES
from ..context import Context, Draft, dims

_FLOATING = {"float16", "float", "double", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
             "float8e5m2fnuz", "float4e2m1", "float8e8m0", "float6e2m3", "float6e3m2"}

_FLOAT_TEXT = ("0", "-0.0", "1", "-2.5", "3.14", "1e-5", "1000", "65504", "1e30", "INF", "-INF", "NaN")


def _texts(draw, target: str, n: int) -> list[str]:
    if target in INT_RANGES:
        lo, hi = INT_RANGES[target]
        pool = [str(v) for v in sorted({max(lo, -3), 0, 1, min(hi, 3), lo, hi})]
    elif target == "bool":
        pool = ["0", "1"]
    else:
        pool = list(_FLOAT_TEXT) + _edge_texts(target)
    return [draw(st.sampled_from(pool)) for _ in range(n)]


def _edge_texts(target: str) -> list[str]:
    """The target type's largest value, smallest normal and smallest subnormal as text, either sign
    (a parser that reports underflow as an error, as C's strtod does, refuses the subnormals)."""
    import ml_dtypes

    try:
        info = np.finfo(NUMPY_DTYPES[target])
    except (ValueError, TypeError, KeyError):
        try:
            info = ml_dtypes.finfo(NUMPY_DTYPES[target])
        except (ValueError, TypeError, KeyError):
            return []
    values = [float(info.max), float(info.tiny), float(getattr(info, "smallest_subnormal", info.tiny))]
    return [repr(v) for v in values] + [repr(-v) for v in values]


def _integral_pool(source: str, target: str) -> list[float]:
    """Integral values in ``target``'s range that ``source`` holds exactly: its edges, small
    numbers and powers of two (float8e8m0 has no zero, float4e2m1 stops at 6 ...)."""
    lo, hi = INT_RANGES[target]
    dtype = NUMPY_DTYPES[source]
    wanted = {float(lo), float(hi), 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 5.0, -7.0, 100.0, -100.0}
    wanted |= {s * 2.0 ** k for k in range(64) for s in (1.0, -1.0)}
    if hi <= 15:  # ONNX's node tests wrap integral values out of a 4-bit or 2-bit range (-9.0 -> int4 7)
        lo, hi = lo - 16, hi + 16
        wanted |= {lo + 0.0, hi + 0.0, -9.0, 16.0, 17.0}
    pool = []
    for v in sorted(wanted):
        if not lo <= v <= hi:
            continue
        held = np.array([v], dtype=np.float64).astype(dtype).astype(np.float64)[0]
        if held == v:
            pool.append(v)
    return pool


def draw(draw, ctx: Context) -> Draft:
    data = ctx.version.inputs[0]
    source = ctx.elem(data.name)
    target = ctx.output_elem(ctx.version.outputs[0].name)
    if source == "string":
        shape = dims(draw, draw(st.integers(0, 3)), low=0, high=3)
        arr = np.empty(int(np.prod(shape)) if shape else 1, dtype=object)
        arr[:] = _texts(draw, target, arr.size)
        return Draft({}, {data.name: arr.reshape(shape)})
    if source in _FLOATING and target in INT_RANGES:
        pool = _integral_pool(source, target)
        shape = dims(draw, draw(st.integers(0, 3)), low=0, high=3)
        values = [draw(st.sampled_from(pool)) for _ in range(int(np.prod(shape)) if shape else 1)]
        arr = np.array(values, dtype=np.float64).astype(NUMPY_DTYPES[source]).reshape(shape)
        return Draft({}, {data.name: arr})
    return Draft()
