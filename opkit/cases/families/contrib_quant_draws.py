"""Family hook helpers: com.microsoft's quantized ops (the ``quantization`` and ``window`` families
hand them here, by domain).

Each builder draws a data shape first, then quantization parameters that agree with it: scales
finite and strictly positive (``positive``), zero points anywhere in the quantized type's range
(``zero_point``), per tensor (a scalar, or a 1-element vector where the op's text or onnxruntime's
tests allow it) or per axis (1-D, dim(axis) values) as each op allows. Float inputs of the QLinear
ops are quantized values already (integers); float inputs of the ops that quantize inside (the
integer-to-float matmuls) hold no NaN where no integer can hold it.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..context import ABSENT, Context, Draft, axis_in, by_op, nan_to_zero, values
from .quantization import positive, zero_point

_BOOL = st.booleans()
_DIM = st.one_of(st.integers(1, 3), st.integers(0, 4))
_POS_DIM = st.integers(1, 4)


def _shape(draw, rank: int, dim=_DIM) -> list[int]:
    return [draw(dim) for _ in range(rank)]


def _per_tensor_shape(draw, vector: bool = True) -> tuple:
    """A per-tensor parameter: a scalar, or (where allowed) a 1-element vector one draw in four."""
    return (1,) if vector and draw(st.integers(0, 3)) == 3 else ()


def _linear(draw, ctx: Context) -> Draft:
    """QuantizeLinear / DequantizeLinear: per tensor without axis, per axis with it."""
    x_name, s_name, z_name = (p.name for p in ctx.version.inputs)
    q_elem = ctx.elem(z_name)
    attrs: dict = {}
    if draw(_BOOL):
        rank = draw(st.integers(1, 4))
        axis = axis_in(draw, rank)
        shape = _shape(draw, rank)
        shape[axis % rank] = draw(_POS_DIM)
        s_shape: tuple = (shape[axis % rank],)
        attrs["axis"] = axis
    else:
        shape = _shape(draw, draw(st.integers(0, 4)))
        s_shape = _per_tensor_shape(draw)
        attrs["axis"] = ABSENT
    inputs = {s_name: positive(draw, ctx.elem(s_name), s_shape)}
    if ctx.op == "QuantizeLinear":
        inputs[x_name] = nan_to_zero(values(draw, ctx.elem(x_name), shape))
        need = q_elem != "uint8"  # without a zero point the output is uint8
        inputs[z_name] = zero_point(draw, q_elem, s_shape) if need or draw(_BOOL) else None
    else:
        inputs[x_name] = values(draw, q_elem, shape)
        inputs[z_name] = zero_point(draw, q_elem, s_shape) if draw(_BOOL) else None
    return Draft(attrs, inputs)


_OPS = {
    "QuantizeLinear": _linear,
    "DequantizeLinear": _linear,
}

draw = by_op("quantization (com.microsoft)", _OPS)


def _scalar_params(draw, ctx: Context, inputs: dict, data: str, scale: str, zp: str, optional: bool = True):
    """A per-tensor (scalar) scale and zero point of ``data``'s type; the zero point optional."""
    elem = ctx.elem(data) if ctx.has_input(data) else ctx.elem(zp)
    inputs[scale] = positive(draw, ctx.elem(scale), ())
    inputs[zp] = zero_point(draw, elem, ()) if not optional or draw(st.integers(0, 3)) else None


def _qlinear_binary(draw, ctx: Context) -> Draft:
    """QLinearAdd / QLinearMul: broadcastable A and B, scalar scales and zero points."""
    from ..context import broadcast_pair

    out = _shape(draw, draw(st.integers(0, 4)))
    a_shape, b_shape = broadcast_pair(draw, out)
    inputs = {"A": values(draw, ctx.elem("A"), a_shape), "B": values(draw, ctx.elem("B"), b_shape)}
    for name in ("A", "B", "C"):
        _scalar_params(draw, ctx, inputs, "A", f"{name}_scale", f"{name}_zero_point")
    return Draft({}, inputs)


_OPS.update({"QLinearAdd": _qlinear_binary, "QLinearMul": _qlinear_binary})


