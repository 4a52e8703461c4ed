"""Audit of onnxruntime findings for resampling, sampling and pooling ops (issue #12, second pass):
the rules that leave undefined calls out of the differential suite, the hooks that draw defined
ones, and the opkit fixes, each checked against real behaviour.

- Upsample (every version) and Resize-10 define only the output shape: nearest with whole-number
  scales (a repeat) and every scale 1 (a copy) are all they define (rule MAPPING).
- Resize-11+ of an integer X: how a fractional weighted average becomes an integer is not said
  (rule INTEGER: every output value whole); the hook draws X constant along the resized axes.
- An infinite or NaN value read with weight 0 (Resize, Upsample, GridSample, RoiAlign) gives NaN
  or not depending on which taps are summed (rule FINITE); partial sums that overflow although the
  result is finite depend on summation order and precision (rule RANGE: GridSample cubic, RoiAlign
  avg, ConvTranspose, GlobalAveragePool).
- MaxPool's Indices pointed at -inf where the lowest finite value (-1.8e308) was the max.
"""

from __future__ import annotations

import numpy as np
import pytest

from opkit.conformance import harness
from opkit.kernels.registry import get_kernel
from opkit.kernels.runtime import KernelValidationError

from family_cases import assert_mostly_valid, op_cases

F32_MAX = float(np.finfo(np.float32).max)


def _first(y):
    return y[0] if isinstance(y, tuple) else y


def _spec_version(op, since):
    spec = harness.load_op("ai.onnx", op)
    return spec, spec.version(since)


# -- Upsample, Resize-10: no coordinate mapping -----------------------------------------------------

@pytest.mark.parametrize("op,since", [("Upsample", 9), ("Upsample", 10), ("Resize", 10)])
def test_unmapped_resampling_keeps_whole_nearest_and_unit_linear(op, since):
    """The sweep charged onnxruntime for X = [2, 1] with nearest scale 1.25 (x_out / 1.25 picks
    [2, 2], a half-pixel reading [2, 1]) and for linear scales of 2.5: the text gives no mapping,
    so those are rejected; nearest with scale 2 repeats and linear with scale 1 copies."""
    kernel = get_kernel("", op, since)
    x = np.array([2.0, 1.0], np.float32)
    with pytest.raises(KernelValidationError, match="MAPPING"):
        kernel(x, np.array([1.25], np.float32), mode="nearest")
    with pytest.raises(KernelValidationError, match="MAPPING"):
        kernel(x, np.array([2.0], np.float32), mode="linear")
    assert _first(kernel(x, np.array([2.0], np.float32), mode="nearest")).tolist() == [2, 2, 1, 1]
    assert _first(kernel(x, np.array([1.0], np.float32), mode="linear")).tolist() == [2, 1]
    if op == "Resize":
        with pytest.raises(KernelValidationError, match="MAPPING"):
            kernel(np.arange(4, dtype=np.float32), np.array([0.5], np.float32), mode="nearest")


def test_upsample_7_and_1_rules():
    with pytest.raises(KernelValidationError, match="MAPPING"):
        get_kernel("", "Upsample", 7)(np.zeros((1, 2), np.int8), mode="nearest", scales=[1.0, 1.25])
    y = _first(get_kernel("", "Upsample", 7)(np.array([[1, 2]], np.int8), mode="nearest", scales=[1.0, 3.0]))
    assert y.tolist() == [[1, 1, 1, 2, 2, 2]]
    up1 = get_kernel("", "Upsample", 1)
    with pytest.raises(KernelValidationError, match="MAPPING"):
        up1(np.zeros((1, 1, 2, 2), np.float32), mode="bilinear", height_scale=2.0, width_scale=2.0)
    with pytest.raises(KernelValidationError, match="MAPPING"):
        up1(np.zeros((1, 1, 2, 2), np.float32), mode="nearest", height_scale=1.5, width_scale=2.0)


@pytest.mark.parametrize("op,since", [("Upsample", 1), ("Upsample", 7), ("Upsample", 9), ("Resize", 10)])
def test_unmapped_resampling_hooks_draw_defined_scales(op, since):
    spec, version = _spec_version(op, since)
    assert_mostly_valid(spec, version, 4, 8)
    drawn = op_cases(op, since, 60)
    assert drawn
    seen_upscale = False
    for case in drawn:
        attrs, inputs = dict(case.attributes), dict(case.inputs)
        mode = attrs.get("mode") or "nearest"
        if "scales" in attrs:
            scales = list(attrs["scales"])
        elif "height_scale" in attrs:
            scales = [attrs["height_scale"], attrs["width_scale"]]
        else:
            scales = list(inputs["scales"])
        if mode == "nearest":
            assert all(float(s).is_integer() for s in scales), scales
            seen_upscale |= any(s > 1 for s in scales)
        else:
            assert all(s == 1 for s in scales), (mode, scales)
    assert seen_upscale


