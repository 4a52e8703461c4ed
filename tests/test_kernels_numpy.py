"""Generated kernels against independent NumPy formulations (and the registry contract)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from opkit.kernels import KernelValidationError
from opkit.kernels.registry import available_kernels, get_kernel, kernel_for_opset

rng = np.random.default_rng(0)


def k(op, since, domain="ai.onnx"):
    fn = get_kernel(domain, op, since)
    assert fn is not None, f"no kernel {op}-{since}"
    return fn


def test_registry_contract():
    add = kernel_for_opset("", "Add", 18)  # '' is the protobuf spelling of ai.onnx
    assert add is get_kernel("ai.onnx", "Add", 14)
    out = add(np.ones(2, np.float32), np.ones(2, np.float32))
    assert isinstance(out, tuple) and len(out) == 1
    assert get_kernel("ai.onnx", "Add", 2) is None  # no such version
    assert get_kernel("ai.onnx", "NoSuchOp", 1) is None
    listed = available_kernels()
    assert ("ai.onnx", "Add", 14) in listed and listed == sorted(listed)
    assert len({op for d, op, _ in listed if d == "ai.onnx"}) >= 120


def test_variadic_inputs_are_passed_flat():
    a, b, c = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3))
    (total,) = k("Sum", 13)(a, b, c)
    np.testing.assert_allclose(total, a + b + c, rtol=1e-6)
    (mean,) = k("Mean", 13)(a, b)
    np.testing.assert_allclose(mean, (a + b) / 2, rtol=1e-6)


def test_optional_outputs_are_padded_with_none():
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y, mask = k("Dropout", 13)(x)
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == bool and mask.all()


def test_softmax_matches_definition():
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    (y,) = k("Softmax", 13)(x, axis=1)
    e = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    # opset < 13: coerced to 2-D at axis
    (y1,) = k("Softmax", 11)(x, axis=1)
    flat = e.reshape(2, 12)
    np.testing.assert_allclose(y1, (flat / flat.sum(axis=1, keepdims=True)).reshape(x.shape), rtol=1e-5)


def test_gemm_matches_loops():
    a = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal((5, 4)).astype(np.float32)
    c = rng.standard_normal((5,)).astype(np.float32)
    (y,) = k("Gemm", 13)(a, b, c, transA=1, transB=1, alpha=0.5, beta=2.0)
    ref = np.zeros((3, 5))
    for i in range(3):
        for j in range(5):
            ref[i, j] = 0.5 * sum(float(a[t, i]) * float(b[j, t]) for t in range(4)) + 2.0 * c[j]
    np.testing.assert_allclose(y, ref, rtol=1e-5)


def test_conv_matches_direct_loops():
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 2)).astype(np.float32)
    b = rng.standard_normal((3,)).astype(np.float32)
    (y,) = k("Conv", 22)(x, w, b, pads=[1, 0, 1, 1], strides=[2, 1])
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 1)))
    oh, ow = (5 + 2 - 3) // 2 + 1, (6 + 1 - 2) // 1 + 1
    ref = np.zeros((1, 3, oh, ow))
    for m in range(3):
        for i in range(oh):
            for j in range(ow):
                ref[0, m, i, j] = np.sum(xp[0, :, 2 * i:2 * i + 3, j:j + 2] * w[m]) + b[m]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


def test_maxpool_indices_row_major():
    x = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    y, idx = k("MaxPool", 12)(x, kernel_shape=[2, 2], strides=[2, 2])
    for i in range(2):
        for j in range(2):
            win = x[0, 0, 2 * i:2 * i + 2, 2 * j:2 * j + 2]
            assert y[0, 0, i, j] == win.max()
            r, c = np.unravel_index(np.argmax(win), (2, 2))
            assert idx[0, 0, i, j] == (2 * i + r) * 4 + (2 * j + c)


def test_topk_ties_prefer_lower_index():
    x = np.array([[3, 1, 3, 2, 3]], dtype=np.int64)
    values, indices = k("TopK", 11)(x, np.array([2]), axis=1)
    np.testing.assert_array_equal(values, [[3, 3]])
    np.testing.assert_array_equal(indices, [[0, 2]])
    values, indices = k("TopK", 11)(x, np.array([2]), axis=1, largest=0)
    np.testing.assert_array_equal(indices, [[1, 3]])


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_modes_match_numpy(mode):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    (y,) = k("Pad", 19)(x, np.array([1, 2, 1, 0]), np.array(0.5, np.float32), mode=mode)
    kwargs = {"constant_values": 0.5} if mode == "constant" else {}
    np.testing.assert_array_equal(y, np.pad(x, ((1, 1), (2, 0)), mode=mode, **kwargs))


def test_reductions_follow_axes_keepdims_and_noop():
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    (r,) = k("ReduceSum", 13)(x, np.array([0, -1]), keepdims=0)
    np.testing.assert_allclose(r, x.sum(axis=(0, 2)), rtol=1e-5)
    (r,) = k("ReduceL2", 18)(x, None)
    np.testing.assert_allclose(r, np.sqrt((x.astype(np.float64) ** 2).sum()).reshape(1, 1, 1), rtol=1e-5)
    (r,) = k("ReduceMax", 18)(x, np.array([], np.int64), noop_with_empty_axes=1)
    np.testing.assert_array_equal(r, x)
    (r,) = k("ReduceMean", 11)(x, axes=[1])  # opset 11: axes is an attribute
    np.testing.assert_allclose(r, x.mean(axis=1, keepdims=True), rtol=1e-5)


def test_elementwise_against_math():
    x = np.linspace(-2, 2, 9).astype(np.float64)
    (y,) = k("Erf", 13)(x)
    np.testing.assert_allclose(y, [math.erf(v) for v in x], rtol=1e-12)
    (y,) = k("Selu", 22)(x)
    ref = [1.050701 * (v if v > 0 else 1.6732632 * (math.exp(v) - 1)) for v in x]
    np.testing.assert_allclose(y, ref, rtol=1e-6)
    (y,) = k("Mod", 13)(np.array([-7, 7], np.int32), np.array([3, -3], np.int32))
    np.testing.assert_array_equal(y, [2, -2])  # integer Mod takes the divisor's sign


def test_cast_narrow_float_types():
    x = np.array([0.1, 1000.0, -1e9, np.nan], dtype=np.float32)
    (y,) = k("Cast", 24)(x, to=17)  # FLOAT8E4M3FN, saturating by default
    assert y.dtype == ml_dtypes.float8_e4m3fn
    assert float(y[1]) == 448.0 or float(y[1]) == float(np.float32(1000.0).astype(ml_dtypes.float8_e4m3fn))
    assert float(y[2]) == -448.0 and np.isnan(float(y[3]))
    (y,) = k("Cast", 24)(x, to=17, saturate=0)
    assert np.isnan(float(y[2]))
    # a number to a string: the text pins no format ("plain floating-point representation"), rule D1
    with pytest.raises(KernelValidationError, match=r"\[D1\]"):
        k("Cast", 24)(np.array([1.5, -2.0], np.float32), to=8)
    (back,) = k("Cast", 24)(np.array(["1.5", "-INF"], dtype=object), to=1)
    np.testing.assert_array_equal(back, np.array([1.5, -np.inf], np.float32))


def test_kernel_validation_through_registry():
    with pytest.raises(KernelValidationError) as info:
        k("Add", 14)(np.ones(2, np.float32), np.ones(2, np.int64))
    assert (info.value.op, info.value.version, info.value.rule) == ("Add", 14, "same-type:T")
    with pytest.raises(KernelValidationError) as info:
        k("Cast", 24)(np.ones(2, np.float32))
    assert info.value.rule == "required-attribute:to"


def test_sequence_kernels():
    a, b = np.arange(3, dtype=np.float32), np.ones((2, 2), np.float32)
    (seq,) = k("SequenceConstruct", 11)(a, b)
    assert isinstance(seq, list) and len(seq) == 2
    (seq2,) = k("SequenceInsert", 11)(seq, a, np.array(0))
    (n,) = k("SequenceLength", 11)(seq2)
    assert int(n) == 3 and n.dtype == np.int64
    (first,) = k("SequenceAt", 11)(seq2, np.array(-1))
    np.testing.assert_array_equal(first, b)
    (erased,) = k("SequenceErase", 11)(seq2)
    assert len(erased) == 2 and erased[-1] is a
    (empty,) = k("SequenceEmpty", 11)(dtype=1)
    assert empty == []
    (cat,) = k("ConcatFromSequence", 11)([a, a], axis=0, new_axis=1)
    np.testing.assert_array_equal(cat, np.stack([a, a]))


def test_global_lp_pool_and_seeded_random_ops():
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    (y,) = k("GlobalLpPool", 22)(x, p=3)
    np.testing.assert_allclose(y[..., 0, 0], (np.abs(x.astype(np.float64)) ** 3).sum(axis=(2, 3)) ** (1 / 3),
                               rtol=1e-5)
    (u1,) = k("RandomUniform", 22)(shape=[3, 4], seed=5.0, low=-1.0, high=2.0)
    (u2,) = k("RandomUniform", 22)(shape=[3, 4], seed=5.0, low=-1.0, high=2.0)
    np.testing.assert_array_equal(u1, u2)
    assert u1.dtype == np.float32 and u1.min() >= -1 and u1.max() <= 2
    (bern,) = k("Bernoulli", 22)(np.array([0.0, 1.0, 0.0, 1.0]), seed=1.0)
    np.testing.assert_array_equal(bern, [0.0, 1.0, 0.0, 1.0])


def test_integer_div_is_exact_and_truncates():
    """Found by the torch sweep: int64 quotients past 2**53 went through float64."""
    import numpy as np

    from opkit.kernels.registry import get_kernel

    div = get_kernel("ai.onnx", "Div", 14)
    a = np.array([3908255200822305589 * 2 + 1, -7, 7, -7], np.int64)
    b = np.array([2, 2, -2, -2], np.int64)
    (q,) = div(a, b)
    assert q.tolist() == [3908255200822305589, -3, -3, 3] and q.dtype == np.int64
