"""com.microsoft quantized ops: kernels against hand-computed values (many taken from
onnxruntime's contrib-op tests), and the family hooks' cases against the specs' rules."""

from __future__ import annotations

import numpy as np
import pytest

from opkit.kernels.registry import get_kernel
from opkit.kernels.runtime import KernelValidationError

from family_cases import assert_mostly_valid, kernel_versions, op_cases

MS = "com.microsoft"
OPS = ["QuantizeLinear", "DequantizeLinear", "QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu",
       "QLinearSoftmax", "QLinearConcat", "QLinearWhere", "QLinearGlobalAveragePool", "QLinearAveragePool",
       "QLinearReduceMean", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "MulInteger", "ReduceSumInteger",
       "MatMulInteger16", "QGemm", "QLinearConv"]
f32, u8, i8 = np.float32, np.uint8, np.int8


def k(op):
    return get_kernel(MS, op, 1)


# --------------------------------------------------------------------------------------------
# kernels against values computed by hand


def test_quantize_rounds_half_to_even_and_saturates():
    # onnxruntime's QuantizeLinear_per_tensor_float_uint8 (scale 2, zero point 128)
    x = np.array([0, 2, 3, -3, 2.9, -2.9, 3.1, -3.1, 254, -256, 1000, -1000], f32)
    (y,) = k("QuantizeLinear")(x, f32(2), u8(128))
    assert y.tolist() == [128, 129, 130, 126, 129, 127, 130, 126, 255, 0, 255, 0]


def test_quantize_float16_divides_as_the_exact_quotient():
    # 174.375 / 0.0091095 = 19142.11: a float16 division would give 19136 (+2 = 19138)
    (y,) = k("QuantizeLinear")(np.array([174.375], np.float16), np.array([0.0091094970703125], np.float16),
                               np.array([2], np.int16), axis=0)
    assert y.tolist() == [19144]


def test_quantize_per_axis_needs_axis():
    with pytest.raises(KernelValidationError):
        k("QuantizeLinear")(np.zeros((2, 3), f32), np.array([1, 2], f32), np.array([0, 0], u8))
    (y,) = k("QuantizeLinear")(np.array([[1.5, 200], [10, -300]], f32), np.array([1, 4], f32),
                               np.array([0, -10], i8), axis=0)
    assert y.tolist() == [[2, 127], [-8, -85]]


def test_dequantize_per_axis():
    x = np.array([[0, 1, 2, 3], [0, 2, 4, 6], [0, 10, 20, 30]], i8)
    (y,) = k("DequantizeLinear")(x, np.array([1, 2, 4, 8], f32), np.array([0, -10, -20, -30], i8), axis=1)
    assert y.tolist() == [[0, 22, 88, 264], [0, 24, 96, 288], [0, 40, 160, 480]]


def test_qlinear_add_and_mul_round_in_float32():
    args = (np.array([129, 255, 0], u8), f32(1 / 32), u8(128), np.array([130, 255, 0], u8), f32(1 / 32), u8(128))
    (c,) = k("QLinearAdd")(*args, f32(1 / 16), u8(128))
    assert c.tolist() == [130, 255, 0]  # 3/32 = 1.5 steps of 1/16: even 2
    (c,) = k("QLinearMul")(np.array([[3, 5]], i8), f32(0.5), i8(0), np.array([[1], [-1]], i8), f32(1), i8(0),
                           f32(1), i8(0))
    assert c.tolist() == [[2, 2], [-2, -2]]  # 1.5 -> 2, 2.5 -> 2


def test_qlinear_leaky_relu_follows_the_runtime_not_the_old_test():
    x = np.array([17, -18], i8)
    (y,) = k("QLinearLeakyRelu")(x, f32(0.25), i8(0), f32(0.1), i8(-100), alpha=0.1)
    assert y.tolist() == [-58, -104]  # 42.5 -> 42 (half to even)


def test_qlinear_sigmoid_midpoint():
    (y,) = k("QLinearSigmoid")(np.array([3, 127], i8), f32(0.05), i8(3), f32(1 / 256), i8(-128))
    assert y.tolist() == [0, 127]  # sigmoid(0) = 0.5 = 128 steps, then saturation


