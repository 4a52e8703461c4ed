"""com.microsoft transformer and fused ops: the GELU variants (Gelu, FastGelu, QuickGelu, BiasGelu),
BiasAdd, BiasSoftmax, FusedMatMul, FusedGemm, GemmFastGelu, the skip / embed layer normalizations,
FusedConv and the attention ops (Attention, QAttention, MultiHeadAttention, GroupQueryAttention).

Narrow floats (float16, bfloat16) are computed in float32 and rounded once at the end, like the
other kernels; float and double in their own type where one rounding per step is what a runtime
does too (an addition of bias before an activation)."""

from __future__ import annotations

import math

import numpy as np

from ..runtime import as_dtype, erf, widen
from ._attention import rotary_embedding
from ._window import conv

__all__: list[str] = [
    "gelu_erf", "fast_gelu", "quick_gelu", "bias_gelu", "bias_add", "fused_matmul", "fused_gemm", "gemm_fast_gelu",
    "skip_layer_norm", "embed_layer_norm", "contrib_rotary_embedding", "fused_conv", "contrib_attention",
    "FUSED_ACTIVATIONS", "fused_activation", "multihead_attention", "multihead_attention_defined",
    "group_query_attention", "group_query_attention_defined", "MASKED_SCORE_GAP", "qattention",
    "qattention_defined",
]

# FastGelu's constants as its text prints them: sqrt(2 / pi) and 0.044715 * sqrt(2 / pi), six digits
_FAST_GELU_A = 0.797885
_FAST_GELU_B = 0.035677


def _gelu(x):
    """x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), in x's (widened) type."""
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def gelu_erf(X):
    """com.microsoft Gelu: the exact GELU, x * Phi(x) with Phi the standard normal CDF."""
    with np.errstate(all="ignore"):
        return as_dtype(_gelu(widen(X)), X.dtype)


def _last_axis_bias(X, bias):
    """X + bias, bias a 1-D tensor of X's last extent, added in X's (widened) type: one rounding."""
    x = widen(X)
    if bias is None:
        return x
    with np.errstate(all="ignore"):
        return (x + widen(bias)).astype(x.dtype)


def fast_gelu(X, bias=None):
    """FastGelu: Y = 0.5 x (1 + tanh(0.797885 x + 0.035677 x^3)), x = X (+ bias on the last axis)."""
    x = _last_axis_bias(X, bias)
    with np.errstate(all="ignore"):
        y = 0.5 * x * (1 + np.tanh(_FAST_GELU_A * x + _FAST_GELU_B * x * x * x))
    return as_dtype(y, X.dtype)


def quick_gelu(X, *, alpha=1.702):
    """QuickGelu: Y = x * sigmoid(alpha x)."""
    x = widen(X)
    with np.errstate(all="ignore"):
        # sigmoid written as 1 / (1 + exp(-t)): exp overflows to inf for very negative t, giving 0
        y = x * (1 / (1 + np.exp(-np.asarray(alpha, x.dtype) * x)))
    return as_dtype(y, X.dtype)


def bias_gelu(A, B):
    """BiasGelu: Gelu(A + B), B a 1-D tensor added along A's last axis."""
    x = _last_axis_bias(A, B)
    with np.errstate(all="ignore"):
        return as_dtype(_gelu(x), A.dtype)


def bias_add(X, bias, skip):
    """BiasAdd: Y = (X + bias) + skip, bias added along the last axis (C), each sum rounded to T."""
    x = _last_axis_bias(X, bias)
    with np.errstate(all="ignore"):
        return as_dtype(x + widen(skip).astype(x.dtype), X.dtype)


def _exact_dtype(dtype):
    """The type a product is accumulated in: float64 for float and the narrow floats (one rounding
    at the end), double itself otherwise."""
    return np.dtype(np.float64) if np.dtype(dtype).itemsize <= 4 else np.dtype(dtype)


def _fused_operand(M, trans, trans_batch):
    """op(M): with transBatch, M is (D, b1..bk, E) and its first axis moves behind the batch axes
    ((b1..bk, D, E)); then trans swaps the last two axes (onnxruntime's fused_matmul_op_test.cc builds
    its operands as the inverse of exactly this)."""
    if trans_batch:
        M = np.moveaxis(M, 0, -2)
    return M.swapaxes(-1, -2) if trans else M


