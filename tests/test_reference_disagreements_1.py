"""Disagreements between opkit's reference kernels and onnx.reference (issue #12), group 1
(Add .. GridSample): the fixes to opkit that the audit found necessary, each checked against the
ONNX text and real behaviour."""

from __future__ import annotations

import numpy as np
import pytest

from family_cases import op_cases
from opkit.kernels.registry import get_kernel
from opkit.kernels.runtime import KernelValidationError


def _one(y):
    return y[0] if isinstance(y, (tuple, list)) else y


# -- Erf-9 on integers: erf of a nonzero integer is no integer --------------------------------------

@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int64])
def test_erf9_rejects_nonzero_integers(dtype):
    """erf(4) = 0.99999998: the text does not say how that becomes an int8 (opkit truncated to 0,
    onnx.reference computes erf in float32, where it is 1.0, and gives 1). Rule INTEGER rejects the
    draw; zero (erf(0) = 0 in every reading) and floats stay valid."""
    kernel = get_kernel("", "Erf", 9)
    with pytest.raises(KernelValidationError, match="INTEGER"):
        kernel(np.array(4, dtype=dtype))
    np.testing.assert_array_equal(_one(kernel(np.zeros([2], dtype=dtype))), np.zeros([2], dtype=dtype))
    assert _one(kernel(np.array([4.0], dtype=np.float32))).item() == pytest.approx(0.99999998, abs=1e-7)


def test_erf9_integer_draws_are_zero():
    """The elementwise family draws integer Erf-9 inputs as zeros (so the rule keeps them valid)."""
    drawn = op_cases("Erf", 9, 15, types={"T": "tensor(int16)"})
    assert drawn
    for case in drawn:
        x = dict(case.inputs)["input"]
        assert x.dtype == np.int16 and not np.any(x)


# -- Gemm: beta = 0 with a non-finite C -------------------------------------------------------------

@pytest.mark.parametrize("version", [1, 6, 7, 9, 11, 13])
def test_gemm_beta_zero_needs_finite_c(version):
    """Y = alpha * A' * B' + beta * C with beta = 0 and C = -inf: 0 * -inf = NaN by the formula,
    but Gemm is BLAS GEMM, which does not read C when beta is 0 (onnx.reference gives 0, opkit
    gave NaN). Rule BETA rejects the draw; beta = 0 with a finite C, and beta != 0 with -inf, stay."""
    kernel = get_kernel("", "Gemm", version)
    a, b = np.ones([1, 1]), np.full([1, 1], 2.0)
    with pytest.raises(KernelValidationError, match="BETA"):
        kernel(a, b, np.array([[-np.inf]]), beta=0.0)
    assert _one(kernel(a, b, np.array([[5.0]]), beta=0.0)).item() == 2.0
    assert _one(kernel(a, b, np.array([[-np.inf]]), beta=1.0)).item() == -np.inf


# -- Einsum: contraction order decides between inf and NaN -----------------------------------------

@pytest.mark.parametrize("version", [12, 28])
def test_einsum_rejects_order_dependent_operands(version):
    """fa,f, with A = [[2, 1], [0, -2]], B = [2, 1], c = inf: NaN when each product is formed first
    (opkit), inf when the sum over f is taken first (onnx.reference); and 0 * -54 * -FLT_MAX:
    0 or NaN. Rule RANGE rejects both; finite, moderate operands stay."""
    kernel = get_kernel("", "Einsum", version)
    a = np.array([[2.0, 1.0], [0.0, -2.0]])
    with pytest.raises(KernelValidationError, match="RANGE"):
        kernel(a, np.array([2.0, 1.0]), np.array(np.inf), equation="fa,f,")
    big = np.array([[1.0, -3.4028235e38], [1.0, 1.0]], dtype=np.float32)
    with pytest.raises(KernelValidationError, match="RANGE"):
        kernel(np.array(0.0, np.float32), np.array(-54.3, np.float32), big, equation=",,fb")
    y = _one(kernel(a, np.array([2.0, 1.0]), np.array(3.0), equation="fa,f,"))
    np.testing.assert_array_equal(y, [12.0, 0.0])
    np.testing.assert_array_equal(_one(kernel(np.array([1, 2], np.int8), equation="i->")), 3)


