"""Audit of onnxruntime findings for Attention and the quantization ops (issue #12): the fixes to
opkit that the audit found necessary, each checked against real behaviour."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from family_cases import op_cases


# -- Attention: sqrt(scale) is computed in float32, then cast to T1 --------------------------------

def _attention_body(q, k, v, **attrs):
    """Attention-23 evaluated through its ONNX function body (the context-dependent expansion for
    these input types), node by node with onnx.reference."""
    from onnx.reference import ReferenceEvaluator

    elem = helper.np_dtype_to_tensor_dtype(q.dtype)
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y", "", "", "qk"], **attrs)
    schema = onnx.defs.get_schema("Attention", 23)
    types = [helper.make_tensor_type_proto(elem, a.shape).SerializeToString() for a in (q, k, v)]
    body = onnx.FunctionProto()
    body.ParseFromString(schema.get_context_dependent_function(node.SerializeToString(), types))
    graph = helper.make_graph(list(body.node), "body",
                              [helper.make_tensor_value_info(n, elem, None) for n in ("Q", "K", "V")],
                              [helper.make_tensor_value_info(n, elem, None) for n in ("Y", "qk_matmul_output")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    return ReferenceEvaluator(model).run(None, {"Q": q, "K": k, "V": v})


@pytest.mark.parametrize("scale", [0.5, None])
def test_attention_double_scales_with_a_float32_sqrt(scale):
    """The function body computes ScaleFactorSqrt = Sqrt(scale) on a float constant (the default
    scale 1 / sqrt(head_size) too) and casts it to T1 afterwards, so a double Attention scales Q and
    K by float32(sqrt(scale)). The kernel took the square root in float64 and expected 2.0000000000000004
    for Q = K = [2], scale = 0.5, where the body (and onnxruntime) give 1.9999999315429164."""
    from opkit.kernels.registry import get_kernel

    kernel = get_kernel("", "Attention", 23)
    q = k = v = np.full([1, 1, 1, 2 if scale is None else 1], 2.0)
    attrs = {"qk_matmul_output_mode": 0} | ({} if scale is None else {"scale": scale})
    y, _, _, qk = kernel(q, k, v, None, None, None, **attrs)
    body_y, body_qk = _attention_body(q, k, v, **({} if scale is None else {"scale": scale}))
    sq = np.float64(np.sqrt(np.float32(scale if scale is not None else np.float32(1) / np.sqrt(np.float32(2)))))
    np.testing.assert_array_equal(qk, body_qk)
    np.testing.assert_array_equal(qk.ravel(), [(2 * sq) * (2 * sq) * q.shape[-1]])
    np.testing.assert_array_equal(y, body_y)
    if scale == 0.5:
        assert qk.item() == 1.9999999315429164


def test_attention_bfloat16_scale_is_rounded_to_bfloat16():
    """T1 = bfloat16: the body multiplies Q and K by Cast<to: bfloat16>(Sqrt(scale)), each product
    rounded to bfloat16; the kernel multiplied by the unrounded square root. Compared with that
    evaluation step by step."""
    import ml_dtypes

    from opkit.kernels.registry import get_kernel

    bf = ml_dtypes.bfloat16
    kernel = get_kernel("", "Attention", 23)
    q = np.array([[[[11.0, 5.0]]]], bf)
    k = np.array([[[[7.0, 1.0]]]], bf)
    _, _, _, qk = kernel(q, k, q, None, None, None, scale=0.3)
    sq = np.float32(np.sqrt(np.float32(0.3))).astype(bf).astype(np.float32)  # Cast <to: bfloat16>
    qs = (q.astype(np.float32) * sq).astype(bf).astype(np.float32)
    ks = (k.astype(np.float32) * sq).astype(bf).astype(np.float32)
    want = (qs * ks).sum(-1).astype(bf)
    np.testing.assert_array_equal(qk.astype(np.float32).ravel(), want.astype(np.float32).ravel())


# -- QuantizeLinear: NaN has no integer quantization ------------------------------------------------

@pytest.mark.parametrize("since", [10, 13, 19, 21, 23, 24, 25])
def test_quantize_nan_to_integer_is_rejected(since):
    """y = saturate((x / y_scale) + y_zero_point) rounds and saturates numbers; the text does not
    say what NaN gives (opkit's kernel gave 0, onnxruntime and onnx.reference the type's minimum,
    through a float-to-int conversion C and NumPy leave undefined). The kernel rejects such a call
    (rule "x / y_scale is not NaN" for integer outputs) and the generator does not draw one."""
    from opkit.kernels import KernelValidationError
    from opkit.kernels.registry import get_kernel

    kernel = get_kernel("", "QuantizeLinear", since)
    x = np.array([1.0, np.nan], np.float32)
    zp = np.array(0, np.int8)
    with pytest.raises(KernelValidationError, match="not NaN"):
        kernel(x, np.array(2.0, np.float32), zp)
    for scale in (0.0, np.inf):  # 0 / 0 and inf / inf are NaN too
        with pytest.raises(KernelValidationError, match="not NaN"):
            kernel(np.array([0.0, np.inf], np.float32), np.array(scale, np.float32), zp)
    np.testing.assert_array_equal(kernel(np.array([2.0, 3.0], np.float32), np.array(2.0, np.float32), zp)[0], [1, 2])
    for case in op_cases("QuantizeLinear", since, 60):
        inputs = dict(case.inputs)
        out = dict(case.types).get("T3", dict(case.types).get("T2", ""))
        if "float8" not in out:
            assert not np.isnan(np.asarray(inputs["x"], dtype=np.float64)).any(), case


def test_quantize_nan_to_float8_stays_defined():
    """float8 outputs keep NaN: the Cast tables (which the float8 quantization follows) map NaN to
    NaN, so the rule leaves them alone."""
    import ml_dtypes

    from opkit.kernels.registry import get_kernel

    kernel = get_kernel("", "QuantizeLinear", 21)
    y = kernel(np.array([np.nan, 2.0], np.float32), np.array(2.0, np.float32),
               np.array(0, ml_dtypes.float8_e4m3fn))[0]
    assert np.isnan(y.astype(np.float32)[0]) and y.astype(np.float32)[1] == 1.0


@pytest.mark.parametrize("code, top", [(5, 32767), (21, 15), (22, 7), (3, 127)])
def test_quantize_saturates_overflowing_quotients_to_the_top(code, top):
    """The findings that stay charged to onnxruntime: a quotient beyond the integer range
    (FLT_MAX / 2, +inf) saturates to the type's maximum. opkit's kernel does so; onnxruntime's
    blocked / 4-bit tail / float16 paths convert to int32 before clamping and give the minimum."""
    from opkit.kernels.registry import get_kernel

    kernel = get_kernel("", "QuantizeLinear", 21)
    x = np.array([np.finfo(np.float32).max, np.inf, -np.finfo(np.float32).max], np.float32)
    y = kernel(x, np.array(2.0, np.float32), None, output_dtype=code)[0]
    assert y.astype(np.int64).tolist() == [top, top, -top - 1 if code in (5, 22, 3) else 0]


def test_quantize_float16_scale_divides_in_float16():
    """Opset 23+: "The type of y_scale determines the precision of the division". -117.375 /
    0.008255 is -14218.65 exactly but -14216 in float16 (spacing 8 there), which rounds to -14216;
    onnxruntime divides in float32 and gives -14219."""
    from opkit.kernels.registry import get_kernel

    kernel = get_kernel("", "QuantizeLinear", 23)
    y = kernel(np.array([-117.375], np.float16), np.array(0.0082550048828125, np.float16), None, output_dtype=5)[0]
    assert y.tolist() == [-14216]