def fused_matmul(A, B, *, alpha=1.0, transA=0, transB=0, transBatchA=0, transBatchB=0):
    """FusedMatMul / TransposeMatMul: alpha * matmul(op(A), op(B)), accumulated wide, rounded once."""
    wide = _exact_dtype(A.dtype)
    a = _fused_operand(A.astype(wide), transA, transBatchA)
    b = _fused_operand(B.astype(wide), transB, transBatchB)
    with np.errstate(all="ignore"):
        return as_dtype(np.matmul(a, b) * alpha, A.dtype)


# FusedGemm / FusedConv activations: the ai.onnx op of the same name, its alpha / beta defaults
FUSED_ACTIVATIONS = ("Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid", "Clip")


def fused_activation(y, activation, alpha=None, beta=None):
    """The ai.onnx activation ``activation`` on y (already in its compute type); None: identity."""
    with np.errstate(all="ignore"):
        if not activation:
            return y
        if activation == "Relu":  # max(0, y): NaN stays NaN
            return np.maximum(y, np.zeros_like(y))
        if activation == "Tanh":
            return np.tanh(y)
        if activation == "Sigmoid":
            return 1 / (1 + np.exp(-y))
        if activation == "LeakyRelu":
            a = np.asarray(0.01 if alpha is None else alpha, y.dtype)
            return np.where(y >= 0, y, a * y)
        if activation == "HardSigmoid":
            a = np.asarray(0.2 if alpha is None else alpha, y.dtype)
            b = np.asarray(0.5 if beta is None else beta, y.dtype)
            return np.clip(a * y + b, 0, 1)
        if activation == "Clip":  # alpha, beta: the min and the max
            return np.minimum(np.maximum(y, np.asarray(alpha, y.dtype)), np.asarray(beta, y.dtype))
    raise ValueError(f"activation {activation!r} is not one of {FUSED_ACTIVATIONS}")


def fused_gemm(A, B, C=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, activation=None, activation_alpha=None,
               activation_beta=None, activation_gamma=None):
    """FusedGemm: activation(alpha * op(A) op(B) + beta * C), the Gemm part accumulated wide and
    rounded once to T, then the activation in T's compute type."""
    wide = _exact_dtype(A.dtype)
    a = A.astype(wide).T if transA else A.astype(wide)
    b = B.astype(wide).T if transB else B.astype(wide)
    with np.errstate(all="ignore"):
        y = alpha * (a @ b)
        if C is not None:
            y = y + beta * C.astype(wide)
    y = widen(as_dtype(y, A.dtype))
    return as_dtype(fused_activation(y, activation, activation_alpha, activation_beta), A.dtype)


def gemm_fast_gelu(X, W, bias=None):
    """GemmFastGelu: FastGelu(MatMul(X, W), bias), the product accumulated wide and rounded to T."""
    wide = _exact_dtype(X.dtype)
    with np.errstate(all="ignore"):
        product = as_dtype(np.matmul(X.astype(wide), W.astype(wide)), X.dtype)
    return fast_gelu(product, bias)


def skip_layer_norm(input, skip, gamma, beta=None, bias=None, *, epsilon=1e-12, simplified=False):
    """SkipLayerNormalization / SkipSimplifiedLayerNormalization over the last axis.

    s = input + skip (+ bias), in order, each sum rounded to T's compute type (float32 for the narrow
    floats); the statistics of s in double, returned in float32 (U) with the shape input.shape[:-1] + (1,);
    output = (s - mean) * inv_std_var * gamma (+ beta), rounded once to T. The simplified (RMS) form
    subtracts no mean: its mean output is 0 and inv_std_var = 1 / sqrt(mean(s^2) + epsilon)."""
    x = widen(input)
    with np.errstate(all="ignore"):
        s = (x + widen(skip)).astype(x.dtype)
        if bias is not None:
            s = (s + widen(bias)).astype(x.dtype)
        w = s.astype(np.float64)
        if simplified:
            mean = np.zeros(w.shape[:-1] + (1,))
            var = np.mean(w * w, axis=-1, keepdims=True)
        else:
            mean = np.mean(w, axis=-1, keepdims=True)
            var = np.mean((w - mean) ** 2, axis=-1, keepdims=True)
        inv = 1.0 / np.sqrt(var + epsilon)
        y = (w - mean) * inv * gamma.astype(np.float64)
        if beta is not None:
            y = y + beta.astype(np.float64)
    return (as_dtype(y, input.dtype), mean.astype(np.float32), inv.astype(np.float32), as_dtype(s, input.dtype))


