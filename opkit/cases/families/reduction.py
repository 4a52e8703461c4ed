"""Family ``reduction``: ops that pick along one axis and need it non-empty (Hardmax: an empty
axis has no maximum). The axis is drawn first, then a shape whose reduced extent is >= 1; other
dims may be 0."""

from __future__ import annotations

from hypothesis import strategies as st

from ..case import ABSENT
from ..context import Context, Draft, nan_to_zero, values


def draw(draw, ctx: Context) -> Draft:
    data = ctx.version.inputs[0]
    attr = ctx.attribute("axis")
    coerced_2d = attr is not None and attr.has_default and attr.default == 1 and ctx.since < 13
    rank = draw(st.integers(2 if coerced_2d else 1, 4))  # the default axis 1 must name a dim
    shape = [draw(st.integers(0, 4)) for _ in range(rank)]
    if attr is None:
        axis = ABSENT
        shape[-1] = max(shape[-1], 1)
    else:
        lo = -rank if ctx.since >= 11 else 0
        axis = draw(st.sampled_from([ABSENT, *range(lo, rank)]))
        a = (attr.default if axis is ABSENT else axis) % rank if rank else 0
        if coerced_2d:  # opsets 1-11 coerce the input to 2-D at ``axis``: the dims from axis on are the row
            for i in range(a, rank):
                shape[i] = max(shape[i], 1)
        else:
            shape[a] = max(shape[a], 1)
    x = values(draw, ctx.elem(data.name), shape)
    if ctx.op == "Hardmax":  # an axis holding NaN has no maximum (the spec's rule D1): NaN becomes 0
        x = nan_to_zero(x)
    return Draft({"axis": axis} if attr is not None else {}, {data.name: x})
