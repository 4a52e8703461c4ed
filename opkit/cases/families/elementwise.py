"""Elementwise family: binary ops with ONNX's legacy (opset < 7) ``broadcast``/``axis`` attributes,
integer Div and Mod (no zero divisor), Mod's ``fmod``, Concat, and the elementwise ops whose shapes
do not broadcast both ways: Max/Min/Mean/Sum before opset 8 (every input of one shape), PRelu from
opset 7 (slope unidirectionally broadcast to X), SwiGLU (A and B of one shape), Clip from
opset 11 (scalar min and max) and Erf-9 (integer inputs are 0).

Legacy broadcasting (Add/Sub/Mul/Div/Pow/And/Or/Xor/Equal/Greater/Less before opset 7):
``broadcast`` = 0 (the default) needs identical shapes; ``broadcast`` = 1 lets B be a 1-element
tensor (a scalar, or all ones of rank <= A's) or a contiguous sub-shape of A's shape, starting at
``axis`` when it is given and a suffix otherwise ("1-dim expansion doesn't work yet": B's dims
equal A's). From opset 7 the two inputs broadcast NumPy style (ranks may differ, dims equal or 1).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from ...kernels.lib import int_pow_defined
from ..case import NotGeneratable
from ..context import ABSENT, Context, Draft, broadcast_pair, values

_DIM = st.one_of(st.integers(1, 3), st.just(0))


def _shape(draw, lo: int = 0, hi: int = 4) -> list[int]:
    return [draw(_DIM) for _ in range(draw(st.integers(lo, hi)))]


def _numpy_pair(draw) -> tuple[list[int], list[int]]:
    """Two shapes broadcasting NumPy style to a common shape."""
    return broadcast_pair(draw, _shape(draw))


def _legacy_pair(draw, ctx: Context, attrs: dict) -> tuple[list[int], list[int]]:
    """Shapes for ONNX's opset < 7 broadcasting; sets ``broadcast`` and ``axis`` in ``attrs``."""
    a = _shape(draw)
    bc = draw(st.sampled_from([ABSENT, 0, 1, 1]))
    attrs["broadcast"] = bc
    has_axis = ctx.has_attribute("axis")
    if has_axis:
        attrs["axis"] = ABSENT
    if bc != 1:
        return a, list(a)
    mode = draw(st.integers(0, 3))
    if mode == 0:  # a one-element B: a scalar or all ones of rank <= A's
        return a, [1] * draw(st.integers(0, len(a)))
    if has_axis and mode == 1 and a:  # a contiguous sub-shape starting at axis
        axis = draw(st.integers(0, len(a) - 1))
        length = draw(st.integers(1, len(a) - axis))
        attrs["axis"] = axis
        return a, a[axis:axis + length]
    return a, a[len(a) - draw(st.integers(0, len(a))):]  # a suffix


# binary ops whose second input broadcasts to the first only (PRelu's slope to X), and binary ops
# that do not broadcast at all (SwiGLU: "A and B must have identical shapes")
_UNIDIRECTIONAL = ("PRelu",)
_SAME_SHAPE = ("SwiGLU",)


def _unidirectional_pair(draw) -> tuple[list[int], list[int]]:
    """A shape and a second one that broadcasts to it: a suffix of it (possibly empty) with some
    dims replaced by 1."""
    a = _shape(draw)
    b = a[len(a) - draw(st.integers(0, len(a))):]
    return a, [1 if draw(st.integers(0, 3)) == 0 else d for d in b]


def _nonzero(arr: np.ndarray) -> np.ndarray:
    """Integer divisors without zeros (zeros become 1)."""
    if arr.dtype.kind in "iu":
        arr = np.where(arr == 0, np.ones_like(arr), arr).astype(arr.dtype)
    return arr


def _pow_defined(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pow with an integer base: a draw whose powers are not integers of X's type (rule RESULT: a
    negative or fractional exponent, an overflow) gets exponents |y| mod 3 and a base whose square
    fits X's type; floats and defined draws are kept as drawn."""
    if x.dtype.kind not in "iu" or int_pow_defined(x, y):
        return x, y
    with np.errstate(all="ignore"):
        if y.dtype.kind in "iu":
            y = (np.abs(y.astype(np.int64)) % 3).astype(y.dtype)
        else:
            y = (np.floor(np.abs(np.nan_to_num(y.astype(np.float64), nan=0.0, posinf=2.0, neginf=2.0))) % 3
                 ).astype(y.dtype)
    bound = math.isqrt(int(np.iinfo(x.dtype).max))
    return np.clip(x, -bound, bound).astype(x.dtype), y


def _binary(draw, ctx: Context) -> Draft:
    a_name, b_name = (p.name for p in ctx.version.inputs[:2])
    attrs: dict = {}
    if ctx.has_attribute("broadcast"):
        if ctx.has_attribute("consumed_inputs"):
            attrs["consumed_inputs"] = ABSENT
        a_shape, b_shape = _legacy_pair(draw, ctx, attrs)
    elif ctx.op in _UNIDIRECTIONAL:
        a_shape, b_shape = _unidirectional_pair(draw)
    elif ctx.op in _SAME_SHAPE:
        a_shape = _shape(draw)
        b_shape = list(a_shape)
    else:
        a_shape, b_shape = _numpy_pair(draw)
    a = values(draw, ctx.elem(a_name), a_shape)
    b = values(draw, ctx.elem(b_name), b_shape)
    if ctx.op in ("Div", "Mod"):
        b = _nonzero(b)
    if ctx.op == "Pow":
        a, b = _pow_defined(a, b)
    if ctx.op == "Mod":
        floating = a.dtype.kind not in "iu"
        if floating and ctx.since < 28:
            attrs["fmod"] = 1  # before opset 28: "if the input type is floating point, fmod must be 1"
        else:
            attrs["fmod"] = draw(st.sampled_from([ABSENT, 0, 1]))
    return Draft(attrs, {a_name: a, b_name: b})