def embed_layer_norm(input_ids, segment_ids, word_embedding, position_embedding, segment_embedding, gamma, beta,
                     mask=None, position_ids=None, *, epsilon=1e-12, mask_index_type=None):
    """EmbedLayerNormalization: e = word[ids] + position[pos] (+ segment[segment_ids]), summed in that
    order in T's compute type; output = layer normalization of e over hidden_size (statistics in double,
    rounded once) * gamma + beta; mask_index[b] = the position of the first 0 of mask[b] (its length when
    none; None without a mask); embedding_sum = word[ids] + position[pos], as the text says."""
    b, s = input_ids.shape
    pos = np.broadcast_to(position_ids, (b, s)) if position_ids is not None else np.broadcast_to(np.arange(s), (b, s))
    word = widen(word_embedding)[input_ids]
    with np.errstate(all="ignore"):
        pair = (word + widen(position_embedding)[pos]).astype(word.dtype)
        e = pair
        if segment_embedding is not None:
            e = (pair + widen(segment_embedding)[segment_ids]).astype(word.dtype)
        w = e.astype(np.float64)
        mean = np.mean(w, axis=-1, keepdims=True)
        var = np.mean((w - mean) ** 2, axis=-1, keepdims=True)
        y = (w - mean) / np.sqrt(var + epsilon) * gamma.astype(np.float64) + beta.astype(np.float64)
    mask_index = None
    if mask is not None:
        zero = mask == 0
        mask_index = np.where(zero.any(axis=1), zero.argmax(axis=1), s).astype(input_ids.dtype)
    return as_dtype(y, word_embedding.dtype), mask_index, as_dtype(pair, word_embedding.dtype)


def contrib_rotary_embedding(input, position_ids, cos_cache, sin_cache, *, interleaved=None, num_heads=None,
                             rotary_embedding_dim=None, is_packed_batching=None, scale=None):
    """com.microsoft RotaryEmbedding: ai.onnx RotaryEmbedding's rotation (opkit.kernels.lib.rotary_embedding)
    with this op's positions: position_ids of shape (1,) is an offset (positions offset + s for every
    batch), (batch, sequence) gives them per token; a 3-D input without num_heads has heads of
    2 * cos_cache.shape[1] values. is_packed_batching and scale are excluded by the rules."""
    b = input.shape[0]
    s = input.shape[2] if input.ndim == 4 else input.shape[1]
    if position_ids.ndim == 1:
        pos = np.broadcast_to(int(position_ids[0]) + np.arange(s, dtype=np.int64), (b, s))
    else:
        pos = position_ids
    heads = num_heads
    if input.ndim == 3 and not heads:
        heads = input.shape[2] // (2 * cos_cache.shape[1])
    return rotary_embedding(input, cos_cache, sin_cache, pos, interleaved=interleaved or 0, num_heads=heads or 0,
                            rotary_embedding_dim=rotary_embedding_dim or 0)


def fused_conv(X, W, B=None, Z=None, *, activation=None, activation_params=None, group=1, pads=None, strides=None,
               dilations=None, kernel_shape=None, auto_pad="NOTSET"):
    """FusedConv: activation(Conv(X, W, B)), Conv rounded to T first (as the unfused pair would), the
    activation's parameters from activation_params (LeakyRelu: alpha; HardSigmoid: alpha, beta; Clip:
    min, max). Z is excluded by the rules."""
    y = conv(X, W, B, kernel_shape, strides, pads, dilations, auto_pad, group)
    params = list(activation_params or [])
    alpha = params[0] if params else None
    beta = params[1] if len(params) > 1 else None
    return as_dtype(fused_activation(widen(y), activation, alpha, beta), X.dtype)


