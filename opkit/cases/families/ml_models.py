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
    """The linear mode (one row of C weights per class, one rho) or, two times in three, the
    support-vector mode with optional Platt probabilities."""
    e = draw(st.integers(2, 4))
    if draw(st.integers(0, 2)):
        return _svm_vector_classifier(draw, ctx, e)
    x = _x(draw, ctx)
    attrs = {"coefficients": _floats(draw, e * x.shape[-1]), "rho": _floats(draw, 1),
             "kernel_type": draw(st.sampled_from((ABSENT, "LINEAR"))), "kernel_params": _kernel_params(draw),
             "post_transform": draw(_TRANSFORMS), **_labels(draw, ctx, e)}
    return Draft(attributes=attrs, inputs={"X": x})


_BINARY_SV_TRANSFORMS = st.sampled_from(("NONE", "LOGISTIC"))
_SV_DTYPES = {"float": np.float32, "double": np.float64, "int32": np.int32, "int64": np.int64}


def _eighths(draw, n: int, lo: int = -16, hi: int = 16) -> list[float]:
    """``n`` multiples of 1/8 in [lo/8, hi/8]: exact in every float type, moderate under any kernel."""
    return [draw(st.integers(lo, hi)) / 8.0 for _ in range(n)]


def _sv_input(draw, ctx: Context) -> np.ndarray:
    """X of moderate values ([N, C] or [C]): a POLY kernel of degree 3 keeps them far from overflow."""
    c = draw(st.integers(1, 3))
    shape = (c,) if draw(_BOOL) else (draw(st.integers(0, 3)), c)
    elem = ctx.elem("X")
    size = int(np.prod(shape))
    data = [float(draw(st.integers(-3, 3))) for _ in range(size)] if elem.startswith("int") else _eighths(draw, size)
    return np.asarray(data, dtype=_SV_DTYPES[elem]).reshape(shape)


def _svm_vector_classifier(draw, ctx: Context, e: int) -> Draft:
    """vectors_per_class (each 0..2, V >= 1 in all), V support vectors of C features, coefficients
    [E-1, V], one rho per pair, a kernel and its three parameters; optionally prob_a and prob_b per
    pair (A < 0 as Platt's fit gives, so a larger decision value means a likelier first class).
    Two classes without probabilities take NONE or LOGISTIC and a negative coefficient (rule C9)."""
    x = _sv_input(draw, ctx)
    c = x.shape[-1]
    counts = [draw(st.integers(0, 2)) for _ in range(e)]
    if not sum(counts):
        counts[draw(st.integers(0, e - 1))] = 1
    v, pairs = sum(counts), e * (e - 1) // 2
    coefficients = _eighths(draw, (e - 1) * v)
    with_probs = draw(_BOOL)
    if e == 2 and not with_probs and min(coefficients) >= 0:
        coefficients[draw(st.integers(0, len(coefficients) - 1))] = -draw(st.integers(1, 16)) / 8.0
    attrs = {"vectors_per_class": counts, "support_vectors": _eighths(draw, v * c), "coefficients": coefficients,
             "rho": _eighths(draw, pairs), "kernel_type": draw(_KERNELS), "kernel_params": _kernel_params(draw),
             "post_transform": draw(_BINARY_SV_TRANSFORMS if e == 2 and not with_probs else _TRANSFORMS),
             **_labels(draw, ctx, e)}
    if with_probs:
        attrs.update(prob_a=_eighths(draw, pairs, -24, -1), prob_b=_eighths(draw, pairs, -8, 8))
    return Draft(attributes=attrs, inputs={"X": x})


BUILDERS["SVMClassifier"] = _svm_classifier