def _qlinear_unary(draw, ctx: Context) -> Draft:
    """QLinearSigmoid / QLinearLeakyRelu: any X, scalar scales and zero points."""
    inputs = {"X": values(draw, ctx.elem("X"), _shape(draw, draw(st.integers(0, 4))))}
    for name in ("X", "Y"):
        _scalar_params(draw, ctx, inputs, "X", f"{name}_scale", f"{name}_zero_point")
    return Draft({}, inputs)


_OPS.update({"QLinearSigmoid": _qlinear_unary, "QLinearLeakyRelu": _qlinear_unary})


def _qlinear_softmax(draw, ctx: Context) -> Draft:
    """QLinearSoftmax: X of rank >= 1, an axis in range, opset before / from 13 (2-D coercion or
    one axis), scalar scales; y_zero_point is a required input."""
    rank = draw(st.integers(1, 4))
    inputs = {"X": values(draw, ctx.elem("X"), _shape(draw, rank))}
    _scalar_params(draw, ctx, inputs, "X", "X_scale", "x_zero_point")
    _scalar_params(draw, ctx, inputs, "X", "y_scale", "y_zero_point", optional=False)
    attrs = {"opset": draw(st.sampled_from((13, 12, 11))), "axis": axis_in(draw, rank)}
    return Draft(attrs, inputs)


_OPS["QLinearSoftmax"] = _qlinear_softmax


def _qlinear_concat(draw, ctx: Context) -> Draft:
    """QLinearConcat: 1-3 (tensor, scale, zero point) triples of Y's type, shapes equal but on
    the concatenation axis."""
    elem = ctx.elem("Y_zero_point")
    rank = draw(st.integers(1, 4))
    axis = axis_in(draw, rank)
    base = _shape(draw, rank)
    triples: list = []
    for _ in range(draw(st.integers(1, 3))):
        shape = list(base)
        shape[axis % rank] = draw(_DIM)
        triples += [values(draw, elem, shape), positive(draw, "float", ()), zero_point(draw, elem, ())]
    inputs = {"Y_scale": positive(draw, "float", ()), "Y_zero_point": zero_point(draw, elem, ()), "inputs": triples}
    return Draft({"axis": axis}, inputs)


_OPS["QLinearConcat"] = _qlinear_concat


def _qlinear_where(draw, ctx: Context) -> Draft:
    """QLinearWhere: condition, X and Y broadcast together; scalar scales and zero points (all
    required inputs)."""
    from ..context import broadcast_pair

    out = _shape(draw, draw(st.integers(0, 4)))
    c_shape, rest = broadcast_pair(draw, out)
    x_shape, y_shape = broadcast_pair(draw, out) if draw(_BOOL) else (rest, out)
    elem = ctx.elem("X")
    inputs = {"condition": values(draw, "bool", c_shape), "X": values(draw, elem, x_shape),
              "Y": values(draw, elem, y_shape)}
    for name in ("x", "y", "z"):
        _scalar_params(draw, ctx, inputs, "X", f"{name}_scale", f"{name}_zero_point", optional=False)
    return Draft({}, inputs)


_OPS["QLinearWhere"] = _qlinear_where


def _qlinear_global_average_pool(draw, ctx: Context) -> Draft:
    """QLinearGlobalAveragePool: (N, C, D1..Dn) or channels last, every spatial extent >= 1;
    scalar scales and zero points (all required)."""
    channels_last = draw(st.sampled_from((ABSENT, 0, 1)))
    spatial = [draw(_POS_DIM) for _ in range(draw(st.integers(1, 3)))]
    n, c = draw(st.integers(0, 2)), draw(st.integers(1, 3))
    shape = [n] + spatial + [c] if channels_last == 1 else [n, c] + spatial
    inputs = {"X": values(draw, ctx.elem("X"), shape)}
    for name in ("x", "y"):
        _scalar_params(draw, ctx, inputs, "X", f"{name}_scale", f"{name}_zero_point", optional=False)
    return Draft({"channels_last": channels_last}, inputs)


_OPS["QLinearGlobalAveragePool"] = _qlinear_global_average_pool