def _attention_parts(x, w, bias, num_heads, scale, past=None, key_lengths=None, unidirectional=0):
    """com.microsoft Attention's (and QAttention's) computation up to the softmax, in double: Q, K, V =
    x @ w (+ bias) split in three equal parts, each (B, S, N * H) -> (B, N, S, H); K and V after the
    past's (past (2, B, N, P, H): present = (K, V) with the past first); the scaled scores Q K^T *
    scale (B, N, S, P + S) and the attended keys (B, 1, S, P + S): key j unless it is at or past its
    batch entry's length (key_lengths, over the P + S keys) or, with unidirectional, later than the
    query's own position (query i is at P + i)."""
    b, s, _ = x.shape
    n = int(num_heads)
    hidden = w.shape[1] // 3
    h = hidden // n
    with np.errstate(all="ignore"):
        qkv = x @ w
        if bias is not None:
            qkv = qkv + bias
        q, k, v = (qkv[..., i * hidden:(i + 1) * hidden].reshape(b, s, n, h).transpose(0, 2, 1, 3) for i in range(3))
        if past is not None:
            k = np.concatenate([past[0], k], axis=2)
            v = np.concatenate([past[1], v], axis=2)
        factor = (1.0 / math.sqrt(h)) if scale is None else scale
        scores = (q @ k.swapaxes(-1, -2)) * factor
    total = k.shape[2]
    allowed = np.ones((b, 1, s, total), dtype=bool)
    j = np.arange(total)
    if key_lengths is not None:
        allowed = allowed & (j[None, :] < np.asarray(key_lengths).astype(np.int64)[:, None])[:, None, None, :]
    if unidirectional:
        allowed = allowed & (j[None, :] <= total - s + np.arange(s)[:, None])[None, None]
    return k, v, scores, allowed


def contrib_attention(input, weights, bias=None, *, num_heads, scale=None):
    """com.microsoft Attention, without masks, past or attention_bias (the rules exclude them): Q, K, V
    = input @ weights (+ bias) split in three equal parts, each (B, S, N, H) -> (B, N, S, H); output =
    softmax(Q K^T * scale) V with heads concatenated, (B, S, N * H); present = (K, V) stacked,
    (2, B, N, S, H). Accumulated in double, rounded once to T."""
    wide = _exact_dtype(input.dtype)
    b, s, _ = input.shape
    k, v, scores, allowed = _attention_parts(input.astype(wide), weights.astype(wide),
                                             None if bias is None else bias.astype(wide), num_heads, scale)
    out = _attend(scores, allowed, v).transpose(0, 2, 1, 3).reshape(b, s, -1)
    return as_dtype(out, input.dtype), as_dtype(np.stack([k, v]), input.dtype)


def _dequantized(q, scale, zero_point=None):
    """scale * (q - zero_point) in double, exactly (an 8-bit difference times a float32 or float16
    scale fits double's 53 bits), the parameters per tensor (a scalar or one element) or per column
    (1-D along q's last axis); zero_point 0 when absent."""
    def along_last(p):
        a = np.asarray(p).astype(np.float64).reshape(-1)
        return a.reshape(()) if a.size == 1 else a

    zp = 0.0 if zero_point is None else along_last(zero_point)
    return (np.asarray(q).astype(np.float64) - zp) * along_last(scale)


def _qattention_parts(input, weight, bias, input_scale, weight_scale, mask_index, input_zero_point,
                      weight_zero_point, past, num_heads, scale, unidirectional):
    x = _dequantized(input, input_scale, input_zero_point)
    w = _dequantized(weight, weight_scale, weight_zero_point)
    return _attention_parts(x, w, bias.astype(np.float64), num_heads, scale,
                            None if past is None else past.astype(np.float64), mask_index, unidirectional)


