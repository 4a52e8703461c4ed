"""The quantization family hook draws valid cases (opkit.cases.families.quantization)."""

from __future__ import annotations

import numpy as np
import pytest

from opkit.conformance import harness
from opkit.kernels.runtime import KernelValidationError

from family_cases import kernel_versions, op_cases, assert_mostly_valid

FAMILY = "quantization"
OPS = ["QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "QLinearMatMul"]


def _versions():
    return kernel_versions(OPS)


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert version.family == FAMILY
    assert_mostly_valid(spec, version, 3, 8)


def _drawn(op, since, n=80, types=None):
    return [(dict(case.attributes), dict(case.inputs), case.type_map) for case in op_cases(op, since, n, seed_value=1, types=types)]


def test_linear_granularities():
    for op, (x, s, z) in (("QuantizeLinear", ("x", "y_scale", "y_zero_point")),
                          ("DequantizeLinear", ("x", "x_scale", "x_zero_point"))):
        drawn = _drawn(op, 21, 150)
        blocked = [(a, i) for a, i, _ in drawn if a.get("block_size")]
        per_axis = [(a, i) for a, i, _ in drawn if not a.get("block_size") and np.size(i[s]) > 1]
        per_tensor = [(a, i) for a, i, _ in drawn if np.size(i[s]) == 1 and not a.get("block_size")]
        assert blocked and per_axis and per_tensor
        for a, i in blocked:
            axis = a.get("axis", 1) % i[x].ndim
            b = a["block_size"]
            assert i[s].shape == tuple(-(-d // b) if k == axis else d for k, d in enumerate(i[x].shape))
            assert i[s].size != 1  # a 1-element scale would read as per-tensor
        assert any(a["block_size"] >= 16 for a, _ in blocked)
        for a, i in per_axis:
            assert i[s].shape == (i[x].shape[a.get("axis", 1)],)
        assert any(a.get("axis", 1) < 0 for a, _ in per_axis)
        assert any(i[x].ndim == 0 for _, i in per_tensor)
        for _, i in per_axis + blocked:
            assert i[z] is None or i[z].shape == i[s].shape
        for _, i in per_tensor:
            assert i[z] is None or i[z].size == 1
        assert any(i[z] is not None and i[z].shape != i[s].shape for _, i in per_tensor)
        for _, i in per_tensor + per_axis + blocked:
            assert np.all(np.asarray(i[s], np.float64) > 0)
        assert any(i[z] is None for _, i, _ in drawn) and any(i[z] is not None for _, i, _ in drawn)


def test_zero_points():
    # without output_dtype, a quantize to int8 needs the zero point (else it outputs uint8)
    assert all(i["y_zero_point"] is not None for _, i, _ in _drawn("QuantizeLinear", 13, 40, {"T2": "tensor(int8)"}))
    for _, i, _ in _drawn("QuantizeLinear", 19, 40, {"T2": "tensor(float8e4m3fn)"}):
        assert not np.any(np.asarray(i["y_zero_point"], np.float32))
    for _, i, _ in _drawn("DequantizeLinear", 21, 40, {"T1": "tensor(int32)"}):
        assert i["x_zero_point"] is None or not np.any(i["x_zero_point"])


def test_matmul_shapes():
    drawn = _drawn("QLinearMatMul", 10, 120)
    for _, i, _ in drawn:
        np.broadcast_shapes(i["a"].shape[:-2], i["b"].shape[:-2])
        assert i["a"].shape[-1] == i["b"].shape[0 if i["b"].ndim == 1 else -2]
        assert i["a_scale"].shape == i["a_zero_point"].shape and i["b_scale"].shape == i["b_zero_point"].shape
    assert any(i["a_scale"].size > 1 for _, i, _ in drawn)  # per row
    assert any(i["b_scale"].size > 1 for _, i, _ in drawn)  # per column
    assert any(i["a"].ndim >= 3 and i["a_scale"].ndim == i["a"].ndim for _, i, _ in drawn)
    assert any(i["a"].ndim == 1 for _, i, _ in drawn) and any(i["b"].ndim == 1 for _, i, _ in drawn)
    drawn = _drawn("MatMulInteger", 10, 200)
    assert any(i["a_zero_point"] is None for _, i, _ in drawn)
    assert any(i["b_zero_point"] is not None and i["b_zero_point"].size > 1 for _, i, _ in drawn)


def test_rules_reject():
    q = harness.oracle("ai.onnx", "QuantizeLinear", 21)
    x = np.zeros((2, 6), np.float32)
    q(x, np.ones((2, 3), np.float32), block_size=2, axis=1)  # blocked: ceil(6/2) = 3
    with pytest.raises(KernelValidationError, match="V5"):
        q(x, np.ones((2, 2), np.float32), block_size=2, axis=1)
    with pytest.raises(KernelValidationError, match="V4"):
        q(x, np.ones((5,), np.float32), axis=1)
    mm = harness.oracle("ai.onnx", "QLinearMatMul", 21)
    a = np.ones((2, 3, 4), np.uint8)
    b = np.ones((4, 5), np.uint8)
    f = np.float32
    out, = mm(a, np.full((2, 3, 1), 0.5, f), np.zeros((2, 3, 1), np.uint8), b, f(0.5), np.uint8(0), f(1.0), np.uint8(0))
    assert out.shape == (2, 3, 5) and np.all(out == 1)  # N-D per-row scale (the kernel used to reshape it flat)


def test_dynamic_quantize_nan_is_undefined():
    """One NaN in x: y_scale is (max(0, max(x)) - min(0, min(x))) / 255, and whether NaN is a
    maximum the text does not say (onnxruntime gives a NaN y_scale; opkit's kernel, through
    Python's min and max, 0): the sweep charged onnxruntime with it. Rule NAN, and the hook
    draws no NaN."""
    from opkit.kernels.registry import get_kernel

    kernel = get_kernel("", "DynamicQuantizeLinear", 11)
    with pytest.raises(KernelValidationError, match="NAN"):
        kernel(np.array([1.0, -2.0, np.nan], np.float32))
    assert kernel(np.array([1.0, -2.0, np.inf], np.float32))[1] is not None  # infinities stay valid
    drawn = _drawn("DynamicQuantizeLinear", 11, 120)
    assert drawn and not any(np.isnan(inputs["x"]).any() for _, inputs, _ in drawn)
    assert any(np.isinf(inputs["x"]).any() for _, inputs, _ in drawn)