def _qlinear_average_pool(draw, ctx: Context) -> Draft:
    """QLinearAveragePool: the window family's pooling geometry (pads below the kernel, no window
    over padding only), channels first or last, scalar scales and optional zero points."""
    from .window import geometry

    g = geometry(draw, ctx, pool=True)
    n, c = draw(st.integers(0, 2)), draw(st.integers(1, 3))
    channels_last = draw(st.sampled_from((ABSENT, 0, 1)))
    shape = [n, *g.sizes, c] if channels_last == 1 else [n, c, *g.sizes]
    attrs = dict(g.attrs, kernel_shape=list(g.kernel), channels_last=channels_last)
    attrs.pop("dilations", None)
    reaches = g.ceil_mode or any(g.pads)  # the divisor matters only where a window reaches padding
    attrs["count_include_pad"] = draw(st.sampled_from((ABSENT, 0, 1, 1) if reaches else (ABSENT, 0, 1)))
    inputs = {"X": values(draw, ctx.elem("X"), shape)}
    for name in ("x", "y"):
        _scalar_params(draw, ctx, inputs, "X", f"{name}_scale", f"{name}_zero_point")
    return Draft(attrs, inputs)


_OPS["QLinearAveragePool"] = _qlinear_average_pool


def _qlinear_reduce_mean(draw, ctx: Context) -> Draft:
    """QLinearReduceMean: distinct non-empty axes (required), keepdims 0 or 1 (required), reduced
    axes of extent >= 1; scalar scales and optional zero points."""
    from ..context import distinct_axes

    rank = draw(st.integers(1, 4))
    axes = distinct_axes(draw, rank, min_size=1)
    shape = _shape(draw, rank)
    for a in axes:
        shape[a % rank] = draw(_POS_DIM)
    inputs = {"data": values(draw, ctx.elem("data"), shape)}
    for name in ("data", "reduced"):
        _scalar_params(draw, ctx, inputs, "data", f"{name}_scale", f"{name}_zero_point")
    return Draft({"axes": axes, "keepdims": draw(st.sampled_from((0, 1)))}, inputs)


_OPS["QLinearReduceMean"] = _qlinear_reduce_mean


def _column_param(draw, cols: int, allow_vector: bool = True) -> tuple:
    """Shape of a per-tensor ((), (1,)) or per-column ((cols,)) scale / zero point."""
    choices = [(), (1,)] + ([(cols,)] if allow_vector else [])
    return draw(st.sampled_from(choices))


def _matrix_shapes(draw) -> tuple[list[int], list[int]]:
    """Shapes of A and B for matmul, both rank 2-4 (matrices, batch dims broadcast)."""
    from .quantization import _matmul_shapes

    while True:  # rank-1 draws are a quarter of _matmul_shapes' ranks: few redraws
        a_shape, b_shape = _matmul_shapes(draw)
        if len(a_shape) >= 2 and len(b_shape) >= 2:
            return a_shape, b_shape


def _integer_to_float(draw, ctx: Context) -> Draft:
    """MatMulIntegerToFloat / DynamicQuantizeMatMul: matmul-compatible A and B (ranks 1-4,
    broadcast batch), scales and zero points per tensor or per column, an optional bias of B's
    last dimension."""
    a_shape, b_shape = _matrix_shapes(draw)
    f = ctx.elem("b_scale")
    n = b_shape[-1]
    inputs: dict = {"B": values(draw, ctx.elem("B"), b_shape)}
    if ctx.op == "MatMulIntegerToFloat":
        inputs["A"] = values(draw, ctx.elem("A"), a_shape)
        s = _column_param(draw, a_shape[-1])
        inputs["a_scale"] = positive(draw, f, s)
        inputs["a_zero_point"] = zero_point(draw, ctx.elem("A"), s) if draw(_BOOL) else None
    else:  # A is float, quantized inside: no NaN (its min / max are undefined then)
        inputs["A"] = nan_to_zero(finite_float(draw, ctx.elem("A"), a_shape))
    s = _column_param(draw, n)
    inputs["b_scale"] = positive(draw, f, s)
    inputs["b_zero_point"] = zero_point(draw, ctx.elem("B"), s) if draw(_BOOL) else None
    inputs["bias"] = finite_float(draw, f, (n,)) if draw(_BOOL) else None
    return Draft({}, inputs)


def finite_float(draw, elem: str, shape) -> np.ndarray:
    from ..context import finite_values

    return finite_values(draw, elem, shape)


_OPS.update({"MatMulIntegerToFloat": _integer_to_float, "DynamicQuantizeMatMul": _integer_to_float})