# -- Resize-11+: integer X with linear / cubic ------------------------------------------------------

def test_resize_integer_averages_must_be_whole():
    """X = int8 [1, 2] doubled with half_pixel linear gives 1.25 and 1.75: onnxruntime truncates,
    rounding gives 1 and 2; the text does not say (rule INTEGER). Whole averages stay valid:
    [2, 4] doubled with asymmetric gives [2, 3, 4, 4], a constant X gives itself."""
    kernel = get_kernel("", "Resize", 13)
    roi = np.zeros((0,), np.float32)
    scales = np.array([1.0, 2.0], np.float32)
    with pytest.raises(KernelValidationError, match="INTEGER"):
        kernel(np.array([[1, 2]], np.int8), roi, scales, mode="linear")
    y = _first(kernel(np.array([[2, 4]], np.int8), roi, scales, mode="linear",
                      coordinate_transformation_mode="asymmetric"))
    assert y.tolist() == [[2, 3, 4, 4]]
    big = np.full((1, 2), 2147483647, np.int32)
    assert (_first(kernel(big, roi, scales, mode="cubic")) == 2147483647).all()
    # nearest copies: integers stay valid whatever they are, the fill (extrapolation_value) must be whole
    tf_roi = np.array([0, 0.5, 1, 1.5], np.float32)
    kernel(np.array([[1, 2]], np.int8), tf_roi, scales, coordinate_transformation_mode="tf_crop_and_resize",
           extrapolation_value=-1.0)
    with pytest.raises(KernelValidationError, match="INTEGER"):
        kernel(np.array([[1, 2]], np.int8), tf_roi, scales, coordinate_transformation_mode="tf_crop_and_resize",
               extrapolation_value=0.5)


@pytest.mark.parametrize("since", [11, 13, 18, 19])
def test_resize_hook_draws_whole_integer_averages(since):
    spec, version = _spec_version("Resize", since)
    assert_mostly_valid(spec, version, 4, 10)
    ints = [c for c in op_cases("Resize", since, 80, types={"T1": "tensor(int32)"})
            if (dict(c.attributes).get("mode") or "nearest") != "nearest"]
    assert ints
    for case in ints:
        x = dict(case.inputs)["X"]
        assert np.abs(x.astype(np.int64)).max(initial=0) <= 2**40


# -- non-finite values read with weight 0 -----------------------------------------------------------

def test_resize_linear_rejects_non_finite_nearest_keeps_it():
    """onnxruntime: X = [[0.5, -1], [1.17, NaN]] resized by [1, 0.5] gives NaN in the first row (it
    reads the second row with weight 0); summing only taps of nonzero weight gives -0.25."""
    kernel = get_kernel("", "Resize", 19)
    x = np.array([[0.5, -1], [1.17, np.nan]], np.float32)
    scales = np.array([1.0, 0.5], np.float32)
    with pytest.raises(KernelValidationError, match="FINITE"):
        kernel(x, None, scales, mode="linear")
    x[1, 1] = np.inf
    assert _first(kernel(x, None, scales, mode="nearest")).shape == (2, 1)
    for since in (11, 19):
        for case in op_cases("Resize", since, 60, types={"T1": "tensor(float)"}):
            if (dict(case.attributes).get("mode") or "nearest") != "nearest":
                assert np.isfinite(dict(case.inputs)["X"]).all()


def test_grid_sample_rules():
    """A sample on a pixel next to inf: onnx.reference and opkit sum inf * 0 = NaN, onnxruntime
    skips the tap (inf): rule FINITE. Cubic of values near FLT_MAX overflows float32 partial sums:
    rule RANGE (|X| * 1.375 per spatial axis within the type's max)."""
    kernel = get_kernel("", "GridSample", 22)
    x = np.array([1.0, np.inf], np.float32).reshape(1, 1, 1, 2)
    grid = np.array([-0.5, 0.0], np.float32).reshape(1, 1, 1, 2)  # x = 0 exactly (align_corners 0, W 2)
    with pytest.raises(KernelValidationError, match="FINITE"):
        kernel(x, grid, mode="linear")
    assert _first(kernel(x, grid, mode="nearest")).ravel()[0] == 1.0
    big = np.full((1, 1, 2, 2), F32_MAX / 1.5, np.float32)  # * 1.375 ** 2 passes FLT_MAX
    with pytest.raises(KernelValidationError, match="RANGE"):
        kernel(big, grid, mode="cubic")
    kernel(big, grid, mode="linear")
    kernel(big / 2, grid, mode="cubic")
    for case in op_cases("GridSample", 22, 80, types={"T1": "tensor(float)", "T2": "tensor(float)"}):
        attrs, x = dict(case.attributes), dict(case.inputs)["X"]
        if (attrs.get("mode") or "linear") != "nearest":
            assert np.isfinite(x).all()
    spec, version = _spec_version("GridSample", 22)
    assert_mostly_valid(spec, version, 4, 10)


