"""Family hook: quantization ops (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
MatMulInteger, QLinearMatMul).

What makes their cases valid is the agreement between a data tensor and its quantization
parameters:

- QuantizeLinear / DequantizeLinear pick a granularity the version has -- per-tensor (scale a
  scalar or a 1-element vector), per-axis (``axis`` within the rank of a rank >= 1 input, scale
  1-D of length ``dim(axis)``) or blocked (``block_size`` B, scale of the input's shape with
  ``dim(axis)`` replaced by ``ceil(dim/B)``) -- and build the zero point of the scale's shape (per
  tensor, a scalar and a 1-element vector mix, as in ONNX's own node tests). A
  quantize without ``output_dtype`` and without a zero point outputs uint8, so another bound output
  type needs the zero point. Zero points of float types (float8/float6/float4) and of int32
  DequantizeLinear are 0 (the spec says they are not used / supposed to be 0). Scales are finite
  and positive (a zero scale divides by zero).
- MatMulInteger / QLinearMatMul draw matmul-compatible shapes (ranks 1..4, broadcast batch dims)
  and zero points / scales that are per-tensor (scalar or 1 element), per-row for ``a``
  ([M] for a 2-D ``a``, [..., M, 1] for N-D) or per-column for ``b`` ([N], [..., 1, N]).
- DynamicQuantizeLinear takes any non-empty float tensor without NaN (min/max of an empty tensor,
  which its scale formula needs, is undefined, and so is whether NaN is a maximum).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from ...core.onnx_types import ELEMENT_TYPE_CODES, INT_RANGES
from ..draws import cast
from ..context import ABSENT, Context, Draft, axis_in, by_op, nan_to_zero, values

_SEED = st.integers(0, 2**32 - 1)
_BOOL = st.booleans()
# dims shrink towards 1; zero-size dims occur, less often
_DIM = st.one_of(st.integers(1, 3), st.integers(0, 4))
_POS_DIM = st.integers(1, 4)
_FLOAT_Q = ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float4e2m1", "float6e2m3",
            "float6e3m2")


def _prod(shape) -> int:
    return int(math.prod(int(d) for d in shape))


def positive(draw, elem: str, shape) -> np.ndarray:
    """Finite, strictly positive values (scales): powers of two or random magnitudes; integers
    1..4 for an integer type, powers of two for float8e8m0."""
    shape = tuple(int(d) for d in shape)
    kind = draw(st.sampled_from(("pow2", "random")))
    rng = np.random.default_rng(draw(_SEED))
    n = _prod(shape)
    if elem in INT_RANGES:
        vals = rng.integers(1, 5, n).astype(np.float64)
    elif kind == "pow2" or elem == "float8e8m0":
        vals = 2.0 ** rng.integers(-3, 3, n).astype(np.float64)
    else:
        vals = np.abs(rng.standard_normal(n)) * 10.0 ** rng.uniform(-2, 1, n) + 1e-3
    return cast(vals, elem).reshape(shape)


def zero_point(draw, elem: str, shape, zero: bool = False) -> np.ndarray:
    """A zero point of element ``elem``: any value of an integer type, 0 for float types (their
    zero point is not used by quantization) or when ``zero``."""
    shape = tuple(int(d) for d in shape)
    if zero or elem not in INT_RANGES:
        return cast(np.zeros(_prod(shape)), elem).reshape(shape)
    return values(draw, elem, shape)


def _shape(draw, rank: int) -> list[int]:
    return [draw(_DIM) for _ in range(rank)]


# ---------------------------------------------------------------------------------------------
# QuantizeLinear / DequantizeLinear


def _linear(draw, ctx: Context) -> Draft:
    x_name, s_name, z_name = (p.name for p in ctx.version.inputs)
    quantize = ctx.op == "QuantizeLinear"
    s_elem = ctx.elem(s_name)
    q_elem = ctx.elem(z_name)  # the quantized type: Q's output, DQ's input
    x_elem = ctx.elem(x_name)
    modes = ["tensor"]
    if ctx.has_attribute("axis"):
        modes.append("axis")
    if ctx.has_attribute("block_size"):
        modes.append("block")
    mode = draw(st.sampled_from(modes))
    attrs: dict = {}
    if mode == "tensor":
        rank = draw(st.integers(0, 4))
        shape = _shape(draw, rank)
        s_shape = (1,) if draw(st.integers(0, 3)) == 3 else ()
        if ctx.has_attribute("axis"):  # ignored for per-tensor quantization: absent or in range
            attrs["axis"] = ABSENT if rank == 0 or draw(_BOOL) else axis_in(draw, rank)
        if ctx.has_attribute("block_size"):
            attrs["block_size"] = ABSENT if draw(_BOOL) else 0
    else:
        rank = draw(st.integers(1, 4))
        axis = axis_in(draw, rank)
        a = axis % rank
        if mode == "axis":
            shape = _shape(draw, rank)
            shape[a] = draw(_POS_DIM)
            s_shape = (shape[a],)
            if ctx.has_attribute("block_size"):
                attrs["block_size"] = ABSENT if draw(_BOOL) else 0
        else:
            big = draw(st.integers(0, 3)) == 3  # runtimes often want block sizes >= 16
            if big:
                block = draw(st.sampled_from((16, 32)))
                shape = [draw(st.integers(1, 2)) for _ in range(rank)]
                shape[a] = draw(st.integers(1, 2 * block + 3))
            else:
                block = draw(st.integers(1, 4))
                shape = _shape(draw, rank)
                shape[a] = draw(st.integers(1, 3 * block))
            if _prod(shape) == shape[a] <= block:
                # a 1-element scale reads as per-tensor to runtimes (which then refuse block_size):
                # give the blocked axis a second block
                shape[a] = block + draw(st.integers(1, block))
            s_shape = tuple(-(-d // block) if i == a else d for i, d in enumerate(shape))
            attrs["block_size"] = block
        attrs["axis"] = ABSENT if a == 1 and axis == 1 and draw(_BOOL) else axis
    s_shape = tuple(s_shape)
    # the zero point has the scale's shape; per-tensor, either may be a scalar or a 1-element vector
    z_shape = draw(st.sampled_from((s_shape, (), (1,)))) if mode == "tensor" else s_shape
    inputs = {s_name: positive(draw, s_elem, s_shape)}
    if quantize:
        inputs[x_name] = values(draw, x_elem, shape)
        if not q_elem.startswith("float8"):
            # NaN has no integer (nor float4 / float6) quantization: the spec leaves it undefined
            # (rule "x / y_scale is not NaN"); infinities and extremes stay, they saturate
            inputs[x_name] = nan_to_zero(inputs[x_name])
        # without output_dtype, a quantize without zero point outputs uint8
        need_zp = q_elem != "uint8" and not ctx.has_attribute("output_dtype")
        inputs[z_name] = zero_point(draw, q_elem, z_shape) if need_zp or draw(_BOOL) else None
    else:
        inputs[x_name] = values(draw, q_elem, shape)
        # int32 input: "there's no zero point (zero point is supposed to be 0)"
        inputs[z_name] = zero_point(draw, q_elem, z_shape, zero=q_elem == "int32") if draw(_BOOL) else None
    if ctx.has_attribute("saturate"):
        attrs["saturate"] = draw(st.sampled_from((ABSENT, 1, 0)))
    if ctx.has_attribute("precision"):
        # the precision of x / y_scale; by default the scale's type: stated explicitly sometimes
        same = s_elem in ("float", "float16", "bfloat16") and draw(_BOOL)
        attrs["precision"] = ELEMENT_TYPE_CODES[s_elem] if same else ABSENT
    return Draft(attrs, inputs)


# ---------------------------------------------------------------------------------------------
# MatMulInteger / QLinearMatMul


def _matmul_shapes(draw):
    """Shapes of a and b for numpy.matmul: ranks 1..4, broadcast batch dims."""
    ra = draw(st.sampled_from((2, 1, 3, 4)))
    rb = draw(st.sampled_from((2, 1, 3, 4)))
    m, k, n = draw(_DIM), draw(_DIM), draw(_DIM)
    nb = max(ra, rb, 2) - 2
    batch = [draw(st.integers(1, 3)) for _ in range(nb)]

    def side(r):
        b = batch[len(batch) - max(r - 2, 0):] if r > 2 else []
        return [1 if draw(st.integers(0, 3)) == 0 else d for d in b]

    ba, bb = side(ra), side(rb)
    a_shape = [k] if ra == 1 else ba + [m, k]
    b_shape = [k] if rb == 1 else bb + [k, n]
    return a_shape, b_shape


def _param_shape(draw, data_shape: list[int], row: bool, allow: bool = True):
    """Shape of a zero point / scale of ``data``: per-tensor ((), [1]) or, when ``allow``, per-row
    of a ([M], [..., M, 1]) / per-column of b ([N], [..., 1, N])."""
    choices = [(), (1,)]
    r = len(data_shape)
    if allow and r >= 2:
        if r == 2:
            choices.append((data_shape[0],) if row else (data_shape[1],))
        choices.append(tuple(data_shape[:-1]) + (1,) if row else tuple(data_shape[:-2]) + (1, data_shape[-1]))
    return draw(st.sampled_from(choices))


def _matmul_integer(draw, ctx: Context) -> Draft:
    a_shape, b_shape = _matmul_shapes(draw)
    ea, eb = ctx.elem("A"), ctx.elem("B")
    inputs = {"A": values(draw, ea, a_shape), "B": values(draw, eb, b_shape)}
    for name, elem, shape, row in (("a_zero_point", ea, a_shape, True), ("b_zero_point", eb, b_shape, False)):
        inputs[name] = zero_point(draw, elem, _param_shape(draw, shape, row)) if draw(_BOOL) else None
    return Draft({}, inputs)


def _qlinear_matmul(draw, ctx: Context) -> Draft:
    a_shape, b_shape = _matmul_shapes(draw)
    inputs = {}
    for x, shape, row in (("a", a_shape, True), ("b", b_shape, False)):
        elem = ctx.elem(x)
        p_shape = _param_shape(draw, shape, row)
        inputs[x] = values(draw, elem, shape)
        inputs[f"{x}_scale"] = positive(draw, ctx.elem(f"{x}_scale"), p_shape)
        inputs[f"{x}_zero_point"] = zero_point(draw, elem, p_shape)
    y_shape = draw(st.sampled_from(((), (1,))))
    inputs["y_scale"] = positive(draw, ctx.elem("y_scale"), y_shape)
    inputs["y_zero_point"] = zero_point(draw, ctx.elem("y_zero_point"), y_shape)
    return Draft({}, inputs)


# ---------------------------------------------------------------------------------------------


def _dynamic(draw, ctx: Context) -> Draft:
    rank = draw(st.integers(0, 4))
    shape = [draw(_POS_DIM) for _ in range(rank)]
    # rule NAN: a NaN makes the scale's min / max undefined; infinities and extremes stay
    return Draft({}, {"x": nan_to_zero(values(draw, ctx.elem("x"), shape))})


_OPS = {
    "QuantizeLinear": _linear,
    "DequantizeLinear": _linear,
    "MatMulInteger": _matmul_integer,
    "QLinearMatMul": _qlinear_matmul,
    "DynamicQuantizeLinear": _dynamic,
}


_ai_onnx = by_op("quantization", _OPS)


def draw(draw_, ctx: Context) -> Draft:
    """The ai.onnx ops above; com.microsoft's quantized ops are built in ``contrib_quant_draws``
    (same names, other inputs and attributes)."""
    if ctx.spec.domain == "com.microsoft":
        from . import contrib_blockquant_draws as blockquant
        from .contrib_quant_draws import draw as contrib

        if ctx.op in blockquant.OPS:
            return blockquant.draw(draw_, ctx)

        return contrib(draw_, ctx)
    return _ai_onnx(draw_, ctx)