def test_qlinear_softmax_opset_coercion():
    x = np.array([[[0, 10], [20, 30]], [[-5, -5], [-5, -5]]], i8)
    (new,) = k("QLinearSoftmax")(x, f32(0.05), None, f32(1 / 256), i8(-128), opset=13, axis=1)
    (old,) = k("QLinearSoftmax")(x, f32(0.05), None, f32(1 / 256), i8(-128), opset=12, axis=1)
    assert old[1].tolist() == [[-64, -64], [-64, -64]]  # 4 equal values share 256 steps
    assert new[1].tolist() == [[0, 0], [0, 0]]  # 2 equal values along axis 1 only
    assert not np.array_equal(new, old)


def test_qlinear_concat_requantizes_each_input():
    # onnxruntime's QLinearConcat3InputsU8, first two inputs
    (y,) = k("QLinearConcat")(f32(0.25), u8(128), np.array([[[128, 126, 131]], [[123, 255, 0]]], u8), f32(1), u8(128),
                              np.array([[[128, 127, 129], [125, 131, 124]], [[132, 122, 135], [120, 255, 0]]], u8),
                              f32(0.5), u8(128), axis=1)
    assert y.tolist() == [[[128, 120, 140], [128, 126, 130], [122, 134, 120]],
                          [[108, 255, 0], [136, 116, 142], [112, 255, 0]]]


def test_qlinear_where_requantizes_the_selected_value():
    (z,) = k("QLinearWhere")(np.array([True, False, True]), np.array([1, 3, 5], i8), f32(0.5), i8(0),
                             np.array([-1, -3, 7], i8), f32(1), i8(2), f32(1), i8(1))
    assert z.tolist() == [1, -4, 3]


def test_qlinear_pools():
    x = np.array([[[[128, 129], [130, 131]]]], u8)
    (y,) = k("QLinearGlobalAveragePool")(x, f32(1), u8(128), f32(1), u8(200))
    assert y.tolist() == [[[[202]]]]  # mean 1.5 -> 2
    (y,) = k("QLinearAveragePool")(np.array([[[9, 12, -6]]], i8), f32(0.5), i8(0), f32(0.5), i8(1),
                                   kernel_shape=[3], pads=[1, 1], count_include_pad=1)
    assert y.tolist() == [[[8, 6, 3]]]
    (y,) = k("QLinearAveragePool")(np.array([[[9, 12, -6]]], i8), f32(0.5), i8(0), f32(0.5), i8(1),
                                   kernel_shape=[3], pads=[1, 1], count_include_pad=0)
    assert y.tolist() == [[[11, 6, 4]]]  # edges divided by 2: 10.5 -> 10 (+1), 3 (+1)


def test_qlinear_reduce_mean():
    (y,) = k("QLinearReduceMean")(np.array([[10, 11, 12], [12, 13, 14]], u8), f32(0.5), u8(8), f32(1), u8(0),
                                  axes=[1], keepdims=1)
    assert y.tolist() == [[2], [2]]


def test_integer_matmuls():
    (y,) = k("MatMulIntegerToFloat")(np.array([[1, 2], [-3, 4]], i8), np.array([[10, 20], [-10, 5]], i8), f32(1),
                                     np.array([1, 0.1], f32))
    np.testing.assert_allclose(y, [[-10, 3], [-70, -4]], rtol=1e-6)
    (y,) = k("DynamicQuantizeMatMul")(np.array([[-1.0, 0.5], [1.55, 0.0]], f32), np.array([[2, -4], [6, 8]], i8),
                                      f32(0.5))
    np.testing.assert_allclose(y, [[0.5, 4.0], [1.55, -3.1]], rtol=1e-6)
    (y,) = k("MatMulInteger16")(np.array([[-32768, -32768]], np.int16), np.array([[-32768], [-32768]], np.int16))
    assert y.dtype == np.int32 and y.tolist() == [[-2**31]]  # 2^31 wraps in 32 bits
    (c,) = k("MulInteger")(np.array([127], i8), i8(2), np.array([-128], i8), i8(-1))
    assert c.tolist() == [-15875]
    (r,) = k("ReduceSumInteger")(np.array([[255, 255, 255]], u8), axes=[1], keepdims=0)
    assert r.dtype == np.uint32 and r.tolist() == [765]


def test_qgemm_float_and_quantized():
    (y,) = k("QGemm")(np.array([[5], [0]], i8), f32(0.5), i8(0), np.array([[1, 9], [-3, 9]], i8), f32(1), i8(0),
                      None, f32(1), i8(10), transA=1, transB=1)
    assert y.tolist() == [[12, 2]]  # 2.5 -> 2, -7.5 -> -8
    (y,) = k("QGemm")(np.array([[129, 130]], u8), f32(0.5), u8(128), np.array([[1], [4]], i8), f32(1), i8(0),
                      np.array([[2]], np.int32), alpha=2.0)
    assert y.dtype == np.float32 and y.tolist() == [[11.0]]  # 2 * 0.5 * (1 + 8 + 2)


