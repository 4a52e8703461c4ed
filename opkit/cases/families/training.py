"""Family ``training``: the ai.onnx.preview.training optimizers Adagrad, Adam and Momentum.

Each op updates n tensors in one node: its variadic input is X_1..X_n, their gradients G_1..G_n
and one (Adagrad's H, Momentum's V) or two (Adam's V then H) groups of state tensors, every group
in the order of the X's, and its variadic output has one tensor per X and per state tensor. The
hook draws n in 1..3 and one shape per tensor, gives the tensor's gradient and states that shape
(rule C2), draws the scalars R (a learning rate) and T (an update count >= 0, 0 meaning the first
update, where Adam and Momentum skip their bias terms) and the float attributes, and declares the
matching number of outputs. Squared-gradient accumulators (H) are drawn non-negative, as the
accumulation of squares they stand for; X, G and V keep the generic draws and their edge values
(NaN, infinities), with finite values clipped to 1e18 (float) or 1e150 (double): then squaring a
regularized gradient cannot overflow the type while the text's result is finite, a corner where the
pseudo code names no intermediate precision and a runtime computing in the tensor's type differs
from one computing wider for no fault of either.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..context import ABSENT, Context, Draft, clip_finite, dims, finite_values, values

# (state groups after X and G, which of them accumulate squares): the input layout of each op
_LAYOUT = {"Adagrad": ("H",), "Adam": ("V", "H"), "Momentum": ("V",)}

_UNIT = st.sampled_from([0.0, 0.25, 0.5, 0.9, 0.999, 1.0])
_SMALL = st.sampled_from([0.0, 1e-6, 0.01, 0.5, 1.0])


def _attributes(draw, ctx: Context) -> dict:
    attrs: dict = {}
    for name in ("alpha", "beta"):
        if ctx.has_attribute(name):
            attrs[name] = draw(_UNIT) if ctx.attribute(name).required else draw(st.one_of(st.just(ABSENT), _UNIT))
    for name in ("norm_coefficient", "norm_coefficient_post", "decay_factor", "epsilon"):
        if ctx.has_attribute(name):
            required = ctx.attribute(name).required
            attrs[name] = draw(_SMALL) if required else draw(st.one_of(st.just(ABSENT), _SMALL))
    if ctx.has_attribute("mode"):
        attrs["mode"] = draw(st.sampled_from(["standard", "nesterov"]))
    return attrs


def _bound(elem: str) -> float:
    return 1e150 if elem == "double" else 1e18


def _non_negative(draw, elem: str, shape) -> np.ndarray:
    arr = finite_values(draw, elem, shape)
    with np.errstate(all="ignore"):
        return clip_finite(np.abs(arr).astype(arr.dtype), _bound(elem))


def _tensor(draw, elem: str, shape) -> np.ndarray:
    return clip_finite(values(draw, elem, shape), _bound(elem))


def draw(draw, ctx: Context) -> Draft:
    states = _LAYOUT.get(ctx.op)
    if states is None:
        from ..case import NotGeneratable

        raise NotGeneratable(f"the training family has no builder for {ctx.op}")
    elem = ctx.elem("inputs")
    n = draw(st.integers(1, 3))
    shapes = [dims(draw, draw(st.integers(0, 3)), 0, 3) for _ in range(n)]
    xs = [_tensor(draw, elem, s) for s in shapes]
    gs = [_tensor(draw, elem, s) for s in shapes]
    groups = []
    for state in states:
        groups.append([_non_negative(draw, elem, s) if state == "H" else _tensor(draw, elem, s) for s in shapes])
    tensors = xs + gs + [t for group in groups for t in group]
    r = finite_values(draw, ctx.elem("R"), ())
    t = np.array(draw(st.sampled_from([0, 1, 2, 3, 10, 1000])), dtype=np.int64)
    inputs = {"R": r, "T": t, "inputs": tensors}
    return Draft(_attributes(draw, ctx), inputs, n_outputs=n * (1 + len(states)))