def _mul_integer(draw, ctx: Context) -> Draft:
    """MulInteger: broadcastable A and B, optional scalar zero points."""
    from ..context import broadcast_pair

    a_shape, b_shape = broadcast_pair(draw, _shape(draw, draw(st.integers(0, 4))))
    elem = ctx.elem("A")
    inputs = {"A": values(draw, elem, a_shape), "B": values(draw, elem, b_shape)}
    for name in ("A_zero_point", "B_zero_point"):
        inputs[name] = zero_point(draw, elem, ()) if draw(st.integers(0, 3)) else None
    return Draft({}, inputs)


def _reduce_sum_integer(draw, ctx: Context) -> Draft:
    """ReduceSumInteger: distinct non-empty axes and keepdims (both required)."""
    from ..context import distinct_axes

    rank = draw(st.integers(1, 4))
    inputs = {"data": values(draw, ctx.elem("data"), _shape(draw, rank))}
    return Draft({"axes": distinct_axes(draw, rank, min_size=1), "keepdims": draw(st.sampled_from((0, 1)))}, inputs)


def _matmul_integer16(draw, ctx: Context) -> Draft:
    """MatMulInteger16: matmul-compatible A and B (ranks 1-4)."""
    from .quantization import _matmul_shapes

    a_shape, b_shape = _matmul_shapes(draw)
    return Draft({}, {"A": values(draw, ctx.elem("A"), a_shape), "B": values(draw, ctx.elem("B"), b_shape)})


_OPS.update({"MulInteger": _mul_integer, "ReduceSumInteger": _reduce_sum_integer,
             "MatMulInteger16": _matmul_integer16})


def _qgemm(draw, ctx: Context) -> Draft:
    """QGemm: (M, K) / (K, N) matrices with transposes, per-tensor a, per-tensor or per-column b,
    an optional int32 C broadcast to (M, N); y_scale and y_zero_point exactly when Y's bound type
    is 8-bit (a float Y has neither)."""
    from ..case import NotGeneratable

    m, k, n = draw(_DIM), draw(_DIM), draw(_DIM)
    trans_a, trans_b = draw(st.sampled_from((0, 1))), draw(st.sampled_from((0, 1)))
    ea, eb, out = ctx.elem("A"), ctx.elem("B"), ctx.output_elem("Y")
    inputs = {"A": values(draw, ea, (k, m) if trans_a else (m, k)), "B": values(draw, eb, (n, k) if trans_b else (k, n)),
              "a_scale": positive(draw, "float", ()), "a_zero_point": zero_point(draw, ea, ())}
    s = _column_param(draw, n)
    inputs["b_scale"] = positive(draw, "float", s)
    inputs["b_zero_point"] = zero_point(draw, eb, s)  # a required input, whatever its doc says
    c_shape = draw(st.sampled_from(((m, n), (n,), (1, n), (m, 1), ())))
    inputs["C"] = values(draw, "int32", c_shape, kind="small") if draw(_BOOL) else None
    if out == "float":
        inputs["y_scale"] = inputs["y_zero_point"] = None
    elif ctx.elem("y_zero_point") != out:
        raise NotGeneratable("y_zero_point's type must be Y's quantized type")
    else:
        inputs["y_scale"] = positive(draw, "float", ())
        inputs["y_zero_point"] = zero_point(draw, out, ())
    return Draft({"transA": trans_a, "transB": trans_b, "alpha": draw(st.sampled_from((ABSENT, 1.0, 0.5, 2.0)))}, inputs)


_OPS["QGemm"] = _qgemm


def _qlinear_conv(draw, ctx: Context) -> Draft:
    """QLinearConv: the window family's ai.onnx QLinearConv case (same inputs), moved to channels
    last (x as N x D1 x ... x Dn x C) when channels_last is drawn 1."""
    from .window import _qlinear_conv as conv_case

    draft = conv_case(draw, ctx)
    last = draw(st.sampled_from((ABSENT, 0, 1)))
    draft.attributes["channels_last"] = last
    if last == 1:
        draft.inputs["x"] = np.moveaxis(draft.inputs["x"], 1, -1).copy()
    return draft


_OPS["QLinearConv"] = _qlinear_conv