def qattention(input, weight, bias, input_scale, weight_scale, mask_index=None, input_zero_point=None,
               weight_zero_point=None, past=None, *, num_heads, scale=None, unidirectional=0):
    """com.microsoft QAttention: com.microsoft Attention on the dequantized input and weight (input_scale
    * (input - input_zero_point), weight_scale * (weight - weight_zero_point), the weight's parameters
    per tensor or per column), with bias; K and V follow the past's (present = (K, V), (2, B, N, P + S,
    H)); a query leaves out the keys at or past its batch entry's mask_index length and, with
    unidirectional, the keys after its own position (P + i). Double, rounded once to T3 (bias's type)."""
    k, v, scores, allowed = _qattention_parts(input, weight, bias, input_scale, weight_scale, mask_index,
                                              input_zero_point, weight_zero_point, past, num_heads, scale,
                                              unidirectional)
    b, s, _ = input.shape
    out = _attend(scores, allowed, v).transpose(0, 2, 1, 3).reshape(b, s, -1)
    return as_dtype(out, bias.dtype), as_dtype(np.stack([k, v]), bias.dtype)


def qattention_defined(input, weight, bias, input_scale, weight_scale, mask_index=None, input_zero_point=None,
                       weight_zero_point=None, past=None, *, num_heads, scale=None, unidirectional=0,
                       mask_filter_value=None) -> bool:
    """QAttention's masking rule (``_masking_defined`` with mask_filter_value, -10000 by default), as
    MultiHeadAttention's: the text does not say whether a masked key's score is replaced by
    mask_filter_value or has it added, nor what a query that attends no key gives. Inputs the kernel
    cannot take count as defined: their own rules report them."""
    try:
        with np.errstate(all="ignore"):
            _, v, scores, allowed = _qattention_parts(input, weight, bias, input_scale, weight_scale, mask_index,
                                                      input_zero_point, weight_zero_point, past, num_heads, scale,
                                                      unidirectional)
    except Exception:  # noqa: BLE001 -- shapes the other rules reject
        return True
    fill = -10000.0 if mask_filter_value is None else float(mask_filter_value)
    return _masking_defined(scores, allowed, v, fill)


# How far below the largest score of a query's attended keys a masked key's score must lie (with
# mask_filter_value added, and mask_filter_value alone) for every reading of "masked" to agree:
# e^-128 (2.6e-56) times any float32 value is below float32's smallest subnormal, so the key's weight
# vanishes whether it is left out, filled with mask_filter_value or given it added once or twice.
MASKED_SCORE_GAP = 128.0


def _heads(x, b, s, n):
    """(B, S, N * H) -> (B, N, S, H), in double."""
    return x.astype(np.float64).reshape(b, s, n, -1).transpose(0, 2, 1, 3)


def _attend(scores, allowed, v):
    """softmax over the attended keys of each query (``allowed``, broadcast to ``scores``' (B, N, S,
    T)), times v (B, N, T, H_v): a key the query does not attend takes no part in its softmax nor in
    its weighted sum of v (no 0 * inf). Double."""
    allowed = np.broadcast_to(allowed, scores.shape)
    with np.errstate(all="ignore"):
        s = np.where(allowed, scores, -np.inf)
        m = np.max(s, axis=-1, keepdims=True)
        e = np.where(allowed, np.exp(s - m), 0.0)
        p = e / np.sum(e, axis=-1, keepdims=True)
        return np.where(allowed[..., None], p[..., None] * v[:, :, None], 0.0).sum(axis=-2)


def _masking_defined(scores, allowed, v, fill) -> bool:
    """Whether a masked key's weight is 0 however "masked" is read: every query attends at least one
    key, and each key it does not attend has a score that, with ``fill`` added (and ``fill`` alone),
    lies MASKED_SCORE_GAP below the largest attended score (NaN or +inf there fails) and finite values
    (an additive mask multiplies them by a zero weight: 0 * inf is NaN). Rows whose attended scores
    hold NaN or +inf are NaN under every reading and pass."""
    allowed = np.broadcast_to(allowed, scores.shape)
    if scores.size == 0:
        return True
    if not np.all(np.any(allowed, axis=-1)):
        return False
    masked = ~allowed
    if not masked.any():
        return True
    with np.errstate(all="ignore"):
        m = np.max(np.where(allowed, scores, -np.inf), axis=-1, keepdims=True)
        live = ~(np.isnan(m) | np.isposinf(m))
        gap = m - MASKED_SCORE_GAP
        vanishes = (scores + fill <= gap) & (fill <= gap)
    finite_v = np.all(np.isfinite(v), axis=-1)[:, :, None, :]
    return not np.any(masked & live & ~(vanishes & finite_v))


