"""Loss family: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

The scores/log-probabilities are (N, C, d1, ..., dk); the class labels are (N, d1, ..., dk), each in
[0, C) or equal to ``ignore_index``; the optional per-class weights are (C,).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..case import ABSENT, NotGeneratable
from ..context import Context, Draft, finite_values, int_tensor, values

_BOOL = st.booleans()
_SEED = st.integers(0, 2**32 - 1)

# (data, labels, weights) input names per op
_NAMES = {
    "NegativeLogLikelihoodLoss": ("input", "target", "weight"),
    "SoftmaxCrossEntropyLoss": ("scores", "labels", "weights"),
}


def draw(draw, ctx: Context) -> Draft:
    if ctx.op not in _NAMES:
        raise NotGeneratable(f"the loss family has no builder for {ctx.op}")
    data, labels, weights = _NAMES[ctx.op]
    k = draw(st.integers(0, 2))  # extra spatial dims d1..dk
    n = draw(st.integers(1, 3)) if draw(st.integers(0, 9)) else 0
    if ctx.op == "SoftmaxCrossEntropyLoss":
        # its function body reshapes scores to [N, C, -1], which Reshape cannot infer for N = 0
        # (rule BATCH): an empty batch is undefined there
        n = max(n, 1)
    c = draw(st.integers(1, 4))
    spatial = [draw(st.integers(1, 3)) for _ in range(k)]
    label_shape = [n] + spatial

    # ignore_index: absent, a class index (those samples drop out), or outside [0, C) (-1, -100, C)
    ignore = draw(st.sampled_from((ABSENT, "class", -1, -100, "C")))
    if ignore == "class":
        ignore = draw(st.integers(0, c - 1))
    elif ignore == "C":
        ignore = c
    # labels: classes in [0, C), some replaced by ignore_index when there is one
    rng = np.random.default_rng(draw(_SEED))
    size = int(np.prod(label_shape, dtype=np.int64))
    flat = rng.integers(0, c, size)
    if ignore is not ABSENT and size:
        share = draw(st.sampled_from((0.0, 0.3, 1.0)))
        flat = np.where(rng.random(size) < share, ignore, flat)
    inputs = {
        data: values(draw, ctx.elem(data), [n, c] + spatial),
        labels: int_tensor(ctx.elem(labels), flat.reshape(label_shape).tolist(), tuple(label_shape)),
        weights: finite_values(draw, ctx.elem(weights), (c,)) if draw(_BOOL) else None,
    }
    attrs = {"ignore_index": ignore,
             "reduction": draw(st.sampled_from((ABSENT, "none", "sum", "mean")))}
    return Draft(attributes=attrs, inputs=inputs)
