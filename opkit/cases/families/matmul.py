"""Matmul family: MatMul, Gemm, Det, and com.microsoft FusedMatMul, TransposeMatMul, FusedGemm,
GemmFastGelu and FusedConv (Conv's shapes from the window family, a contraction with an activation).

MatMul draws numpy.matmul's shape combinations: 1-D operands on either or both sides (promoted and
removed again), batch dims broadcast between the operands (one side missing them, 1 against n,
equal), zero-size M, K, N. Gemm draws (M, K, N), transA/transB and a C unidirectionally
broadcastable to (M, N) (opset 1 and 6: the exact (M, N) unless ``broadcast`` = 1; from opset 11
C may be left out). Det draws square matrices with batch dims.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..context import ABSENT, Context, Draft, broadcast_pair, by_domain_and_op, values

_DIM = st.integers(1, 3)
_ANY_DIM = st.one_of(st.integers(1, 3), st.just(0))
_SCALAR = st.sampled_from([ABSENT, 1.0, 0.5, -2.0, 0.0])


def _batch(draw) -> tuple[list[int], list[int]]:
    """Batch dims of the two operands of MatMul, broadcast against each other."""
    return broadcast_pair(draw, [draw(_ANY_DIM) for _ in range(draw(st.integers(0, 3)))])


def _matmul(draw, ctx: Context) -> Draft:
    m, k, n = draw(_ANY_DIM), draw(_ANY_DIM), draw(_ANY_DIM)
    a_batch, b_batch = _batch(draw)
    form = draw(st.sampled_from(["mat", "mat", "a1", "b1", "both1"]))
    if form in ("a1", "both1"):
        a_shape, b_batch_used = [k], b_batch
    else:
        a_shape, b_batch_used = a_batch + [m, k], b_batch
    if form in ("b1", "both1"):
        b_shape = [k]
    else:
        b_shape = b_batch_used + [k, n]
    elem = ctx.elem("A")
    return Draft({}, {"A": values(draw, elem, a_shape), "B": values(draw, ctx.elem("B"), b_shape)})


def _gemm(draw, ctx: Context) -> Draft:
    m, k, n = draw(_ANY_DIM), draw(_ANY_DIM), draw(_ANY_DIM)
    trans_a, trans_b = draw(st.sampled_from([ABSENT, 0, 1])), draw(st.sampled_from([ABSENT, 0, 1]))
    attrs = {"transA": trans_a, "transB": trans_b, "alpha": draw(_SCALAR), "beta": draw(_SCALAR)}
    a_shape = [k, m] if trans_a == 1 else [m, k]
    b_shape = [n, k] if trans_b == 1 else [k, n]
    exact = False
    if ctx.has_attribute("broadcast"):
        bc = draw(st.sampled_from([ABSENT, 0, 1]))
        attrs["broadcast"] = bc
        exact = bc != 1
    if exact:
        c_shape = [m, n]
    else:  # unidirectionally broadcastable to (M, N)
        c_shape = draw(st.sampled_from([[m, n], [], [n], [1, n], [m, 1], [1, 1], [1]]))
    elem = ctx.elem("A")
    inputs = {"A": values(draw, elem, a_shape), "B": values(draw, elem, b_shape)}
    c_param = ctx.input("C")
    if c_param.option == "optional" and draw(st.integers(0, 3)) == 0:
        inputs["C"] = None
    else:
        inputs["C"] = values(draw, elem, c_shape)
    return Draft(attrs, inputs)


def _fused_matmul(draw, ctx: Context) -> Draft:
    """com.microsoft FusedMatMul / TransposeMatMul: MatMul's shapes, then transA / transB (each only on
    an operand of rank >= 2, whose last two dims it swaps back) and alpha; FusedMatMul's transBatchA /
    transBatchB where both operands have one rank >= 3 (the stored operand is the logical one with its
    second-to-last axis moved to the front, which the op moves back)."""
    draft = _matmul(draw, ctx)
    if ctx.has_attribute("transBatchA") and draw(st.booleans()):  # operands of one rank >= 3, batch ones
        batch = [draw(_ANY_DIM) for _ in range(draw(st.integers(1, 2)))]
        m, k, n = draw(_ANY_DIM), draw(_ANY_DIM), draw(_ANY_DIM)
        draft.inputs = {"A": values(draw, ctx.elem("A"), batch + [m, k]),
                        "B": values(draw, ctx.elem("B"), batch + [k, n])}
    attrs: dict = {"alpha": draw(_SCALAR)}
    same_rank = draft.inputs["A"].ndim == draft.inputs["B"].ndim >= 3
    for name, flag, batch_flag in (("A", "transA", "transBatchA"), ("B", "transB", "transBatchB")):
        arr = draft.inputs[name]
        trans = draw(st.sampled_from([ABSENT, 0, 1])) if arr.ndim >= 2 else draw(st.sampled_from([ABSENT, 0]))
        attrs[flag] = trans
        if trans == 1:
            arr = arr.swapaxes(-1, -2)
        if ctx.has_attribute(batch_flag):
            attrs[batch_flag] = draw(st.sampled_from([ABSENT, 0, 1])) if same_rank else ABSENT
            if attrs[batch_flag] == 1:
                arr = np.moveaxis(arr, -2, 0)
        draft.inputs[name] = np.ascontiguousarray(arr)
    return Draft(attrs, draft.inputs)


def _fused_gemm(draw, ctx: Context) -> Draft:
    """com.microsoft FusedGemm: Gemm's shapes and scalars, then an activation (or none) and its
    alpha / beta where the activation reads them."""
    draft = _gemm(draw, ctx)
    act = draw(st.sampled_from([ABSENT, "Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid"]))
    attrs = dict(draft.attributes, activation=act)
    if act in ("LeakyRelu", "HardSigmoid"):
        attrs["activation_alpha"] = draw(st.sampled_from([ABSENT, 0.1, 0.5, 2.0]))
    if act == "HardSigmoid":
        attrs["activation_beta"] = draw(st.sampled_from([ABSENT, 0.0, 0.25, 1.0]))
    return Draft(attrs, draft.inputs)


def _gemm_fast_gelu(draw, ctx: Context) -> Draft:
    """com.microsoft GemmFastGelu: MatMul's shapes for X and W (W of rank >= 2, so the product has a
    last axis of W's), then FastGelu's optional 1-D bias of that extent."""
    m, k, n = draw(_ANY_DIM), draw(_ANY_DIM), draw(_ANY_DIM)
    x_batch, w_batch = _batch(draw)
    x_shape = [k] if draw(st.integers(0, 4)) == 0 else x_batch + [m, k]
    elem = ctx.elem("X")
    bias = values(draw, elem, (n,)) if draw(st.booleans()) else None
    return Draft({}, {"X": values(draw, elem, x_shape), "W": values(draw, elem, w_batch + [k, n]), "bias": bias})


def _fused_conv(draw, ctx: Context) -> Draft:
    """com.microsoft FusedConv: Conv's geometry and tensors from the window family's Conv builder,
    then an activation and its activation_params (LeakyRelu: [alpha]; HardSigmoid: [alpha, beta];
    Clip: [min, max], min <= max); Z left out (the text does not define it)."""
    from .window import _conv

    draft = _conv(draw, ctx)
    act = draw(st.sampled_from(["Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid", "Clip"]))
    params: object = ABSENT
    if act == "LeakyRelu":
        params = [draw(st.sampled_from([0.01, 0.1, 0.5, 2.0]))]
    elif act == "HardSigmoid":
        params = [draw(st.sampled_from([0.2, 0.5])), draw(st.sampled_from([0.5, 0.0, 1.0]))]
    elif act == "Clip":
        lo = draw(st.sampled_from([-1.0, 0.0, -6.0]))
        params = [lo, lo + draw(st.sampled_from([0.0, 1.0, 6.0]))]
    inputs = dict(draft.inputs, Z=None)
    return Draft(dict(draft.attributes, activation=act, activation_params=params), inputs)


def _det(draw, ctx: Context) -> Draft:
    m = draw(st.one_of(st.integers(1, 4), st.just(0)))
    batch = [draw(_ANY_DIM) for _ in range(draw(st.integers(0, 2)))]
    return Draft({}, {"X": values(draw, ctx.elem("X"), batch + [m, m])})


_BUILDERS = {"MatMul": _matmul, "Gemm": _gemm, "Det": _det}
_CONTRIB = {"FusedMatMul": _fused_matmul, "TransposeMatMul": _fused_matmul, "FusedGemm": _fused_gemm,
            "GemmFastGelu": _gemm_fast_gelu, "FusedConv": _fused_conv}

draw = by_domain_and_op("matmul", _BUILDERS, _CONTRIB)