def _mha_parts(query, key, value, bias, key_padding_mask, attention_bias, num_heads, scale, unidirectional):
    """MultiHeadAttention's Q, K, V (B, N, S or L, H or H_v) with the bias added, the scaled scores
    plus attention_bias (B, N, S, L) and the attended keys (B, 1, S, L), all in double."""
    b, s, d = query.shape
    length = key.shape[1]
    n = int(num_heads)
    with np.errstate(all="ignore"):
        q, k, v = (x.astype(np.float64) for x in (query, key, value))
        if bias is not None:
            w = bias.astype(np.float64)
            q, k, v = q + w[:d], k + w[d:2 * d], v + w[2 * d:]
        q, k, v = _heads(q, b, s, n), _heads(k, b, length, n), _heads(v, b, length, n)
        factor = (1.0 / math.sqrt(q.shape[-1])) if scale is None else scale
        scores = (q @ k.swapaxes(-1, -2)) * factor
        if attention_bias is not None:
            scores = scores + attention_bias.astype(np.float64)
    allowed = np.ones((b, 1, s, length), dtype=bool)
    j = np.arange(length)
    if key_padding_mask is not None:
        m = np.asarray(key_padding_mask)
        if m.ndim == 1:  # the actual length of each key sequence
            allowed = allowed & (j[None, :] < m.astype(np.int64)[:, None])[:, None, None, :]
        elif m.ndim == 2:  # (B, L): 0 marks padding
            allowed = allowed & (m != 0)[:, None, None, :]
        else:  # (B, S, L)
            allowed = allowed & (m != 0)[:, None, :, :]
    if unidirectional:  # self attention (S == L, the rules): query i attends keys 0..i
        allowed = allowed & (j[None, :] <= np.arange(s)[:, None])[None, None]
    return q, k, v, scores, allowed


def multihead_attention(query, key, value, bias=None, key_padding_mask=None, attention_bias=None, *, num_heads,
                        scale=None, unidirectional=0):
    """com.microsoft MultiHeadAttention, separate Q, K, V (B, S, D), (B, L, D), (B, L, D_v): Q, K, V
    (+ their thirds of bias) split into num_heads heads; per head, softmax over the attended keys
    of Q K^T * scale (+ attention_bias) times V, heads concatenated to (B, S, D_v); present_key and
    present_value = K and V with their bias, (B, N, L, H) and (B, N, L, H_v). A key the padding mask
    (lengths, (B, L) or (B, S, L), 0 = padding) or the causal rule (unidirectional: key j <= query
    i) excludes takes no part. Double, rounded once to T."""
    q, k, v, scores, allowed = _mha_parts(query, key, value, bias, key_padding_mask, attention_bias, num_heads,
                                          scale, unidirectional)
    b, s, _ = query.shape
    out = _attend(scores, allowed, v).transpose(0, 2, 1, 3).reshape(b, s, -1)
    t = query.dtype
    return as_dtype(out, t), as_dtype(k, t), as_dtype(v, t)


def multihead_attention_defined(query, key, value, bias=None, key_padding_mask=None, attention_bias=None, *,
                                num_heads, scale=None, unidirectional=0, mask_filter_value=None) -> bool:
    """MultiHeadAttention's masking rule (``_masking_defined`` with mask_filter_value, -10000 by
    default): the text does not say whether a masked key's score is replaced by mask_filter_value or
    has it added, nor what a query that attends no key gives; where the readings agree, the key is
    simply left out. Inputs the kernel cannot take count as defined: their own rules report them."""
    try:
        with np.errstate(all="ignore"):
            _, _, v, scores, allowed = _mha_parts(query, key, value, bias, key_padding_mask, attention_bias,
                                                  num_heads, scale, unidirectional)
    except Exception:  # noqa: BLE001 -- shapes the other rules reject
        return True
    fill = -10000.0 if mask_filter_value is None else float(mask_filter_value)
    return _masking_defined(scores, allowed, v, fill)