def test_qlinear_conv_channels_last_equals_channels_first():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (1, 2, 4, 4)).astype(u8)
    w = rng.integers(-128, 128, (3, 2, 2, 2)).astype(i8)
    args = (f32(0.02), u8(120), w, np.array([0.01, 0.02, 0.03], f32), i8(0), f32(0.05), u8(100))
    (first,) = k("QLinearConv")(x, *args)
    (last,) = k("QLinearConv")(np.moveaxis(x, 1, -1), *args, channels_last=1)
    assert np.array_equal(np.moveaxis(last, -1, 1), first)


def test_rules_reject_invalid_calls():
    with pytest.raises(KernelValidationError):  # a zero output scale
        k("QLinearAdd")(np.zeros(2, u8), f32(1), None, np.zeros(2, u8), f32(1), None, f32(0))
    with pytest.raises(KernelValidationError):  # a mean over an empty axis
        k("QLinearReduceMean")(np.zeros((2, 0), u8), f32(1), None, f32(1), None, axes=[1], keepdims=0)
    with pytest.raises(KernelValidationError):  # a non-positive kernel
        k("QLinearAveragePool")(np.zeros((1, 1, 3), u8), f32(1), None, f32(1), None, kernel_shape=[0])


# --------------------------------------------------------------------------------------------
# the hooks draw valid cases


@pytest.mark.parametrize("spec,version", kernel_versions(OPS, domain=MS))
def test_valid_rate(spec, version):
    assert version.family == "quantization"
    assert_mostly_valid(spec, version, 2, 6)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearSigmoid", "QLinearSoftmax", "QLinearWhere", "QGemm",
                                "QLinearAveragePool"])
def test_scales_positive_and_zero_points_in_range(op):
    types = {"T": "tensor(float)", "TA": "tensor(uint8)", "TB": "tensor(int8)", "TC": "tensor(int32)",
             "TY": "tensor(uint8)", "TYZ": "tensor(uint8)"} if op == "QGemm" else None
    drawn = op_cases(op, 1, 40, domain=MS, types=types)
    assert drawn
    for case in drawn:
        for name, arr in case.inputs:
            if arr is None or not hasattr(arr, "dtype"):
                continue
            if "scale" in name.lower():
                assert np.all(np.asarray(arr, np.float64) > 0) and np.all(np.isfinite(np.asarray(arr, np.float64)))
            if "zero_point" in name.lower():
                info = np.iinfo(arr.dtype)
                assert np.all((arr >= info.min) & (arr <= info.max))
                assert arr.ndim == 0 or (op == "QGemm" and name == "b_zero_point" and arr.ndim == 1)


def test_quantize_linear_granularities():
    drawn = op_cases("QuantizeLinear", 1, 60, domain=MS)
    per_axis = [c for c in drawn if dict(c.attributes).get("axis") is not None]
    per_tensor = [c for c in drawn if dict(c.attributes).get("axis") is None]
    assert per_axis and per_tensor
    for c in per_axis:
        i, a = dict(c.inputs), dict(c.attributes)
        assert i["y_scale"].shape == (i["x"].shape[a["axis"]],)
    for c in per_tensor:
        assert np.size(dict(c.inputs)["y_scale"]) == 1


def test_ai_onnx_quantization_hook_is_unchanged():
    # the com.microsoft branch must not catch ai.onnx ops of the same name
    drawn = op_cases("QuantizeLinear", 21, 60)
    assert any(dict(c.attributes).get("block_size") for c in drawn)


def test_a_heterogeneous_variadic_input_types_each_argument_alone():
    """QLinearConcat's inputs are (tensor, scale, zero point) triples of one variadic parameter:
    typing them all as the first (uint8) made every model invalid (onnxruntime: 8 of 14 errors)."""
    import onnx

    from opkit.cases.onnx_model import build
    from opkit.conformance import harness

    spec = harness.load_op("com.microsoft", "QLinearConcat")
    version = spec.versions[-1]
    case, _ = harness.example_case(spec, version, version.examples[0])
    model = build(case, version).model
    declared = {v.name: v.type.tensor_type.elem_type for v in model.graph.input}
    declared.update({t.name: t.data_type for t in model.graph.initializer})
    kinds = {declared[n] for n in model.graph.node[0].input[2:] if n}
    assert onnx.TensorProto.FLOAT in kinds and len(kinds) >= 2
