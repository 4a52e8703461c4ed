"""Family ``ml`` (continued): the linear and SVM models, their attributes sized to the input.

X is [N, C] or [C]; coefficient matrices are classes x C (or targets x C), intercepts one per row,
exactly one kind of class labels (the one the bound output type asks for), a post_transform from
the five the texts name, and for the SVMs support vectors of C features with kernel parameters.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..case import ABSENT
from ..context import Context, Draft, finite_values, values

_BOOL = st.booleans()
_TRANSFORMS = st.sampled_from(("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"))
_WORDS = ("neg", "pos", "cat", "dog", "", "\u00e9t\u00e9")


def _x(draw, ctx: Context) -> np.ndarray:
    """[N, C] or [C] with C in 1..4 and N in 0..3; model inputs are moderate (weights multiply them)."""
    c = draw(st.integers(1, 4))
    shape = (c,) if draw(_BOOL) else (draw(st.integers(0, 3)), c)
    if draw(st.integers(0, 3)):
        return finite_values(draw, ctx.elem("X"), shape)
    return values(draw, ctx.elem("X"), shape)


def _floats(draw, n: int) -> list[float]:
    return [float(v) for v in finite_values(draw, "float", (n,))]


def _labels(draw, ctx: Context, n: int) -> dict:
    """Exactly one classlabels_* attribute with ``n`` distinct labels, of the bound output type."""
    if ctx.output_elem("Y") == "string":
        return {"classlabels_strings": draw(st.lists(st.sampled_from(_WORDS), min_size=n, max_size=n, unique=True))}
    return {"classlabels_ints": draw(st.lists(st.integers(-3, 9), min_size=n, max_size=n, unique=True))}


def _linear_regressor(draw, ctx: Context) -> Draft:
    x = _x(draw, ctx)
    targets = draw(st.integers(1, 3))
    attrs = {"coefficients": _floats(draw, targets * x.shape[-1]),
             "targets": targets if targets > 1 or draw(_BOOL) else ABSENT,
             "intercepts": _floats(draw, targets) if draw(st.integers(0, 3)) else ABSENT,
             "post_transform": draw(_TRANSFORMS)}
    return Draft(attributes=attrs, inputs={"X": x})


def _linear_classifier(draw, ctx: Context) -> Draft:
    x = _x(draw, ctx)
    binary = draw(st.integers(0, 2)) == 0
    rows = 1 if binary else draw(st.integers(1, 4))
    attrs = {"coefficients": _floats(draw, rows * x.shape[-1]),
             "intercepts": _floats(draw, rows) if draw(st.integers(0, 3)) else ABSENT,
             "post_transform": draw(_TRANSFORMS), **_labels(draw, ctx, 2 if binary else rows)}
    return Draft(attributes=attrs, inputs={"X": x})


BUILDERS = {"LinearRegressor": _linear_regressor, "LinearClassifier": _linear_classifier}


_KERNELS = st.sampled_from(("LINEAR", "POLY", "RBF", "SIGMOID"))


def _kernel_params(draw) -> list[float]:
    """gamma, coef0 and an integral degree (a polynomial's)."""
    gamma = float(np.float32(draw(st.sampled_from((0.5, 0.1, 1.0, 0.03125, 2.0)))))
    coef0 = float(np.float32(draw(st.sampled_from((0.0, 1.0, -0.5, 0.25)))))
    return [gamma, coef0, float(draw(st.integers(1, 3)))]


def _svm_regressor(draw, ctx: Context) -> Draft:
    x = _x(draw, ctx)
    c = x.shape[-1]
    n = draw(st.integers(0, 4))
    one_class = draw(st.sampled_from((ABSENT, 0, 1)))
    attrs = {"kernel_type": draw(_KERNELS), "kernel_params": _kernel_params(draw),
             "rho": _floats(draw, 1), "one_class": one_class,
             "post_transform": "NONE" if one_class == 1 else draw(_TRANSFORMS)}
    if n:
        attrs.update(n_supports=n, support_vectors=_floats(draw, n * c), coefficients=_floats(draw, n))
    else:
        attrs.update(n_supports=draw(st.sampled_from((ABSENT, 0))), coefficients=_floats(draw, c))
    return Draft(attributes=attrs, inputs={"X": x})


BUILDERS["SVMRegressor"] = _svm_regressor


def _svm_classifier(draw, ctx: Context) -> Draft:
    """The linear mode only (no support vectors, no prob_a / prob_b): see the op's page."""
    x = _x(draw, ctx)
    e = draw(st.integers(2, 4))
    attrs = {"coefficients": _floats(draw, e * x.shape[-1]), "rho": _floats(draw, 1),
             "kernel_type": draw(st.sampled_from((ABSENT, "LINEAR"))), "kernel_params": _kernel_params(draw),
             "post_transform": draw(_TRANSFORMS), **_labels(draw, ctx, e)}
    return Draft(attributes=attrs, inputs={"X": x})


BUILDERS["SVMClassifier"] = _svm_classifier
