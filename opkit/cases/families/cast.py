"""Family ``cast``: Cast and CastLike. A string input holds text that parses as the target type
(ONNX defines string -> number only for numeric text: "3.14", "1000", "1e-5", "-INF", "NaN");
every other input is drawn generically."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ...spec.types import INT_RANGES
from ..context import Context, Draft, dims

_FLOAT_TEXT = ("0", "-0.0", "1", "-2.5", "3.14", "1e-5", "1000", "65504", "1e30", "INF", "-INF", "NaN")


def _texts(draw, target: str, n: int) -> list[str]:
    if target in INT_RANGES:
        lo, hi = INT_RANGES[target]
        pool = [str(v) for v in sorted({max(lo, -3), 0, 1, min(hi, 3), lo, hi})]
    elif target == "bool":
        pool = ["0", "1"]
    else:
        pool = list(_FLOAT_TEXT)
    return [draw(st.sampled_from(pool)) for _ in range(n)]


def draw(draw, ctx: Context) -> Draft:
    data = ctx.version.inputs[0]
    if ctx.elem(data.name) != "string":
        return Draft()
    target = ctx.output_elem(ctx.version.outputs[0].name)
    shape = dims(draw, draw(st.integers(0, 3)), low=0, high=3)
    arr = np.empty(int(np.prod(shape)) if shape else 1, dtype=object)
    arr[:] = _texts(draw, target, arr.size)
    return Draft({}, {data.name: arr.reshape(shape)})
