"""Family ``shrink``: Shrink. For an integer input, ``bias`` is drawn integral and ``lambd`` in
[0, a few]: there the formula ("If x > lambd, y = x - bias") and the function body (which casts
bias and lambd to the input's type first) give the same integers; the spec's rule D1
(``shrink_defined``) leaves the rest undefined. Floating inputs are drawn generically."""

from __future__ import annotations

from hypothesis import strategies as st

from ...core.onnx_types import INT_RANGES
from ..case import ABSENT
from ..context import Context, Draft

# ABSENT leaves the attribute out (bias 0, lambd 0.5 by default)
_BIAS = (ABSENT, ABSENT, 0.0, 0.0, 1.0, -1.0, 2.0, -3.0)
_LAMBD = (ABSENT, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0)


def draw(draw, ctx: Context) -> Draft:
    if ctx.elem(ctx.version.inputs[0].name) not in INT_RANGES:
        return Draft()
    return Draft({"bias": draw(st.sampled_from(_BIAS)), "lambd": draw(st.sampled_from(_LAMBD))}, {})
