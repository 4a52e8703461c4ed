"""Matmul family: MatMul, Gemm, Det.

MatMul draws numpy.matmul's shape combinations: 1-D operands on either or both sides (promoted and
removed again), batch dims broadcast between the operands (one side missing them, 1 against n,
equal), zero-size M, K, N. Gemm draws (M, K, N), transA/transB and a C unidirectionally
broadcastable to (M, N) (opset 1 and 6: the exact (M, N) unless ``broadcast`` = 1; from opset 11
C may be left out). Det draws square matrices with batch dims.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ..context import ABSENT, Context, Draft, broadcast_pair, by_op, values

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


def _det(draw, ctx: Context) -> Draft:
    m = draw(st.one_of(st.integers(1, 4), st.just(0)))
    batch = [draw(_ANY_DIM) for _ in range(draw(st.integers(0, 2)))]
    return Draft({}, {"X": values(draw, ctx.elem("X"), batch + [m, m])})


_BUILDERS = {"MatMul": _matmul, "Gemm": _gemm, "Det": _det}


draw = by_op("matmul", _BUILDERS)