def _gqa_parts(query, key, value, past_key, past_value, num_heads, kv_num_heads, scale, softcap, causal):
    """GroupQueryAttention's present key and value (B, KVN, P + S, H) in T, and in double the
    per-query-head Q, K, V, the (soft-capped) scaled scores and the attended keys."""
    b, s, width = query.shape
    n, kvn = int(num_heads), int(kv_num_heads)
    if key is None:  # packed: Q, K, V side by side on the last axis
        h = width // (n + 2 * kvn)
        key, value = query[..., n * h:(n + kvn) * h], query[..., (n + kvn) * h:]
        query = query[..., :n * h]
    k_new = key.reshape(b, s, kvn, -1).transpose(0, 2, 1, 3)
    v_new = value.reshape(b, s, kvn, -1).transpose(0, 2, 1, 3)
    present_k = k_new if past_key is None else np.concatenate([past_key, k_new], axis=2)
    present_v = v_new if past_value is None else np.concatenate([past_value, v_new], axis=2)
    group = np.arange(n) // (n // kvn)  # query head i reads kv head i // (num_heads / kv_num_heads)
    k = present_k.astype(np.float64)[:, group]
    v = present_v.astype(np.float64)[:, group]
    q = _heads(query, b, s, n)
    with np.errstate(all="ignore"):
        factor = (1.0 / math.sqrt(q.shape[-1])) if scale is None else scale
        scores = (q @ k.swapaxes(-1, -2)) * factor
        if softcap:
            scores = softcap * np.tanh(scores / softcap)
    total = k.shape[2]
    past = total - s
    allowed = np.ones((1, 1, s, total), dtype=bool)
    if causal:  # query i sits at position past + i
        allowed = (np.arange(total)[None, :] <= past + np.arange(s)[:, None])[None, None]
    return present_k, present_v, v, scores, allowed


def group_query_attention(query, key=None, value=None, past_key=None, past_value=None, *, num_heads, kv_num_heads,
                          scale=None, softcap=None, causal=1):
    """com.microsoft GroupQueryAttention, every batch entry P past and S new tokens (P + S =
    total_sequence_length): present_key / present_value = past_key / past_value followed by the new
    key / value in BNSH (B, KVN, P + S, H), copied; query head i attends with kv head i // (N / KVN);
    scores Q K^T * scale (1 / sqrt(H) by default), soft-capped as softcap * tanh(x / softcap) when
    softcap > 0, softmax over the attended keys (causal: query i, at position P + i, attends keys
    0..P + i; else all) times V, heads concatenated to (B, S, N * H). Packed QKV (key and value
    absent): query holds Q, K and V side by side. Double, rounded once to T."""
    present_k, present_v, v, scores, allowed = _gqa_parts(query, key, value, past_key, past_value, num_heads,
                                                          kv_num_heads, scale, softcap, causal)
    b, s = query.shape[:2]
    out = _attend(scores, allowed, v).transpose(0, 2, 1, 3).reshape(b, s, -1)
    return as_dtype(out, query.dtype), present_k, present_v


def group_query_attention_defined(query, key=None, value=None, past_key=None, past_value=None, *, num_heads,
                                  kv_num_heads, scale=None, softcap=None, causal=1) -> bool:
    """GroupQueryAttention's masking rule (``_masking_defined`` with -inf): the text says only that a
    causal mask is applied, not whether a future key is left out or given -inf, which makes a NaN or
    +inf score there, or an infinite value, decide the result. Inputs the kernel cannot take count
    as defined: their own rules report them."""
    try:
        with np.errstate(all="ignore"):
            _, _, v, scores, allowed = _gqa_parts(query, key, value, past_key, past_value, num_heads, kv_num_heads,
                                                  scale, softcap, causal)
    except Exception:  # noqa: BLE001 -- shapes the other rules reject
        return True
    return _masking_defined(scores, allowed, v, -np.inf)