def _concat(draw, ctx: Context) -> Draft:
    """Concat: inputs of one rank (>= 1) agreeing on every dim but ``axis``.

    The variadic ``inputs`` gets 1-3 tensors (a list in the Draft)."""
    attr = ctx.attribute("axis")
    axis_optional = not attr.required
    rank = draw(st.integers(1, 4))
    base = [draw(_DIM) for _ in range(rank)]
    if axis_optional and rank >= 2 and draw(st.booleans()):
        axis, a = ABSENT, 1  # opset 1: axis defaults to 1
    else:
        negative_ok = ctx.since >= 11
        axis = draw(st.integers(-rank if negative_ok else 0, rank - 1))
        a = axis + rank if axis < 0 else axis
    count = draw(st.integers(1, 3))
    shapes = []
    for _ in range(count):
        s = list(base)
        s[a] = draw(_DIM)
        shapes.append(s)
    elem = ctx.elem("inputs")
    arrays = [values(draw, elem, s) for s in shapes]
    return Draft({"axis": axis}, {"inputs": arrays})


def _same_shape_variadic(draw, ctx: Context) -> Draft:
    """Max/Min/Mean/Sum before opset 8: "All inputs and outputs must have the same shape": 1-3
    inputs of one drawn shape (a list in the Draft)."""
    data = ctx.version.inputs[0]
    shape = _shape(draw)
    arrays = [values(draw, ctx.elem(data.name), shape) for _ in range(draw(st.integers(1, 3)))]
    attrs = {"consumed_inputs": ABSENT} if ctx.has_attribute("consumed_inputs") else {}
    return Draft(attrs, {data.name: arrays})


def _clip(draw, ctx: Context) -> Draft:
    """Clip from opset 11: min and max are scalars (tensors of empty shape), each present or not,
    in either order (min > max is defined: every element becomes max)."""
    elem = ctx.elem("input")
    inputs = {"input": values(draw, elem, _shape(draw))}
    for bound in ("min", "max"):
        inputs[bound] = values(draw, elem, ()) if draw(st.booleans()) else None
    return Draft({}, inputs)


def _erf(draw, ctx: Context) -> Draft:
    """Erf-9 takes integer types too, but erf of a nonzero integer is no integer (rule INTEGER):
    integer inputs are drawn as zeros, floats as drawn."""
    x = values(draw, ctx.elem("input"), _shape(draw))
    if x.dtype.kind in "iu":
        x = np.zeros_like(x)
    return Draft({}, {"input": x})


def _last_axis_bias(draw, ctx: Context) -> Draft:
    """com.microsoft FastGelu, BiasGelu and BiasAdd: a data tensor and a 1-D bias of its last extent
    (onnxruntime's tests and kernels: the bias is added along the last axis only); BiasAdd also takes
    a skip tensor of the data's shape and a rank-3 data tensor (N, S, C)."""
    data, bias = (p.name for p in ctx.version.inputs[:2])
    optional = ctx.version.inputs[1].option == "optional"
    with_bias = not optional or draw(st.booleans())
    if ctx.op == "BiasAdd":
        shape = [draw(_DIM) for _ in range(3)]
    else:
        shape = _shape(draw, 1 if with_bias else 0)
    elem = ctx.elem(data)
    inputs = {data: values(draw, elem, shape),
              bias: values(draw, elem, shape[-1:]) if with_bias else None}
    if ctx.has_input("skip"):
        inputs["skip"] = values(draw, elem, shape)
    return Draft({}, inputs)


_CONTRIB_BIAS = ("FastGelu", "BiasGelu", "BiasAdd")


def _bias_softmax(draw, ctx: Context) -> Draft:
    """com.microsoft BiasSoftmax: data of rank 1-4, the softmax axis, and a bias equal to data on the
    softmax dims and broadcast (dims of 1) over a run of the dims before the axis: the inner run
    [k, axis) with is_inner_broadcast = 1, the outer run [0, k) otherwise (then possibly of lower rank)."""
    shape = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(1, 4)))]
    rank = len(shape)
    axis = draw(st.integers(-rank, rank - 1))
    a = axis % rank
    inner = draw(st.integers(0, 1))
    k = draw(st.integers(0, a))
    bias = [(d if (i < k) == bool(inner) else 1) if i < a else d for i, d in enumerate(shape)]
    if not inner and k and draw(st.booleans()):
        bias = bias[draw(st.integers(1, k)):]  # the leading ones left out: NumPy broadcasting
    elem = ctx.elem("data")
    attrs = {"is_inner_broadcast": inner, "axis": ABSENT if axis == 1 and draw(st.booleans()) else axis}
    return Draft(attrs, {"data": values(draw, elem, shape), "bias": values(draw, elem, bias)})


def draw(draw, ctx: Context) -> Draft:
    if ctx.spec.domain == "com.microsoft" and ctx.op in _CONTRIB_BIAS:
        return _last_axis_bias(draw, ctx)
    if ctx.spec.domain == "com.microsoft" and ctx.op == "BiasSoftmax":
        return _bias_softmax(draw, ctx)
    if ctx.op == "Erf":
        return _erf(draw, ctx)
    if ctx.op == "Concat":
        return _concat(draw, ctx)
    if ctx.op == "Clip":
        return _clip(draw, ctx)
    if len(ctx.version.inputs) == 1 and ctx.version.inputs[0].option == "variadic":
        return _same_shape_variadic(draw, ctx)
    if len(ctx.version.inputs) == 2:
        return _binary(draw, ctx)
    raise NotGeneratable(f"the elementwise family has no builder for {ctx.op}")