def test_roi_align_rules():
    kernel = get_kernel("", "RoiAlign", 16)
    rois = np.array([[0.0, 0.0, 1.0, 1.0]], np.float32)
    idx = np.array([0], np.int64)
    x = np.array([1.0, np.inf, 2.0, 3.0], np.float32).reshape(1, 1, 2, 2)
    for mode in ("avg", "max"):
        with pytest.raises(KernelValidationError, match="FINITE"):
            kernel(x, rois, idx, mode=mode)
    big = np.full((1, 1, 2, 2), F32_MAX, np.float32)
    # sampling_ratio 2: a bin sums 4 samples of FLT_MAX before dividing by 4
    with pytest.raises(KernelValidationError, match="RANGE"):
        kernel(big, rois, idx, mode="avg", sampling_ratio=2)
    assert _first(kernel(big, rois, idx, mode="max", sampling_ratio=2)).size == 1
    kernel(big / 4, rois, idx, mode="avg", sampling_ratio=2)
    for case in op_cases("RoiAlign", 16, 60):
        assert np.isfinite(dict(case.inputs)["X"].astype(np.float64)).all()
    spec, version = _spec_version("RoiAlign", 16)
    assert_mostly_valid(spec, version, 3, 10)


def test_conv_transpose_rejects_overflowing_partial_sums():
    """The sweep's case: an output summing X * -3 = -inf and FLT_MAX * 2 (2 * FLT_MAX, over the
    float32 max): NaN if that term rounds to inf first, -inf if a fused multiply-add keeps it. The
    -inf term alone, with small finite terms, is -inf in every order and stays valid."""
    kernel = get_kernel("", "ConvTranspose", 22)
    w = np.array([-3.0, 2.0], np.float32).reshape(1, 1, 2)
    x = np.array([np.inf, F32_MAX], np.float32).reshape(1, 1, 2)
    with pytest.raises(KernelValidationError, match="RANGE"):
        kernel(x, w, kernel_shape=[2])
    y = _first(kernel(np.array([np.inf, 1.0], np.float32).reshape(1, 1, 2), w, kernel_shape=[2]))
    assert y.ravel().tolist() == [-np.inf, np.inf, 2.0]  # inf * -3, inf * 2 - 3, 1 * 2
    spec, version = _spec_version("ConvTranspose", 22)
    assert_mostly_valid(spec, version, 3, 10)


def test_global_average_pool_rejects_overflowing_window_sums():
    """The sweep's window [.., -FLT_MAX, .., inf, .., FLT_MAX, inf, -FLT_MAX, ..]: summed in order it
    is inf, onnxruntime gives NaN (a partial sum -FLT_MAX - FLT_MAX = -inf meets inf)."""
    kernel = get_kernel("", "GlobalAveragePool", 22)
    x = np.array([1.0, -F32_MAX, np.inf, F32_MAX, -F32_MAX], np.float32).reshape(1, 1, 5)
    with pytest.raises(KernelValidationError, match="RANGE"):
        kernel(x)
    y = _first(kernel(np.array([1.0, F32_MAX / 2, np.inf], np.float32).reshape(1, 1, 3)))
    assert y.ravel()[0] == np.inf
    for case in op_cases("GlobalAveragePool", 22, 60, types={"T": "tensor(float)"}):
        x = dict(case.inputs)["X"].astype(np.float64)
        sums = np.sum(np.where(np.isfinite(x), np.abs(x), 0.0), axis=tuple(range(2, x.ndim)))
        assert (sums <= F32_MAX).all()
    spec, version = _spec_version("GlobalAveragePool", 22)
    assert_mostly_valid(spec, version, 3, 10)


# -- MaxPool Indices ---------------------------------------------------------------------------------

@pytest.mark.parametrize("since", [8, 10, 12, 22])
def test_max_pool_indices_point_at_the_max_not_at_minus_inf(since):
    """The sweep's window [-inf, -inf, -DBL_MAX]: the max is -DBL_MAX at index 2 (onnxruntime and
    onnx.reference say 2); opkit ranked -inf as -DBL_MAX and pointed at index 0. A window holding
    only -inf still points at its first real element, not at the padding."""
    kernel = get_kernel("", "MaxPool", since)
    big = np.finfo(np.float64).max
    x = np.array([-np.inf, -np.inf, -big, 1.0, 2.0, 3.0], np.float64).reshape(1, 1, 6)
    y, idx = kernel(x, kernel_shape=[3], strides=[3])
    assert y.ravel().tolist() == [-big, 3.0]
    assert idx.ravel().tolist() == [2, 5]
    x = np.array([-np.inf, -np.inf, 1.0], np.float32).reshape(1, 1, 3)
    y, idx = kernel(x, kernel_shape=[2], pads=[1, 0])
    assert idx.ravel().tolist() == [0, 0, 2]
