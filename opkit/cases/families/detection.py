"""Family ``detection``: NonMaxSuppression. boxes [B, N, 4], scores [B, C, N] of the same B and
N, max_output_boxes_per_class / iou_threshold / score_threshold as 0-D or 1-element tensors with
iou_threshold in [0, 1] (each optional input present or absent)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..context import Context, Draft, finite_values


def _scalar(draw, arr):
    return arr.reshape(()) if draw(st.booleans()) else arr.reshape((1,))


def draw(draw, ctx: Context) -> Draft:
    b, c, n = draw(st.integers(0, 2)), draw(st.integers(1, 3)), draw(st.integers(0, 5))
    corners = finite_values(draw, "float", (b, n, 4)).astype(np.float32)
    inputs = {"boxes": corners, "scores": finite_values(draw, "float", (b, c, n)).astype(np.float32)}
    present = draw(st.integers(2, 5))  # how many inputs the node names (the optional ones are trailing)
    if present > 2:
        inputs["max_output_boxes_per_class"] = _scalar(draw, np.array([draw(st.integers(0, 4))], np.int64))
    if present > 3:
        inputs["iou_threshold"] = _scalar(draw, np.array([draw(st.sampled_from([0.0, 0.3, 0.5, 1.0]))], np.float32))
    if present > 4:
        inputs["score_threshold"] = _scalar(draw, np.array([draw(st.sampled_from([-1.0, 0.0, 0.4]))], np.float32))
    for name in ("max_output_boxes_per_class", "iou_threshold", "score_threshold"):
        inputs.setdefault(name, None)
    attrs = {"center_point_box": draw(st.sampled_from([None, 0, 1]))} if ctx.has_attribute("center_point_box") else {}
    from ..case import ABSENT

    return Draft({k: (ABSENT if v is None else v) for k, v in attrs.items()}, inputs)
