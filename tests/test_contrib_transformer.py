"""com.microsoft transformer and fused ops: kernels against hand-computed values, and the family
hooks' cases satisfy the rules (every drawn case is valid)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from opkit.kernels import KernelValidationError
from opkit.kernels.registry import get_kernel

from family_cases import assert_mostly_valid, kernel_versions, op_cases

MS = "com.microsoft"
OPS = ["Gelu", "FastGelu", "QuickGelu", "BiasGelu", "BiasAdd", "BiasSoftmax", "FusedMatMul", "TransposeMatMul",
       "FusedGemm", "GemmFastGelu", "SkipLayerNormalization", "SkipSimplifiedLayerNormalization",
       "EmbedLayerNormalization", "RotaryEmbedding", "FusedConv", "Attention", "MultiHeadAttention",
       "GroupQueryAttention", "QAttention"]


def _k(op):
    return get_kernel(MS, op, 1)


def _phi(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def test_gelu_is_exact_erf_gelu():
    x = np.array([-2.0, -0.5, 0.0, 1.0, 3.0])
    (y,) = _k("Gelu")(x)
    assert np.allclose(y, [v * _phi(v) for v in x], rtol=1e-15, atol=0)
    # the tanh approximation differs by ~1e-4 near |x| = 2: the kernel is not it
    assert abs(y[0] - (-2.0) * 0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * (-2 + 0.044715 * -8)))) > 1e-5


def test_fast_gelu_adds_bias_along_the_last_axis_and_uses_the_text_constants():
    x = np.array([[0.8, -0.5], [0.5, 0.2]])
    b = np.array([-0.5, 0.6])
    (y,) = _k("FastGelu")(x, b)
    s = x + b
    assert np.allclose(y, 0.5 * s * (1 + np.tanh(0.797885 * s + 0.035677 * s ** 3)), rtol=1e-15)
    with pytest.raises(KernelValidationError, match="C1"):
        _k("FastGelu")(x, np.array([1.0, 2.0, 3.0]))  # bias of another length
    with pytest.raises(KernelValidationError, match="C1"):
        _k("FastGelu")(x, np.array([[1.0, 2.0]]))  # bias must be 1-D


def test_quick_gelu_alpha():
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    (y,) = _k("QuickGelu")(x, alpha=1.0)
    assert np.allclose(y, x / (1 + np.exp(-x)), rtol=1e-6)
    (y,) = _k("QuickGelu")(x)
    assert np.allclose(y, x / (1 + np.exp(-np.float32(1.702) * x)), rtol=1e-6)


def test_bias_gelu_and_bias_add():
    a = np.array([[1.0, -1.0, 0.0]])
    b = np.array([0.5, 0.5, -1.0])
    (c,) = _k("BiasGelu")(a, b)
    assert np.allclose(c, [v * _phi(v) for v in (a + b).ravel()], rtol=1e-15)
    x = np.arange(6.0, dtype=np.float32).reshape(1, 2, 3)
    b = b.astype(np.float32)
    (y,) = _k("BiasAdd")(x, b, -x)
    assert np.array_equal(y, np.broadcast_to(b, x.shape))
    with pytest.raises(KernelValidationError, match="C1"):
        _k("BiasAdd")(x, b, x[:, :1])  # skip of another shape


def test_bias_softmax_broadcast_layouts():
    data = np.zeros((2, 2, 3))
    bias = np.array([[[0.0, 0.0, -np.inf]], [[-np.inf, 0.0, 0.0]]])  # inner: broadcast over dim 1
    (y,) = _k("BiasSoftmax")(data, bias, axis=2, is_inner_broadcast=1)
    assert np.allclose(y[0], [[0.5, 0.5, 0.0]] * 2) and np.allclose(y[1], [[0.0, 0.5, 0.5]] * 2)
    with pytest.raises(KernelValidationError, match="C3"):  # the same bias is not an outer broadcast
        _k("BiasSoftmax")(data, bias, axis=2, is_inner_broadcast=0)
    # axis 1: the softmax runs over the flattened dims 1 and 2 (6 elements)
    (y,) = _k("BiasSoftmax")(np.zeros((1, 2, 3)), np.zeros((2, 3)), axis=1, is_inner_broadcast=0)
    assert np.allclose(y, 1 / 6)


@pytest.mark.parametrize("op", ["FusedMatMul", "TransposeMatMul"])
def test_fused_matmul_transposes_and_scales(op):
    a = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    b = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    (y,) = _k(op)(a, a, transA=1, alpha=2.0)  # 2 * A^T A
    assert np.array_equal(y, 2 * a.T @ a)
    (y,) = _k(op)(a[None].repeat(2, 0), a, transB=1)  # a batch of A against one A^T
    assert y.shape == (2, 3, 3) and np.array_equal(y[1], a @ a.T)
    with pytest.raises(KernelValidationError, match={"FusedMatMul": "C3", "TransposeMatMul": "C2"}[op]):
        _k(op)(a, b.T)  # (3, 2) x (3, 2): the contraction does not agree
    with pytest.raises(KernelValidationError, match="C1"):
        _k(op)(a[0], b, transA=1)  # a 1-D operand cannot be transposed


def test_fused_matmul_batch_transpose_moves_the_first_axis_behind_the_batch():
    logical = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)  # (batch, M, K)
    b = np.ones((2, 4, 1), np.float32)
    stored = np.ascontiguousarray(np.moveaxis(logical, 1, 0))  # (M, batch, K): how onnxruntime's tests store it
    (y,) = _k("FusedMatMul")(stored, b, transBatchA=1)
    assert np.array_equal(y, logical @ b)
    stored_t = np.ascontiguousarray(np.moveaxis(logical.swapaxes(1, 2), 1, 0))  # (K, batch, M), with transA
    (y,) = _k("FusedMatMul")(stored_t, b, transA=1, transBatchA=1)
    assert np.array_equal(y, logical @ b)
    with pytest.raises(KernelValidationError, match="C2"):  # a batch transpose needs equal ranks >= 3
        _k("FusedMatMul")(stored, b[0], transBatchA=1)
    drawn = op_cases("FusedMatMul", 1, 60, domain=MS)
    assert any(dict(c.attributes).get("transBatchA") == 1 for c in drawn)


def test_fused_matmul_rounds_once():
    # float32 operands: the kernel accumulates in double, so 1 + 2**-24 + 2**-24 rounds to 1 + 2**-23, where
    # float32 step-by-step accumulation would give 1
    a = np.array([[1.0, 2.0 ** -24, 2.0 ** -24]], np.float32)
    (y,) = _k("FusedMatMul")(a, np.ones((3, 1), np.float32))
    assert y[0, 0] == np.float32(1 + 2.0 ** -23)


def test_fused_gemm_applies_the_activation_after_gemm():
    a = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    b = np.eye(2, dtype=np.float32)
    c = np.array([-1.0, 1.0], np.float32)
    g = a + c  # A I + C
    (y,) = _k("FusedGemm")(a, b, c, activation="Relu")
    assert np.array_equal(y, np.maximum(g, 0))
    (y,) = _k("FusedGemm")(a, b, c, activation="LeakyRelu", activation_alpha=0.5)
    assert np.array_equal(y, np.where(g >= 0, g, 0.5 * g))
    (y,) = _k("FusedGemm")(a, b, c, activation="HardSigmoid")  # defaults alpha 0.2, beta 0.5
    assert np.allclose(y, np.clip(0.2 * g + 0.5, 0, 1), rtol=1e-6)
    (y,) = _k("FusedGemm")(a, b, transA=1, alpha=2.0)  # no activation: plain Gemm
    assert np.array_equal(y, 2 * a.T)
    with pytest.raises(KernelValidationError, match="C3"):
        _k("FusedGemm")(a, b, activation="Softplus")
    with pytest.raises(KernelValidationError, match="C4"):
        _k("FusedGemm")(a.astype(np.int32), b.astype(np.int32))


def test_skip_layer_norm_outputs():
    x = np.array([[[1.0, 3.0], [2.0, 2.0]]], np.float32)
    skip = np.array([[1.0, -1.0], [0.0, 2.0]], np.float32)  # (S, H): broadcast over the batch
    bias = np.array([0.5, 0.5], np.float32)
    gamma = np.array([2.0, 1.0], np.float32)
    beta = np.array([0.0, 10.0], np.float32)
    out, mean, inv, total = _k("SkipLayerNormalization")(x, skip, gamma, beta, bias, epsilon=0.0)
    assert np.array_equal(total, [[[2.5, 2.5], [2.5, 4.5]]])
    assert mean.shape == (1, 2, 1) and mean.dtype == np.float32 and np.array_equal(mean.ravel(), [2.5, 3.5])
    # row 0 has zero variance: epsilon 0 divides by zero (inf), row 1: std 1
    assert np.isinf(inv[0, 0, 0]) and inv[0, 1, 0] == 1.0
    assert np.array_equal(out[0, 1], [-2.0, 11.0])  # (-1, 1) * gamma + beta
    out, mean, inv, total = _k("SkipSimplifiedLayerNormalization")(np.array([[3.0, 4.0]], np.float32),
                                                                    np.zeros((1, 2), np.float32),
                                                                    np.ones(2, np.float32), epsilon=0.0)
    rms = math.sqrt(12.5)
    assert np.allclose(out, [[3 / rms, 4 / rms]], rtol=1e-7) and mean.ravel()[0] == 0
    with pytest.raises(KernelValidationError, match="C1"):  # the text's input of SkipLayerNormalization is 3-D
        _k("SkipLayerNormalization")(x[0], skip, gamma)
    with pytest.raises(KernelValidationError, match="C2"):
        _k("SkipLayerNormalization")(x, skip[:1, :1], gamma)


def test_embed_layer_norm_lookups_mask_index_and_sum():
    i32 = np.int32
    ids = np.array([[1, 0, 2]], i32)
    word = np.array([[1.0, 2.0], [3.0, 5.0], [0.0, -1.0]], np.float32)
    pos = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0], [5.0, 5.0]], np.float32)
    seg = np.array([[10.0, 0.0], [0.0, 10.0]], np.float32)
    ones, zeros = np.ones(2, np.float32), np.zeros(2, np.float32)
    out, mask_index, total = _k("EmbedLayerNormalization")(
        ids, np.array([[0, 1, 1]], i32), word, pos, seg, ones, zeros, np.array([[1, 1, 0]], i32),
        np.array([[3, 0, 1]], i32), epsilon=0.0)
    assert np.array_equal(total, [[[8.0, 10.0], [1.0, 2.0], [1.0, 0.0]]])  # word + position only (the text)
    assert mask_index.tolist() == [2] and mask_index.dtype == i32  # the first 0 is at 2
    # e = [18, 10], [1, 12], [1, 10]: each row of two normalizes to (+-1, -+1)
    assert np.allclose(out, [[[1, -1], [-1, 1], [-1, 1]]], atol=1e-6)
    _, mask_index, _ = _k("EmbedLayerNormalization")(ids, None, word, pos, None, ones, zeros)
    assert mask_index is None  # no mask: the text computes no mask_index
    with pytest.raises(KernelValidationError, match="C5"):  # not ones then zeros: the readings disagree
        _k("EmbedLayerNormalization")(ids, None, word, pos, None, ones, zeros, np.array([[1, 0, 1]], i32))
    with pytest.raises(KernelValidationError, match="C4"):  # an id past the table
        _k("EmbedLayerNormalization")(np.array([[3]], i32), None, word, pos, None, ones, zeros)


def test_contrib_rotary_embedding_positions():
    x = np.array([[[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]], np.float32)  # one head of 4, two tokens
    cos = np.array([[1.0, 1.0], [0.0, 0.0], [-1.0, -1.0]], np.float32)
    sin = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]], np.float32)
    # offset 1: positions 1 (90 degrees: (a, b) -> (-b, a) per real/imaginary pair) and 2 (180 degrees)
    (y,) = _k("RotaryEmbedding")(x, np.array([1], np.int64), cos, sin)
    assert np.array_equal(y, [[[-3.0, -4.0, 1.0, 2.0], [-1.0, -2.0, -3.0, -4.0]]])
    # the same positions given per token
    (y2,) = _k("RotaryEmbedding")(x, np.array([[1, 2]], np.int64), cos, sin)
    assert np.array_equal(y, y2)
    with pytest.raises(KernelValidationError, match="C4"):  # offset 2 reaches position 3, past the caches
        _k("RotaryEmbedding")(x, np.array([2], np.int64), cos, sin)
    with pytest.raises(KernelValidationError, match="C2"):  # rotary_embedding_dim without num_heads
        _k("RotaryEmbedding")(x, np.array([0], np.int64), cos[:, :1], sin[:, :1], rotary_embedding_dim=2)
    with pytest.raises(KernelValidationError, match="C5"):
        _k("RotaryEmbedding")(x, np.array([0], np.int64), cos, sin, scale=2.0)


def test_fused_conv_activation_after_conv():
    x = np.array([[[-4.0, 1.0, 3.0, 8.0]]], np.float32)
    w = np.ones((1, 1, 3), np.float32)
    (y,) = _k("FusedConv")(x, w, activation="Clip", activation_params=[0.0, 6.0], pads=[1, 1])
    assert np.array_equal(y, [[[0.0, 0.0, 6.0, 6.0]]])  # conv: -3, 0, 12, 11
    x[0, 0, 0] = np.nan
    (y,) = _k("FusedConv")(x, w, activation="Relu", pads=[1, 1])
    assert np.isnan(y[0, 0, :2]).all() and np.array_equal(y[0, 0, 2:], [12.0, 11.0])  # Relu keeps NaN
    with pytest.raises(KernelValidationError, match="A1"):  # Clip needs [min, max]
        _k("FusedConv")(x, w, activation="Clip")
    with pytest.raises(KernelValidationError, match="A2"):
        _k("FusedConv")(x, w, None, np.zeros((1, 1, 2), np.float32), activation="Relu")


def test_contrib_attention_common_path():
    x = np.array([[[1.0, 0.0], [0.0, 2.0]]], np.float32)
    w = np.tile(np.eye(2, dtype=np.float32), (1, 3))  # Q = K = V = x
    out, present = _k("Attention")(x, w, num_heads=1)
    scores = (x[0] @ x[0].T) / math.sqrt(2)
    p = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    assert np.allclose(out[0], p @ x[0], rtol=1e-6)
    assert present.shape == (2, 1, 1, 2, 2) and np.array_equal(present[0, 0, 0], x[0])
    # two heads of size 1 see one column each: head 0 attends over column 0 only
    out, _ = _k("Attention")(x, w, num_heads=2, scale=1.0)
    col0 = np.exp(np.outer(x[0, :, 0], x[0, :, 0]))
    assert np.allclose(out[0, :, 0], (col0 / col0.sum(-1, keepdims=True)) @ x[0, :, 0], rtol=1e-6)
    with pytest.raises(KernelValidationError, match="C4"):
        _k("Attention")(x, w, num_heads=1, unidirectional=1)
    with pytest.raises(KernelValidationError, match="C3"):
        _k("Attention")(x, w, None, np.array([2], np.int32), num_heads=1)


def _softmax_rows(scores):
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _mha_inputs():
    rng = np.random.default_rng(0)
    q = rng.integers(-3, 4, (2, 3, 4)).astype(np.float32)  # B 2, S 3, two heads of 2
    k = rng.integers(-3, 4, (2, 3, 4)).astype(np.float32)
    v = rng.integers(-3, 4, (2, 3, 6)).astype(np.float32)  # v_head_size 3
    return q, k, v


def _mha_by_hand(q, k, v, allowed, scale, bias=None):
    """(B, S, N * H_v) by the semantics: per head, softmax over the allowed keys of the scaled scores."""
    b, s, _ = q.shape
    qh = q.astype(np.float64).reshape(b, s, 2, -1).transpose(0, 2, 1, 3)
    kh = k.astype(np.float64).reshape(b, k.shape[1], 2, -1).transpose(0, 2, 1, 3)
    vh = v.astype(np.float64).reshape(b, v.shape[1], 2, -1).transpose(0, 2, 1, 3)
    scores = qh @ kh.swapaxes(-1, -2) * scale + (0 if bias is None else bias)
    p = _softmax_rows(np.where(allowed, scores, -np.inf))
    return (p @ vh).transpose(0, 2, 1, 3).reshape(b, s, -1)


def test_multihead_attention_masks_leave_keys_out():
    q, k, v = _mha_inputs()
    mha = _k("MultiHeadAttention")
    out, pk, pv, _ = mha(q, k, v, num_heads=2)
    assert pk.shape == (2, 2, 3, 2) and pv.shape == (2, 2, 3, 3) and np.array_equal(pv[1, 1], v[1, :, 3:])
    assert np.allclose(out, _mha_by_hand(q, k, v, True, 1 / math.sqrt(2)), rtol=1e-6, atol=1e-6)
    # the three padding-mask forms of one padding (batch 0 keeps 2 keys, batch 1 all 3) agree
    lengths = np.array([2, 3], np.int32)
    two_d = np.array([[1, 1, 0], [1, 1, 1]], np.int32)
    three_d = np.repeat(two_d[:, None, :], 3, axis=1)
    allowed = (two_d != 0)[:, None, None, :]
    want = _mha_by_hand(q, k, v, allowed, 1 / math.sqrt(2))
    for mask in (lengths, two_d, three_d):
        (got, *_) = mha(q, k, v, None, mask, num_heads=2)
        assert np.allclose(got, want, rtol=1e-6, atol=1e-6)
    assert not np.allclose(want, out, atol=1e-3)  # the padded key counted
    # unidirectional: query i sees keys 0..i; an attention_bias is added to the scaled scores
    bias = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3) / 4
    (got, *_) = mha(q, k, v, None, None, bias, num_heads=2, scale=0.5, unidirectional=1)
    tril = np.tril(np.ones((3, 3), bool))
    assert np.allclose(got, _mha_by_hand(q, k, v, tril, 0.5, bias), rtol=1e-6, atol=1e-6)


def test_multihead_attention_bias_and_scale_zero():
    q, k, v = _mha_inputs()
    w = np.linspace(-1, 1, 14).astype(np.float32)
    out, pk, pv, _ = _k("MultiHeadAttention")(q, k, v, w, num_heads=2)
    assert np.allclose(pk[0, 1], (k + w[4:8])[0, :, 2:], rtol=1e-6)  # present_key holds K plus its bias
    assert np.allclose(pv[0, 0], (v + w[8:])[0, :, :3], rtol=1e-6)
    assert np.allclose(out, _mha_by_hand(q + w[:4], k + w[4:8], v + w[8:], True, 1 / math.sqrt(2)), rtol=1e-5,
                       atol=1e-6)
    # scale 0 is a given scale (the text): every score is 0 and each query averages the values; not
    # onnxruntime's reading (0 as unset: 1 / sqrt(head_size))
    (out, *_) = _k("MultiHeadAttention")(q, k, v, num_heads=2, scale=0.0)
    assert np.allclose(out, np.broadcast_to(v.mean(axis=1, keepdims=True), out.shape), rtol=1e-6)


def test_multihead_attention_rules():
    q, k, v = _mha_inputs()
    mha = _k("MultiHeadAttention")
    with pytest.raises(KernelValidationError, match="C1"):  # packed QKV: not implemented
        mha(q.reshape(2, 3, 2, 1, 2).repeat(3, axis=3), num_heads=2)
    with pytest.raises(KernelValidationError, match="C2"):  # hidden size 4 is no multiple of 3 heads
        mha(q, k, v, num_heads=3)
    with pytest.raises(KernelValidationError, match="C3"):
        mha(q, k, v, np.zeros(12, np.float32), num_heads=2)
    with pytest.raises(KernelValidationError, match="C4"):  # the (3 * batch_size + 2) form
        mha(q, k, v, None, np.array([3, 3, 0, 0, 3, 3, 0, 0], np.int32), num_heads=2)
    with pytest.raises(KernelValidationError, match="C4"):  # a 2-D mask of 0 / 1 only
        mha(q, k, v, None, np.array([[1, 2, 1], [1, 1, 1]], np.int32), num_heads=2)
    with pytest.raises(KernelValidationError, match="C5"):  # attention_bias for 3 heads
        mha(q, k, v, None, None, np.zeros((1, 3, 3, 3), np.float32), num_heads=2)
    with pytest.raises(KernelValidationError, match="C6"):
        mha(q, k, v, None, None, None, np.zeros((2, 2, 1, 2), np.float32), np.zeros((2, 2, 1, 3), np.float32),
            num_heads=2)
    with pytest.raises(KernelValidationError, match="C7"):  # causal cross attention: positions do not align
        mha(q, k[:, :2], v[:, :2], num_heads=2, unidirectional=1)


def test_multihead_attention_masking_rule():
    q, k, v = _mha_inputs()
    mha = _k("MultiHeadAttention")
    no_key = np.array([[0, 0, 0], [1, 1, 1]], np.int32)
    with pytest.raises(KernelValidationError, match="D1"):  # batch 0 attends no key
        mha(q, k, v, None, no_key, num_heads=2)
    with pytest.raises(KernelValidationError, match="D1"):  # also under the causal rule: query 0 needs key 0
        mha(q, k, v, None, np.array([[0, 1, 1], [1, 1, 1]], np.int32), num_heads=2, unidirectional=1)
    pad = np.array([[1, 1, 0], [1, 1, 1]], np.int32)
    with pytest.raises(KernelValidationError, match="D1"):  # -1 leaves the padded key a weight: readings differ
        mha(q, k, v, None, pad, num_heads=2, mask_filter_value=-1.0)
    mha(q, k, v, None, pad, num_heads=2, mask_filter_value=-1000.0)
    nan_value = v.copy()
    nan_value[0, 2, 0] = np.nan  # at the padded key: an additive mask gives 0 * NaN
    with pytest.raises(KernelValidationError, match="D1"):
        mha(q, k, nan_value, None, pad, num_heads=2)
    (out, *_) = mha(q, k, nan_value, num_heads=2)  # attended: NaN is the result, and valid
    assert np.isnan(out[0, :, 0]).all() and not np.isnan(out[1]).any()


def _gqa_by_hand(q, k, v, n, kvn, causal=True, scale=None, softcap=0.0):
    """Each query head n reads kv head n // (n / kvn); k, v: (B, KVN, T, H) (past and new)."""
    b, s, _ = q.shape
    h = k.shape[-1]
    qh = q.astype(np.float64).reshape(b, s, n, h).transpose(0, 2, 1, 3)
    kk = np.repeat(k.astype(np.float64), n // kvn, axis=1)
    vv = np.repeat(v.astype(np.float64), n // kvn, axis=1)
    scores = qh @ kk.swapaxes(-1, -2) * (1 / math.sqrt(h) if scale is None else scale)
    if softcap:
        scores = softcap * np.tanh(scores / softcap)
    total = k.shape[2]
    if causal:
        scores = np.where(np.arange(total)[None, :] <= total - s + np.arange(s)[:, None], scores, -np.inf)
    return (_softmax_rows(scores) @ vv).transpose(0, 2, 1, 3).reshape(b, s, -1)


def _gqa_inputs(b=1, s=2, past=2, n=4, kvn=2, h=2):
    rng = np.random.default_rng(1)
    f = np.float32
    return (rng.integers(-3, 4, (b, s, n * h)).astype(f), rng.integers(-3, 4, (b, s, kvn * h)).astype(f),
            rng.integers(-3, 4, (b, s, kvn * h)).astype(f), rng.integers(-3, 4, (b, kvn, past, h)).astype(f),
            rng.integers(-3, 4, (b, kvn, past, h)).astype(f))


def _lengths(b, total):
    return np.full(b, total - 1, np.int32), np.array(total, np.int32)


def test_group_query_attention_groups_and_past():
    q, k, v, pk, pv = _gqa_inputs()
    gqa = _k("GroupQueryAttention")
    out, present_k, present_v, _ = gqa(q, k, v, pk, pv, *_lengths(1, 4), num_heads=4, kv_num_heads=2)
    kt = k.reshape(1, 2, 2, 2).transpose(0, 2, 1, 3)
    assert np.array_equal(present_k, np.concatenate([pk, kt], axis=2))  # past, then the new keys (BNSH)
    assert np.array_equal(present_v, np.concatenate([pv, v.reshape(1, 2, 2, 2).transpose(0, 2, 1, 3)], axis=2))
    want = _gqa_by_hand(q, present_k, present_v, 4, 2)
    assert np.allclose(out, want, rtol=1e-6, atol=1e-6)
    # heads 0 and 1 share kv head 0 (consecutive groups), not heads 0 and 2
    alternating = present_k[:, [0, 1, 0, 1]], present_v[:, [0, 1, 0, 1]]
    assert not np.allclose(want, _gqa_by_hand(q, *alternating, 4, 4), atol=1e-3)
    # causal 0: every query attends every key; the causal offset is the past length
    (out0, *_) = gqa(q, k, v, pk, pv, *_lengths(1, 4), num_heads=4, kv_num_heads=2, causal=0)
    assert np.allclose(out0, _gqa_by_hand(q, present_k, present_v, 4, 2, causal=False), rtol=1e-6, atol=1e-6)
    assert not np.allclose(out0[:, 0], out[:, 0], atol=1e-3) and np.allclose(out0[:, 1], out[:, 1], atol=1e-6)
    # softcap after the scale; scale 0 is a given scale
    (capped, *_) = gqa(q, k, v, pk, pv, *_lengths(1, 4), num_heads=4, kv_num_heads=2, softcap=2.0, scale=0.5)
    assert np.allclose(capped, _gqa_by_hand(q, present_k, present_v, 4, 2, scale=0.5, softcap=2.0), rtol=1e-6,
                       atol=1e-6)
    (flat, *_) = gqa(q, k, v, pk, pv, *_lengths(1, 4), num_heads=4, kv_num_heads=2, scale=0.0)
    assert np.allclose(flat, _gqa_by_hand(q, present_k, present_v, 4, 2, scale=0.0), rtol=1e-6)


def test_group_query_attention_packed_and_prompt():
    q, k, v, _, _ = _gqa_inputs(b=2, s=3, past=0)
    gqa = _k("GroupQueryAttention")
    separate = gqa(q, k, v, None, None, *_lengths(2, 3), num_heads=4, kv_num_heads=2)
    packed = gqa(np.concatenate([q, k, v], axis=-1), None, None, None, None, np.array([2, 2], np.int32),
                 np.array([3], np.int32), num_heads=4, kv_num_heads=2)
    for a, b in zip(separate, packed):
        assert np.array_equal(a, b)
    empty = np.zeros((2, 2, 0, 2), np.float32)  # an empty past is the prompt too
    for a, b in zip(separate, gqa(q, k, v, empty, empty, *_lengths(2, 3), num_heads=4, kv_num_heads=2)):
        assert np.array_equal(a, b)


def test_group_query_attention_rules():
    q, k, v, pk, pv = _gqa_inputs()
    gqa = _k("GroupQueryAttention")
    with pytest.raises(KernelValidationError, match="C1"):
        gqa(q, k, v, pk, pv, *_lengths(1, 4), num_heads=4, kv_num_heads=3)
    with pytest.raises(KernelValidationError, match="C2"):  # key without value
        gqa(q, k, None, pk, pv, *_lengths(1, 4), num_heads=4, kv_num_heads=2)
    with pytest.raises(KernelValidationError, match="C3"):  # past of another head size
        gqa(q, k, v, pk[..., :1], pv[..., :1], *_lengths(1, 4), num_heads=4, kv_num_heads=2)
    with pytest.raises(KernelValidationError, match="C4"):  # total_sequence_length is not seqlens_k's max + 1
        gqa(q, k, v, pk, pv, np.array([3], np.int32), np.array(5, np.int32), num_heads=4, kv_num_heads=2)
    q2, k2, v2, pk2, pv2 = _gqa_inputs(b=2, s=1, past=2)
    with pytest.raises(KernelValidationError, match="C5"):  # a ragged batch: entry 1 is shorter
        gqa(q2, k2, v2, pk2, pv2, np.array([2, 1], np.int32), np.array(3, np.int32), num_heads=4, kv_num_heads=2)
    with pytest.raises(KernelValidationError, match="C5"):  # a past buffer longer than the past (shared buffer)
        gqa(q, k, v, pk, pv, *_lengths(1, 3), num_heads=4, kv_num_heads=2)
    q3, k3, v3, pk3, pv3 = _gqa_inputs(b=2, s=2, past=1)
    with pytest.raises(KernelValidationError, match="C6"):  # several new tokens after a past need batch 1
        gqa(q3, k3, v3, pk3, pv3, *_lengths(2, 3), num_heads=4, kv_num_heads=2)
    with pytest.raises(KernelValidationError, match="C7"):  # a cache in another type (quantized)
        gqa(q, k, v, pk.astype(np.float16), pv.astype(np.float16), *_lengths(1, 4), num_heads=4, kv_num_heads=2)
    with pytest.raises(KernelValidationError, match="C8"):
        gqa(q, k, v, pk, pv, *_lengths(1, 4), np.ones((4, 1), np.float32), np.zeros((4, 1), np.float32),
            num_heads=4, kv_num_heads=2)
    with pytest.raises(KernelValidationError, match="C9"):
        gqa(q, k, v, pk, pv, *_lengths(1, 4), num_heads=4, kv_num_heads=2, local_window_size=2)
    with pytest.raises(KernelValidationError, match="C10"):
        gqa(q, k, v, pk, pv, *_lengths(1, 4), num_heads=4, kv_num_heads=2, softcap=-1.0)


def test_group_query_attention_masking_rule():
    q, k, v, pk, pv = _gqa_inputs()
    gqa = _k("GroupQueryAttention")
    nan_k = k.copy()
    nan_k[0, 1, 0] = np.nan  # the last new key: query 0 (position 2) does not attend it
    with pytest.raises(KernelValidationError, match="D1"):
        gqa(q, nan_k, v, pk, pv, *_lengths(1, 4), num_heads=4, kv_num_heads=2)
    inf_v = v.copy()
    inf_v[0, 1, 0] = np.inf  # -inf added to its score would still weigh it 0 * inf
    with pytest.raises(KernelValidationError, match="D1"):
        gqa(q, k, inf_v, pk, pv, *_lengths(1, 4), num_heads=4, kv_num_heads=2)
    (out, *_) = gqa(q, nan_k, v, pk, pv, *_lengths(1, 4), num_heads=4, kv_num_heads=2, causal=0)
    assert np.isnan(out[0, :, :4]).all() and not np.isnan(out[0, :, 4:]).any()  # kv head 0 only


def test_group_query_attention_cache_type_is_bound_to_t():
    """Rule C7 reads the cache only through .dtype behind `is None`: the generator never draws a
    binding with T_CACHE other than T (the present outputs would be of a type the kernel does not
    produce), also for the prompts that have no past."""
    from opkit.cases.bindings import all_bindings
    from opkit.conformance import harness

    version = harness.load_op(MS, "GroupQueryAttention").version(1)
    bindings = all_bindings(version)
    assert bindings and all(b["T_CACHE"] == b["T"] for b in bindings)


# onnxruntime's QAttentionBatch1 data (quantize_attention_op_test.cc): float input, weight and bias,
# quantized with scale 0.1 and zero point 128 (u8u8), and its expected outputs (tolerance 0.005)
_QA_INPUT = np.array([0.8, -0.5, 0.0, 1.0, 0.5, 0.2, 0.3, -0.6], np.float32).reshape(1, 2, 4)
_QA_WEIGHT = np.array([0.1, -0.2, 0.3, 1.0, 1.1, 0.3, 0.5, 0.2, 0.3, -0.6, 1.5, 2.0,
                       0.5, 0.1, 0.4, 1.6, 1.0, 2.0, 0.4, 0.8, 0.9, 0.1, -1.3, 0.7,
                       0.3, 0.2, 4.0, 2.2, 1.6, 1.1, 0.7, 0.2, 0.4, 1.0, 1.2, 0.5,
                       0.2, 0.1, 0.4, 1.6, 2.4, 3.3, 2.1, 4.2, 8.4, 0.0, 2.1, 3.2], np.float32).reshape(4, 12)
_QA_BIAS = np.array([-0.5, 0.6, 1.2, 2.1, 0.5, 0.7, 0.2, 1.2, 0.5, 0.4, 0.3, 1.2], np.float32)


def _u8(x, scale=0.1, zp=128):
    return np.clip(np.rint(x / np.float32(scale)) + zp, 0, 255).astype(np.uint8)


def _qa_args(mask=None):
    tenth, zp = np.array([0.1], np.float32), np.array([128], np.uint8)
    return (_u8(_QA_INPUT), _u8(_QA_WEIGHT), _QA_BIAS, tenth, tenth, mask, zp, zp)


def test_qattention_matches_onnxruntime_test_vectors():
    qa = _k("QAttention")
    out, present = qa(*_qa_args(np.array([2], np.int32)), num_heads=2)
    want = [[[3.1495984, 0.10843669, 4.25, 5.6499996], [3.969679, 0.07314368, 4.2499995, 5.649999]]]
    assert out.dtype == np.float32 and present.shape == (2, 1, 2, 2, 2)
    assert np.allclose(out, want, atol=5e-3)
    # mask_index 1 (QAttentionMaskPartialSequence): both tokens see key 0 only
    (out, _) = qa(*_qa_args(np.array([1], np.int32)), num_heads=2)
    assert np.allclose(out, [[[8.69, -0.13, 4.25, 5.65]] * 2], atol=5e-3)


def test_qattention_is_attention_on_the_dequantized_values():
    """Com.microsoft Attention's kernel on scale * (q - zero_point): with power-of-two scales the
    dequantized values are exact in float32, so the two kernels agree bit for bit."""
    rng = np.random.default_rng(4)
    q_in = rng.integers(100, 160, (2, 3, 4)).astype(np.uint8)
    q_w = rng.integers(-20, 20, (4, 12)).astype(np.int8)
    w_scale = np.array([0.125, 0.25, 0.0625, 0.125, 0.5, 0.25, 0.125, 0.0625, 0.25, 0.125, 0.5, 0.25], np.float32)
    w_zp = rng.integers(-3, 4, 12).astype(np.int8)
    bias = rng.integers(-3, 4, 12).astype(np.float32)
    x = ((q_in.astype(np.float32) - 130) * np.float32(0.0625))
    w = (q_w.astype(np.float32) - w_zp) * w_scale
    want = _k("Attention")(x, w, bias, num_heads=2)
    got = _k("QAttention")(q_in, q_w, bias, np.array(0.0625, np.float32), w_scale, None, np.array(130, np.uint8),
                           w_zp, num_heads=2)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
    # float16 T3: the same values, rounded once to float16 (bias's type)
    (half, _) = _k("QAttention")(q_in, q_w, bias.astype(np.float16), np.array(0.0625, np.float16),
                                 w_scale.astype(np.float16), None, np.array(130, np.uint8), w_zp, num_heads=2)
    assert half.dtype == np.float16 and np.array_equal(half, want[0].astype(np.float16))


def test_qattention_past_mask_and_unidirectional():
    rng = np.random.default_rng(5)
    q_in = rng.integers(0, 6, (1, 2, 2)).astype(np.uint8)
    q_w = rng.integers(-2, 3, (2, 6)).astype(np.int8)  # two heads of size 1
    bias = np.zeros(6, np.float32)
    past = rng.integers(-3, 4, (2, 1, 2, 2, 1)).astype(np.float32)  # P = 2
    one = np.array(1.0, np.float32)
    qa = _k("QAttention")
    x = q_in.astype(np.float64)[0]
    proj = x @ q_w.astype(np.float64)  # (S, 6): Q heads, K heads, V heads
    k = np.concatenate([past[0, 0, :, :, 0], proj[:, 2:4].T], axis=1)  # (N, P + S)
    v = np.concatenate([past[1, 0, :, :, 0], proj[:, 4:6].T], axis=1)

    def by_hand(allowed):
        scores = proj[:, 0:2].T[:, :, None] * k[:, None, :]  # (N, S, T), scale 1
        return np.einsum("nst,nt->sn", _softmax_rows(np.where(allowed, scores, -np.inf)), v)

    out, present = qa(q_in, q_w, bias, one, one, None, None, None, past, num_heads=2, scale=1.0)
    assert np.allclose(present[0, 0, :, :, 0], k) and np.allclose(present[1, 0, :, :, 0], v)
    assert np.allclose(out[0], by_hand(np.ones((2, 4), bool)), rtol=1e-6, atol=1e-6)
    # unidirectional: token i sits at position P + i, so token 0 leaves out key 3 (token 1's)
    (out, _) = qa(q_in, q_w, bias, one, one, None, None, None, past, num_heads=2, scale=1.0, unidirectional=1)
    causal = np.arange(4)[None, :] <= 2 + np.arange(2)[:, None]
    assert np.allclose(out[0], by_hand(causal), rtol=1e-6, atol=1e-6)
    # mask_index counts keys over past and new: 3 leaves out token 1's key for both tokens
    (out, _) = qa(q_in, q_w, bias, one, one, np.array([3], np.int32), None, None, past, num_heads=2, scale=1.0)
    assert np.allclose(out[0], by_hand(np.arange(4)[None, :] < 3), rtol=1e-6, atol=1e-6)


def test_qattention_scale_zero_is_a_given_scale():
    # every score 0: each token averages the values (onnxruntime reads 0 as unset: 1 / sqrt(head_size))
    (out, present) = _k("QAttention")(*_qa_args(), num_heads=2, scale=0.0)
    v = present[1, 0]  # (N, S, H)
    assert np.allclose(out[0], np.broadcast_to(v.mean(axis=1).reshape(1, -1), (2, 4)), rtol=1e-6)


def test_qattention_rules():
    qa = _k("QAttention")
    args = list(_qa_args())
    with pytest.raises(KernelValidationError, match="C1"):  # hidden size 4 over 3 heads
        qa(*args, num_heads=3)
    with pytest.raises(KernelValidationError, match="C2"):
        qa(args[0], args[1], args[2][:6], *args[3:], num_heads=2)
    with pytest.raises(KernelValidationError, match="C3"):  # input_scale per tensor only
        qa(*args[:3], np.array([0.1, 0.1], np.float32), *args[4:], num_heads=2)
    with pytest.raises(KernelValidationError, match="C3"):  # per column: 3 * hidden_size values
        qa(*args[:7], np.full(4, 128, np.uint8), num_heads=2)
    with pytest.raises(KernelValidationError, match="C4"):
        qa(*args[:4], np.array([np.inf], np.float32), *args[5:], num_heads=2)
    with pytest.raises(KernelValidationError, match="C5"):  # past of another head size
        qa(*args, np.zeros((2, 1, 2, 1, 3), np.float32), num_heads=2)
    with pytest.raises(KernelValidationError, match="C6"):  # the (2 * batch_size) form
        qa(*args[:5], np.array([2, 0], np.int32), *args[6:], num_heads=2)
    with pytest.raises(KernelValidationError, match="C6"):  # longer than the keys
        qa(*args[:5], np.array([3], np.int32), *args[6:], num_heads=2)
    with pytest.raises(KernelValidationError, match="C7"):
        qa(*args, num_heads=2, unidirectional=2)
    with pytest.raises(KernelValidationError, match="C8"):
        qa(*args, num_heads=2, past_present_share_buffer=1)


def test_qattention_masking_rule():
    qa = _k("QAttention")
    args = list(_qa_args())
    with pytest.raises(KernelValidationError, match="D1"):  # batch 0 attends no key
        qa(*args[:5], np.array([0], np.int32), *args[6:], num_heads=2)
    with pytest.raises(KernelValidationError, match="D1"):  # -1 leaves the masked key a weight
        qa(*args[:5], np.array([1], np.int32), *args[6:], num_heads=2, mask_filter_value=-1.0)
    qa(*args[:5], np.array([1], np.int32), *args[6:], num_heads=2, mask_filter_value=-1000.0)


def test_qattention_allowance_counts_the_dequantized_operands():
    """Its float inputs (bias, scales) are small while the dequantized input and weight are not:
    the coarse bound over the float inputs alone would be 100 times too tight."""
    from opkit.cases.case import make_case
    from opkit.conformance import harness
    from opkit.conformance.accumulation import coarse
    from opkit.conformance.allowance import allowance_for

    spec = harness.load_op(MS, "QAttention")
    version = spec.version(1)
    binding = {"T1": "tensor(uint8)", "T2": "tensor(uint8)", "T3": "tensor(float)", "T4": "tensor(int32)"}
    inputs = [("input", np.array([[[250, 5]]], np.uint8)), ("weight", np.full((2, 3), 250, np.uint8)),
              ("bias", np.zeros(3, np.float32)), ("input_scale", np.array(1.0, np.float32)),
              ("weight_scale", np.array(0.125, np.float32)), ("mask_index", None), ("input_zero_point", None),
              ("weight_zero_point", None), ("past", None)]
    case = make_case(spec, version, binding, {"num_heads": 1}, inputs)
    expected = harness.expected_outputs(case)
    allowance = allowance_for(version, case, 0, expected)
    assert allowance.accuracy == "accumulating" and "dequantized" in allowance.basis
    assert float(np.max(allowance.floor)) > 100 * coarse(case, version, 0, expected, "float").floor


def _hooked_versions():
    return kernel_versions([op for op in OPS], lambda spec, v: v.family is not None, domain=MS)


@pytest.mark.parametrize("spec,version", list(_hooked_versions()))
def test_hooks_draw_valid_cases(spec, version):
    assert_mostly_valid(spec, version, 3, 8)


@pytest.mark.parametrize("op", [op for op in OPS if op not in ("Gelu", "QuickGelu")])
def test_every_drawn_case_satisfies_the_rules(op):
    fn = _k(op)
    for case in op_cases(op, 1, 30, domain=MS):
        fn(*[v for _, v in case.inputs], **dict(case.attributes))  # raises on a broken rule