# -- Conv / CausalConvWithState: finite products that overflow ---------------------------------------

@pytest.mark.parametrize("version", [1, 11, 22])
def test_conv_rejects_overflowing_partial_sums(version):
    """X row [-FLT_MAX, -FLT_MAX], W [9.53, -39.58]: -inf + inf = NaN term by term, -inf with a fused
    accumulation (onnx.reference). Rule RANGE rejects it; inf inputs with small weights stay (inf
    propagates the same in every order)."""
    kernel = get_kernel("", "Conv", version)
    w = np.array([[[[9.53, -39.58]]]], dtype=np.float32)
    x = np.full([1, 1, 1, 2], -3.4028235e38, dtype=np.float32)
    with pytest.raises(KernelValidationError, match="RANGE"):
        kernel(x, w, None, kernel_shape=[1, 2])
    y = _one(kernel(np.array([[[[np.inf, 1.0]]]], dtype=np.float32), w, None, kernel_shape=[1, 2]))
    assert y.item() == np.inf


def test_causal_conv_rejects_overflowing_partial_sums():
    """-2 * FLT_MAX + 1.75 + -3 * -inf: NaN in float32 (onnx.reference), inf in float64 (opkit)."""
    kernel = get_kernel("", "CausalConvWithState", 27)
    w = np.array([[[-2.0, -1.0, -3.0]]], dtype=np.float32)
    x = np.array([[[3.4028235e38, -1.75, -np.inf]]], dtype=np.float32)
    with pytest.raises(KernelValidationError, match="RANGE"):
        kernel(x, w, None, None)
    y, _ = kernel(np.array([[[1.0, -1.75, -np.inf]]], dtype=np.float32), w, None, None)
    assert y[0, 0, 2] == np.inf


# -- BatchNormalization: statistics or scale * (X - mean) that overflow ------------------------------

def test_batch_norm_rejects_order_dependent_overflow():
    """Test mode, X = FLT_MAX, scale -2, mean -56.3, var 31.8: (X - mean) / sqrt(var + eps) * scale
    is -1.2e38, scale * (X - mean) / sqrt(var + eps) is -inf in float32 (onnx.reference). Training
    mode with X values near FLT_MAX: the batch variance overflows. Rule RANGE rejects both; a
    moderate X stays."""
    f32 = np.float32
    one = np.array([1.0], f32)
    bn15 = get_kernel("", "BatchNormalization", 15)
    x = np.array([[3.4028235e38]], f32)
    with pytest.raises(KernelValidationError, match="RANGE"):
        bn15(x, np.array([-2.0], f32), one, np.array([-56.3], f32), np.array([31.8], f32), training_mode=0)
    with pytest.raises(KernelValidationError, match="RANGE"):
        bn15(np.array([[3.0e38], [-3.0e38]], f32), one, one, one, one, training_mode=1)
    y = _one(bn15(np.array([[1.0], [3.0]], f32), one, one, one, one, training_mode=1))
    np.testing.assert_allclose(y.ravel(), [0.0, 2.0], atol=1e-4)
    bn9 = get_kernel("", "BatchNormalization", 9)
    with pytest.raises(KernelValidationError, match="RANGE"):
        bn9(x, np.array([-2.0], f32), one, np.array([-56.3], f32), np.array([31.8], f32))


def test_saturating_cast_of_e5m2_infinity_to_e5m2_gives_flt_max():
    """Cast's float8 table: "-Inf | ... | -FLT_MAX" for E5M2 with saturate = 1, for every float x,
    E5M2 itself included (CastLike-21 of an e5m2 -inf kept -inf; onnx.reference gives -57344)."""
    import ml_dtypes

    from opkit.kernels.runtime import cast_to

    x = np.array([-np.inf, np.inf, 1.5, np.nan], dtype=ml_dtypes.float8_e5m2)
    y = cast_to(x, "float8e5m2", saturate=1)
    assert [float(v) for v in y[:3]] == [-57344.0, 57344.0, 1.5] and np.isnan(float(y[3]))
    kept = cast_to(x, "float8e5m2", saturate=0)
    assert [float(v) for v in kept[:3]] == [-np.inf, np.inf, 1.5]
