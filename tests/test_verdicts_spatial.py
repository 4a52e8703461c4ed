"""Audit of onnxruntime findings for pooling, resampling and other spatial ops (issue #12): the
fixes to opkit the audit found necessary, each checked against real behaviour.

- GlobalMaxPool took inputs of any rank (a rank-0 X was drawn; the input is N x C x D1 ... Dn) and
  used no family hook; a rank min of 3 alone made the generic generator draw empty spatial axes
  (the max of nothing), so GlobalMaxPool and GlobalAveragePool now use the normalization family's
  Global*Pool builder, which keeps every spatial axis non-empty (rule EMPTY).
- The max of a window holding NaN is not defined by the text (IEEE 754 has two maxima): MaxPool,
  MaxRoiPool and GlobalMaxPool reject NaN in X (rule NAN) and their hooks draw none.
"""

from __future__ import annotations

import numpy as np
import pytest

from opkit.conformance import harness
from opkit.kernels.registry import get_kernel
from opkit.kernels.runtime import KernelValidationError

from family_cases import assert_mostly_valid, op_cases


def _first(y):
    return y[0] if isinstance(y, tuple) else y


def _spec_version(op, since):
    spec = harness.load_op("ai.onnx", op)
    return spec, spec.version(since)


# -- GlobalMaxPool / GlobalAveragePool: rank >= 3, non-empty spatial axes --------------------------

@pytest.mark.parametrize("since", [1, 22])
def test_global_max_pool_rejects_rank_below_3(since):
    """The sweep drew a rank-0 X (X = 2.0) for GlobalMaxPool; its input is N x C x D1 ... Dn."""
    kernel = get_kernel("", "GlobalMaxPool", since)
    with pytest.raises(KernelValidationError):
        kernel(np.float32(2.0))
    with pytest.raises(KernelValidationError):
        kernel(np.zeros((2, 3), np.float32))


@pytest.mark.parametrize("op", ["GlobalMaxPool", "GlobalAveragePool"])
def test_global_pool_rejects_an_empty_spatial_axis(op):
    """onnxruntime refused X = float32[4, 5, 0] ("Only N can be zero"): a window of no element has
    no max and no average (0 / 0), so the call is undefined and the kernel rejects it; an empty
    batch (N = 0) with non-empty spatial axes is still a valid, empty call."""
    kernel = get_kernel("", op, 22)
    with pytest.raises(KernelValidationError, match="EMPTY|spatial"):
        kernel(np.zeros((4, 5, 0), np.float32))
    y = _first(kernel(np.zeros((0, 2, 3), np.float32)))
    assert y.shape == (0, 2, 1)


@pytest.mark.parametrize("op,since", [("GlobalMaxPool", 1), ("GlobalMaxPool", 22),
                                      ("GlobalAveragePool", 1), ("GlobalAveragePool", 22)])
def test_global_pool_cases_are_valid(op, since):
    """The Global*Pool builder draws rank 3..5 inputs with non-empty spatial axes: (almost) every
    drawn case passes the kernel's checks (with rank min 3 alone GlobalMaxPool fell to 70%)."""
    spec, version = _spec_version(op, since)
    assert version.family == "normalization"
    assert_mostly_valid(spec, version, 3, 8)
    drawn = op_cases(op, since, 40)
    assert drawn
    for case in drawn:
        x = dict(case.inputs)["X"]
        assert 3 <= x.ndim <= 5 and all(d >= 1 for d in x.shape[2:]), x.shape
    assert any(dict(c.inputs)["X"].ndim > 3 for c in drawn)


# -- the max of a window holding NaN ----------------------------------------------------------------

@pytest.mark.parametrize("op,since", [("MaxPool", 8), ("MaxPool", 12), ("MaxPool", 22), ("GlobalMaxPool", 22)])
def test_max_pooling_rejects_nan(op, since):
    """X = [NaN, 1, 2, NaN] with kernel 2: numpy's max (and onnx.reference's GlobalMaxPool) give NaN
    for a window holding NaN, onnxruntime and onnx.reference's MaxPool skip it; the text does not
    say, so such a call is left out (rule NAN). -inf stays valid: the max of {-inf} is -inf."""
    kernel = get_kernel("", op, since)
    attrs = {"kernel_shape": [2]} if op == "MaxPool" else {}
    x = np.array([np.nan, 1, 2, np.nan], np.float32).reshape(1, 1, 4)
    with pytest.raises(KernelValidationError, match="NAN|NaN"):
        kernel(x, **attrs)
    y = _first(kernel(np.array([-np.inf, -np.inf, 1, 2], np.float32).reshape(1, 1, 4), **attrs))
    assert y.ravel()[0] == (-np.inf if op == "MaxPool" else 2.0)


def test_max_roi_pool_rejects_nan():
    kernel = get_kernel("", "MaxRoiPool", 1)
    x = np.zeros((1, 1, 2, 2), np.float32)
    x[0, 0, 1, 1] = np.nan
    rois = np.array([[0, 0, 0, 1, 1]], np.float32)
    with pytest.raises(KernelValidationError, match="NAN|NaN"):
        kernel(x, rois, pooled_shape=[1, 1])
    x[0, 0, 1, 1] = np.inf
    assert _first(kernel(x, rois, pooled_shape=[1, 1])).ravel()[0] == np.inf


@pytest.mark.parametrize("op,since", [("MaxPool", 8), ("MaxPool", 22), ("MaxRoiPool", 1), ("GlobalMaxPool", 22)])
def test_max_pooling_hooks_draw_no_nan(op, since):
    """The hooks turn NaN into 0 for these ops (edge values such as +-inf stay), so the rule costs
    no validity."""
    drawn = op_cases(op, since, 150)
    assert drawn
    floats = [dict(c.inputs)["X"] for c in drawn if dict(c.inputs)["X"].dtype.kind not in "iub"]
    assert floats
    for x in floats:
        assert not np.isnan(x.astype(np.float64)).any()
    assert any(np.isinf(x.astype(np.float64)).any() for x in floats)
    spec, version = _spec_version(op, since)
    assert_mostly_valid(spec, version, 3, 8)


def test_roi_align_max_rejects_nan_avg_keeps_it():
    """RoiAlign mode max over a bin holding NaN: onnxruntime gives a number, numpy's max NaN; the
    text does not say (rule NAN). Mode avg rejects it too since rule FINITE (h6): a sample on a
    pixel row reads its neighbours with weight 0, and NaN * 0 enters the sum or not."""
    kernel = get_kernel("", "RoiAlign", 16)
    x = np.array([1.0, np.nan, 2.0, 3.0], np.float32).reshape(1, 1, 2, 2)
    rois = np.array([[0.0, 0.0, 1.0, 1.0]], np.float32)
    idx = np.array([0], np.int64)
    with pytest.raises(KernelValidationError, match="NAN|NaN"):
        kernel(x, rois, idx, mode="max")
    with pytest.raises(KernelValidationError, match="FINITE"):
        kernel(x, rois, idx, mode="avg")
    drawn = op_cases("RoiAlign", 16, 60)
    for case in drawn:
        if dict(case.attributes).get("mode") == "max":
            assert not np.isnan(dict(case.inputs)["X"].astype(np.float64)).any()
