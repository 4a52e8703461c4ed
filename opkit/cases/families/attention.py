"""Attention family: Attention, RotaryEmbedding, LinearAttention and CausalConvWithState, and
com.microsoft RotaryEmbedding, Attention, QAttention, MultiHeadAttention and GroupQueryAttention.

Every tensor's shape derives from a few drawn sizes (batch, heads, sequence lengths, head sizes), so
the 3-D (heads packed into the last dimension, with the head-count attributes) and 4-D layouts, the
past/present caches, the masks and the cos/sin caches all agree by construction.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ...core.dtypes import np_dtype
from ...core.onnx_types import INT_RANGES
from ..case import ABSENT, NotGeneratable
from ..draws import _SEED
from ..context import Context, Draft, finite_values, int_tensor, values

_BOOL = st.booleans()
# softmax_precision: the float element types (TensorProto enums) ONNX accepts
_PRECISIONS = (1, 10, 11, 16)


def _small(draw, lo: int = 1, hi: int = 3) -> int:
    return draw(st.integers(lo, hi))


def _mask(draw, ctx: Context, b: int, hq: int, sq: int, total: int, min_len: int) -> np.ndarray:
    """An attention mask broadcastable to (b, hq, sq, total): rank 2..4, each leading dim full or 1;
    the last dimension ``total`` or (where the version allows) shorter, down to ``min_len``."""
    rank = draw(st.integers(2, 4))
    full = [b, hq, sq][4 - rank:]
    lead = [d if draw(st.integers(0, 2)) else 1 for d in full]
    last = total
    if min_len < total and draw(st.integers(0, 3)) == 0:
        last = draw(st.integers(min_len, total))
    elem = ctx.elem("attn_mask")
    shape = lead + [last]
    if elem == "bool":
        rng = np.random.default_rng(draw(_SEED))
        share = draw(st.sampled_from((1.0, 0.7, 0.0)))
        return (rng.random(shape) < share)
    return values(draw, elem, shape)


def _attention(draw, ctx: Context) -> Draft:
    b = _small(draw, 1, 2)
    hkv = _small(draw, 1, 2)
    group = draw(st.sampled_from((1, 1, 2, 3)))  # MHA, GQA / MQA
    hq = hkv * group
    sq = _small(draw, 1, 3)
    skv = _small(draw, 1, 3)
    d = _small(draw, 1, 4)
    dv = d if draw(_BOOL) else _small(draw, 1, 4)
    three_d = draw(_BOOL)
    attrs: dict = {}
    inputs: dict = {}
    if three_d:
        inputs["Q"] = values(draw, ctx.elem("Q"), (b, sq, hq * d))
        inputs["K"] = values(draw, ctx.elem("K"), (b, skv, hkv * d))
        inputs["V"] = values(draw, ctx.elem("V"), (b, skv, hkv * dv))
        attrs["q_num_heads"] = hq
        attrs["kv_num_heads"] = hkv
    else:
        inputs["Q"] = values(draw, ctx.elem("Q"), (b, hq, sq, d))
        inputs["K"] = values(draw, ctx.elem("K"), (b, hkv, skv, d))
        inputs["V"] = values(draw, ctx.elem("V"), (b, hkv, skv, dv))
        attrs["q_num_heads"] = ABSENT
        attrs["kv_num_heads"] = ABSENT

    # a KV cache: past_key and past_value together, or the external-cache lengths (not both)
    # nonpad_kv_seqlen excludes the past and present caches; opkit's model always declares the
    # present_key/present_value outputs, which ONNX's inference rejects together with it from opset 25
    nonpad = ctx.has_input("nonpad_kv_seqlen") and ctx.since < 25
    cache = draw(st.sampled_from(("none", "past", "nonpad") if nonpad else ("none", "past")))
    past = 0
    if cache == "past":
        past = draw(st.integers(0, 3))
        inputs["past_key"] = values(draw, ctx.elem("past_key"), (b, hkv, past, d))
        inputs["past_value"] = values(draw, ctx.elem("past_value"), (b, hkv, past, dv))
    else:
        inputs["past_key"] = None
        inputs["past_value"] = None
    total = past + skv
    min_len = total
    if ctx.has_input("nonpad_kv_seqlen"):
        if cache == "nonpad":
            lens = [draw(st.integers(0, skv)) for _ in range(b)]
            inputs["nonpad_kv_seqlen"] = int_tensor("int64", lens)
            min_len = max(1, max(lens))
        else:
            inputs["nonpad_kv_seqlen"] = None
    # the last mask dimension may be shorter than total_sequence_length (padded with -inf) only
    # where the version says so
    shorter = "shorter" in (ctx.input("attn_mask").doc or "") or "shorter" in (ctx.version.doc or "")
    # a mask is boolean or of Q's float type (the attn_mask text; the spec's rule): under any other
    # binding of U the mask is left out, so the binding still tests everything else
    maskable = ctx.elem("attn_mask") in ("bool", ctx.elem("Q"))
    inputs["attn_mask"] = (_mask(draw, ctx, b, hq, sq, total, min_len if shorter else total)
                           if maskable and draw(_BOOL) else None)

    attrs["is_causal"] = draw(st.sampled_from((ABSENT, 0, 1)))
    attrs["scale"] = draw(st.sampled_from((ABSENT, ABSENT, 0.5, 1.0, 0.125, 2.0)))
    attrs["softcap"] = draw(st.sampled_from((ABSENT, ABSENT, 0.0, 1.0, 5.0, 30.0)))
    attrs["qk_matmul_output_mode"] = draw(st.sampled_from((ABSENT, 0, 1, 2, 3)))
    attrs["softmax_precision"] = draw(st.sampled_from((ABSENT, ABSENT) + _PRECISIONS))
    if ctx.has_attribute("left_window_size"):
        attrs["left_window_size"] = draw(st.sampled_from((ABSENT, -1, 0, 1, 2)))
        # a positive right window goes with is_causal=0
        right = (ABSENT, -1, 0) if attrs["is_causal"] == 1 else (ABSENT, -1, 0, 1, 2)
        attrs["right_window_size"] = draw(st.sampled_from(right))
    _define(draw, ctx, inputs, attrs)
    return Draft(attributes=attrs, inputs=inputs)


def _defined(inputs: dict, attrs: dict) -> bool:
    """The spec's rule D1 (``attention_defined``) on a draft: the function body and the text's exact
    reading agree on which outputs are NaN / infinite."""
    from ...kernels.lib import attention_defined

    kwargs = {k: v for k, v in attrs.items() if v is not ABSENT}
    for name in ("scale", "softcap"):  # float attributes: float32 in the model
        if name in kwargs:
            kwargs[name] = float(np.float32(kwargs[name]))
    return attention_defined(inputs["Q"], inputs["K"], inputs["V"], inputs.get("attn_mask"), inputs.get("past_key"),
                             inputs.get("past_value"), inputs.get("nonpad_kv_seqlen"), **kwargs)


def _define(draw, ctx: Context, inputs: dict, attrs: dict) -> None:
    """Valid by construction: where rule D1 does not hold (a float16 intermediate that overflows, an
    inf next to an overflowing product in a dot product, NaN / inf at a key the query does not
    attend), redraw small values (integers in [-3, 3]) for the values, then the queries and keys,
    then a float mask, until it does; the shapes, attributes and the other tensors' edge values stay.
    All small, no step overflows in any type."""
    for names in (("V", "past_value"), ("Q", "K", "past_key"), ("attn_mask",)):
        if _defined(inputs, attrs):
            return
        for name in names:
            a = inputs.get(name)
            if a is not None and a.dtype != bool:
                inputs[name] = values(draw, ctx.elem(name), a.shape, kind="small")


def _rotary(draw, ctx: Context) -> Draft:
    b = _small(draw, 1, 2)
    s = _small(draw, 1, 3)
    h = _small(draw, 1, 3)
    half = _small(draw, 1, 3)
    d = 2 * half  # head_size is even
    # rotary_embedding_dim: 0 (= head_size) or an even value <= head_size
    rd_half = draw(st.integers(1, half))
    rd = 2 * rd_half
    attrs = {"interleaved": draw(st.sampled_from((ABSENT, 0, 1))),
             "rotary_embedding_dim": ABSENT if rd == d and draw(_BOOL) else (0 if rd == d and draw(_BOOL) else rd)}
    if attrs["rotary_embedding_dim"] in (ABSENT, 0):
        rd_half = half
    elem = ctx.elem("X")
    if draw(_BOOL):
        x = values(draw, elem, (b, s, h * d))
        attrs["num_heads"] = h
    else:
        x = values(draw, elem, (b, h, s, d))
        attrs["num_heads"] = ABSENT
    inputs = {"X": x}
    if draw(_BOOL):
        max_pos = _small(draw, 1, 6)
        rng = np.random.default_rng(draw(_SEED))
        inputs["position_ids"] = int_tensor(ctx.elem("position_ids"), rng.integers(0, max_pos, (b, s)).tolist())
        cache = (max_pos, rd_half)
    else:
        inputs["position_ids"] = None
        cache = (b, s, rd_half)
    inputs["cos_cache"] = values(draw, elem, cache)
    inputs["sin_cache"] = values(draw, elem, cache)
    return Draft(attributes=attrs, inputs=inputs)


def _contrib_rotary(draw, ctx: Context) -> Draft:
    """com.microsoft RotaryEmbedding: input (B, S, N * H) or (B, N, S, H), H even; rotary_embedding_dim
    (with num_heads, for a 3-D input) even and <= H, or absent (all of H); caches (max_seq, rd / 2);
    position_ids an offset of shape (1,) or per token (B, S), every position within the caches."""
    b, s, n, half = _small(draw, 1, 2), _small(draw, 1, 3), _small(draw, 1, 3), _small(draw, 1, 3)
    h = 2 * half
    four_d = draw(_BOOL)
    partial = draw(_BOOL)
    rd = 2 * draw(st.integers(1, half)) if partial else h
    attrs = {"interleaved": draw(st.sampled_from((ABSENT, 0, 1))),
             "rotary_embedding_dim": rd if partial else ABSENT,
             "num_heads": n if partial or draw(_BOOL) else ABSENT,
             "is_packed_batching": draw(st.sampled_from((ABSENT, 0))), "scale": draw(st.sampled_from((ABSENT, 1.0)))}
    elem = ctx.elem("input")
    x = values(draw, elem, (b, n, s, h) if four_d else (b, s, n * h))
    max_seq = s + draw(st.integers(0, 3))
    rng = np.random.default_rng(draw(_SEED))
    if draw(_BOOL):
        pos = int_tensor("int64", [int(rng.integers(0, max_seq - s + 1))])
    else:
        pos = int_tensor("int64", rng.integers(0, max_seq, (b, s)).tolist())
    return Draft(attributes=attrs, inputs={"input": x, "position_ids": pos,
                                           "cos_cache": values(draw, elem, (max_seq, rd // 2)),
                                           "sin_cache": values(draw, elem, (max_seq, rd // 2))})


def _contrib_attention(draw, ctx: Context) -> Draft:
    """com.microsoft Attention, the common path: input (B, S, D), weights (D, 3 * N * H), an optional
    bias, num_heads and scale; masks, past, attention_bias and the other attributes left out (the
    kernel does not implement them). Small values: no step overflows."""
    b, s, n, h, d = _small(draw, 1, 2), _small(draw, 1, 3), _small(draw, 1, 2), _small(draw, 1, 3), _small(draw, 1, 3)
    elem = ctx.elem("input")
    inputs = {"input": values(draw, elem, (b, s, d), kind="small"),
              "weights": values(draw, elem, (d, 3 * n * h), kind="small"),
              "bias": values(draw, elem, (3 * n * h,), kind="small") if draw(_BOOL) else None}
    for name in ("mask_index", "past", "attention_bias", "past_sequence_length"):
        inputs[name] = None
    attrs = {"num_heads": n, "scale": draw(st.sampled_from((ABSENT, ABSENT, 0.5, 0.125))),
             "unidirectional": draw(st.sampled_from((ABSENT, 0)))}
    for name in ("mask_filter_value", "do_rotary", "past_present_share_buffer", "qkv_hidden_sizes",
                 "rotary_embedding_dim"):
        attrs[name] = ABSENT
    return Draft(attributes=attrs, inputs=inputs)


# QAttention's quantized values sit within these of their zero point, with scales below 1 / reach:
# every dequantized value is within [-1, 1] however the bytes spread
_Q_REACHES = (2, 16, 100)


def _quant_scale(rng, reach: int, n: int, elem: str, signed: bool) -> np.ndarray:
    """``n`` scales below 1 / ``reach``: a power of two, times a random factor in [0.5, 1) one time in
    two (products no longer exact in float32), negative now and then where ``signed`` (onnxruntime's
    past-state tests draw weight scales in [-0.01, 0.01])."""
    base = 2.0 ** -int(np.ceil(np.log2(reach)))
    factor = rng.uniform(0.5, 1.0, n) if rng.integers(0, 2) else np.ones(n)
    sign = np.where(rng.random(n) < 0.25, -1.0, 1.0) if signed else np.ones(n)
    return (base * factor * sign).astype(np_dtype(elem))


def _quantized(rng, elem: str, shape, zero_point, reach: int) -> np.ndarray:
    """Values of ``elem`` within ``reach`` of ``zero_point`` (broadcast along the last axis), clipped
    to the type's range."""
    lo, hi = INT_RANGES[elem]
    zp = np.zeros(()) if zero_point is None else zero_point.astype(np.int64).reshape(-1)
    zp = zp.reshape(()) if zp.size == 1 else zp
    q = np.clip(zp + rng.integers(-reach, reach + 1, shape), lo, hi)
    return q.astype(np_dtype(elem))


def _contrib_qattention(draw, ctx: Context) -> Draft:
    """com.microsoft QAttention: input (B, S, D_in) and weight (D_in, 3 * N * H) quantized within a
    drawn reach of their zero points (absent, per tensor, or the weight's per column) with scales
    below 1 / reach, so every dequantized value lies in [-1, 1]; bias and past small integers
    (projections within 6, scores within 108); mask_index lengths >= 1 over the P + S keys (key 0
    attended: valid by construction for rule D1 with every mask_filter_value drawn), unidirectional,
    scale (0 too: the text uses any scale given). The other mask forms, the shared buffer and rotary
    are left out (the kernel does not implement them)."""
    b, s, d = _small(draw, 1, 2), _small(draw, 1, 3), _small(draw, 1, 3)
    n, h = _small(draw, 1, 2), _small(draw, 1, 3)
    cols = 3 * n * h
    t1, t2, t3 = ctx.elem("input"), ctx.elem("weight"), ctx.elem("bias")
    rng = np.random.default_rng(draw(_SEED))
    reach_x, reach_w = draw(st.sampled_from(_Q_REACHES)), draw(st.sampled_from(_Q_REACHES))
    inputs: dict = {"input_scale": _quant_scale(rng, reach_x, 1, t3, False).reshape(draw(st.sampled_from(((), (1,)))))}
    izp_form = draw(st.sampled_from(("absent", "scalar", "vector")))
    inputs["input_zero_point"] = None if izp_form == "absent" else \
        values(draw, t1, () if izp_form == "scalar" else (1,), kind="random")
    ws_shape = draw(st.sampled_from(((), (1,), (cols,))))
    inputs["weight_scale"] = _quant_scale(rng, reach_w, int(np.prod(ws_shape, dtype=np.int64)), t3, True).reshape(ws_shape)
    wzp_shape = draw(st.sampled_from((None, (), (1,), (cols,))))
    inputs["weight_zero_point"] = None if wzp_shape is None else values(draw, t2, wzp_shape, kind="random")
    inputs["input"] = _quantized(rng, t1, (b, s, d), inputs["input_zero_point"], reach_x)
    inputs["weight"] = _quantized(rng, t2, (d, cols), inputs["weight_zero_point"], reach_w)
    inputs["bias"] = values(draw, t3, (cols,), kind="small")
    past = draw(st.sampled_from((None, None, 0, 1, 2)))
    inputs["past"] = None if past is None else values(draw, t3, (2, b, n, past, h), kind="small")
    total = s + (past or 0)
    inputs["mask_index"] = int_tensor(ctx.elem("mask_index"), rng.integers(1, total + 1, b).tolist()) \
        if draw(_BOOL) else None
    attrs = {"num_heads": n, "unidirectional": draw(st.sampled_from((ABSENT, 0, 1))),
             "scale": draw(st.sampled_from((ABSENT, ABSENT, ABSENT, 0.5, 0.125, 1.0, 0.0))),
             "mask_filter_value": draw(st.sampled_from((ABSENT, ABSENT, -1000.0, -1.0e30))),
             "past_present_share_buffer": draw(st.sampled_from((ABSENT, 0))), "do_rotary": draw(st.sampled_from((ABSENT, 0)))}
    return Draft(attributes=attrs, inputs=inputs)


def _contrib_mha(draw, ctx: Context) -> Draft:
    """com.microsoft MultiHeadAttention, separate Q (B, S, D), K (B, L, D), V (B, L, D_v): an optional
    bias, key_padding_mask (lengths (B), (B, L) or (B, S, L) of 0 / 1), attention_bias ((B or 1, N or
    1, S, L)), unidirectional with L == S, scale (0 too: the text uses any scale given) and
    mask_filter_value far below every score. Valid by construction (rule D1): every query attends a
    key (key 0 under the causal rule, a drawn one otherwise) and small values (integers in [-3, 3],
    up to 6 with a bias: scores within +-111) keep every masked key's weight 0 with any
    mask_filter_value drawn. The packed, past and cache forms are left out (the kernel does not
    implement them); qk is not declared (n_outputs 3: the text does not say what "normalized Q * K"
    is)."""
    b, s, n, h = _small(draw, 1, 2), _small(draw, 1, 3), _small(draw, 1, 2), _small(draw, 1, 3)
    hv = h if draw(_BOOL) else _small(draw, 1, 3)
    causal = draw(st.sampled_from((ABSENT, 0, 1)))
    length = s if causal == 1 else _small(draw, 1, 3)
    elem = ctx.elem("query")
    rng = np.random.default_rng(draw(_SEED))
    inputs = {"query": values(draw, elem, (b, s, n * h), kind="small"),
              "key": values(draw, elem, (b, length, n * h), kind="small"),
              "value": values(draw, elem, (b, length, n * hv), kind="small"),
              "bias": values(draw, elem, (2 * n * h + n * hv,), kind="small") if draw(_BOOL) else None,
              "attention_bias": None, "key_padding_mask": None}
    form = draw(st.sampled_from(("none", "none", "lengths", "2d", "3d")))
    m_elem = ctx.elem("key_padding_mask")
    if form == "lengths":  # >= 1: key 0 is attended
        inputs["key_padding_mask"] = int_tensor(m_elem, rng.integers(1, length + 1, b).tolist())
    elif form in ("2d", "3d"):
        shape = (b, length) if form == "2d" else (b, s, length)
        bits = rng.integers(0, 2, shape)
        keep = np.zeros(shape[:-1], dtype=np.int64) if causal == 1 else rng.integers(0, length, shape[:-1])
        np.put_along_axis(bits, keep[..., None], 1, axis=-1)  # one attended key per row
        inputs["key_padding_mask"] = int_tensor(m_elem, bits.tolist())
    if draw(_BOOL):
        lead = [b if draw(_BOOL) else 1, n if draw(_BOOL) else 1]
        inputs["attention_bias"] = values(draw, elem, (*lead, s, length), kind="small")
    for name in ("past_key", "past_value", "past_sequence_length", "cache_indirection"):
        inputs[name] = None
    attrs = {"num_heads": n, "unidirectional": causal,
             "scale": draw(st.sampled_from((ABSENT, ABSENT, ABSENT, 0.5, 0.125, 1.0, 0.0))),
             "mask_filter_value": draw(st.sampled_from((ABSENT, ABSENT, -1000.0, -1.0e30)))}
    return Draft(attributes=attrs, inputs=inputs, n_outputs=3)


# GroupQueryAttention's head sizes: onnxruntime's CPU kernel takes multiples of 8 only (the text asks
# for none), so most draws take 8 and one in four a smaller size
_GQA_HEAD_SIZES = (8, 8, 8, 2)


def _contrib_gqa(draw, ctx: Context) -> Draft:
    """com.microsoft GroupQueryAttention: every batch entry has P past and S new tokens (seqlens_k
    all total_sequence_length - 1, past caches of P = total - S): a prompt (P = 0, past absent or
    empty), one generated token (S = 1) or a continued prompt (S > 1 after a past, batch 1, as the
    text requires); num_heads = kv_num_heads * group; separate or packed Q, K, V; causal or not,
    scale (0 too) and softcap. Rotary, local windows, quantized caches, attention_bias and the other
    inputs are left out (rules C8, C9). Small values: no step overflows."""
    kvn = _small(draw, 1, 2)
    n = kvn * draw(st.sampled_from((1, 1, 2, 3)))
    h = draw(st.sampled_from(_GQA_HEAD_SIZES))
    mode = draw(st.sampled_from(("prompt", "token", "continue")))
    if mode == "prompt":
        b, s, past = _small(draw, 1, 2), _small(draw, 1, 3), 0
    elif mode == "token":
        b, s, past = _small(draw, 1, 2), 1, _small(draw, 1, 3)
    else:
        b, s, past = 1, _small(draw, 2, 3), _small(draw, 1, 3)
    total = past + s
    elem = ctx.elem("query")
    packed = draw(st.integers(0, 3)) == 0
    inputs: dict = {}
    if packed:
        inputs["query"] = values(draw, elem, (b, s, (n + 2 * kvn) * h), kind="small")
        inputs["key"] = inputs["value"] = None
    else:
        inputs["query"] = values(draw, elem, (b, s, n * h), kind="small")
        inputs["key"] = values(draw, elem, (b, s, kvn * h), kind="small")
        inputs["value"] = values(draw, elem, (b, s, kvn * h), kind="small")
    if past or draw(_BOOL):
        cache = ctx.elem("past_key")
        inputs["past_key"] = values(draw, cache, (b, kvn, past, h), kind="small")
        inputs["past_value"] = values(draw, cache, (b, kvn, past, h), kind="small")
    else:
        inputs["past_key"] = inputs["past_value"] = None
    m_elem = ctx.elem("seqlens_k")
    inputs["seqlens_k"] = int_tensor(m_elem, [total - 1] * b)
    inputs["total_sequence_length"] = int_tensor(m_elem, [total], () if draw(_BOOL) else (1,))
    for name in ("cos_cache", "sin_cache", "position_ids", "attention_bias", "head_sink", "k_scale", "v_scale",
                 "q_norm_weight", "k_norm_weight"):
        inputs[name] = None
    attrs = {"num_heads": n, "kv_num_heads": kvn, "causal": draw(st.sampled_from((ABSENT, 1, 0))),
             "scale": draw(st.sampled_from((ABSENT, ABSENT, ABSENT, 0.5, 0.125, 0.0))),
             "softcap": draw(st.sampled_from((ABSENT, ABSENT, 0.0, 1.0, 5.0))),
             "local_window_size": draw(st.sampled_from((ABSENT, -1))), "do_rotary": draw(st.sampled_from((ABSENT, 0))),
             "smooth_softmax": draw(st.sampled_from((ABSENT, 0))), "qk_output": draw(st.sampled_from((ABSENT, 0))),
             "sliding_window_cache": ABSENT, "k_quant_type": ABSENT, "v_quant_type": ABSENT,
             "kv_cache_bit_width": ABSENT, "rotary_interleaved": ABSENT, "qk_norm_epsilon": ABSENT}
    return Draft(attributes=attrs, inputs=inputs, n_outputs=3)


def _linear_attention(draw, ctx: Context) -> Draft:
    b = _small(draw, 1, 2)
    t = _small(draw, 1, 3)
    hkv = _small(draw, 1, 2)
    hq = hkv * draw(st.sampled_from((1, 2)))
    dk = _small(draw, 1, 3)
    dv = _small(draw, 1, 3)
    rule = draw(st.sampled_from((ABSENT, "linear", "gated", "delta", "gated_delta")))
    eff = "gated_delta" if rule is ABSENT else rule
    elem = ctx.elem("query")
    inputs = {
        "query": values(draw, elem, (b, t, hq * dk)),
        "key": values(draw, elem, (b, t, hkv * dk)),
        "value": values(draw, elem, (b, t, hkv * dv)),
        # without past_state ONNX infers present_state's type from T: a state type S other than T
        # needs past_state
        "past_state": (values(draw, ctx.elem("past_state"), (b, hkv, dk, dv))
                       if ctx.elem("past_state") != elem or draw(_BOOL) else None),
    }
    gated = eff in ("gated", "gated_delta")
    delta = eff in ("delta", "gated_delta")
    # decay is log-space (exp(g) multiplies the state): finite values keep it meaningful
    # ONNX's inference requires decay for the gated rules and beta for the delta rules, and forbids
    # them otherwise
    if gated:
        inputs["decay"] = finite_values(draw, elem, (b, t, draw(st.sampled_from((hkv * dk, hkv)))))
    else:
        inputs["decay"] = None
    if delta:
        inputs["beta"] = finite_values(draw, elem, (b, t, draw(st.sampled_from((hkv, 1)))))
    else:
        inputs["beta"] = None
    attrs = {"q_num_heads": hq, "kv_num_heads": hkv, "update_rule": rule,
             "scale": draw(st.sampled_from((ABSENT, 0.0, 0.5, 1.0))),
             "chunk_size": draw(st.sampled_from((ABSENT, 1, 2, 64)))}
    _define_linear(draw, ctx, inputs, attrs)
    return Draft(attributes=attrs, inputs=inputs)


def _define_linear(draw, ctx: Context, inputs: dict, attrs: dict) -> None:
    """Valid by construction for LinearAttention's rule D1 (linear_attention_defined): where it does
    not hold (an infinite input, decay above 80, a state term past 1e36), redraw small values
    (integers in [-3, 3]) for decay and beta, then value and past_state, then query and key, until it
    does. Small values keep every step in range."""
    from ...kernels.lib import linear_attention_defined

    def defined() -> bool:
        return linear_attention_defined(
            inputs["query"], inputs["key"], inputs["value"], inputs.get("past_state"), inputs.get("decay"),
            inputs.get("beta"), kv_num_heads=attrs["kv_num_heads"],
            q_num_heads=attrs["q_num_heads"], scale=0.0 if attrs["scale"] is ABSENT else attrs["scale"],
            update_rule=None if attrs["update_rule"] is ABSENT else attrs["update_rule"])

    for names in (("decay", "beta"), ("value", "past_state"), ("query", "key")):
        if defined():
            return
        for name in names:
            a = inputs.get(name)
            if a is not None:
                inputs[name] = values(draw, ctx.elem(name), a.shape, kind="small")


def _causal_conv(draw, ctx: Context) -> Draft:
    b = _small(draw, 1, 2)
    c = _small(draw, 1, 3)
    length = _small(draw, 1, 4)
    k = _small(draw, 1, 4)
    elem = ctx.elem("input")
    inputs = {
        "input": values(draw, elem, (b, c, length)),
        "weight": values(draw, elem, (c, 1, k)),
        "bias": values(draw, elem, (c,)) if draw(_BOOL) else None,
        "past_state": values(draw, elem, (b, c, k - 1)) if draw(_BOOL) else None,
    }
    return Draft(attributes={"activation": draw(st.sampled_from((ABSENT, "none", "silu", "swish")))},
                 inputs=inputs)


def draw(draw, ctx: Context) -> Draft:
    if ctx.op == "Attention":
        return _contrib_attention(draw, ctx) if ctx.spec.domain == "com.microsoft" else _attention(draw, ctx)
    if ctx.op == "QAttention":
        return _contrib_qattention(draw, ctx)
    if ctx.op == "MultiHeadAttention":
        return _contrib_mha(draw, ctx)
    if ctx.op == "GroupQueryAttention":
        return _contrib_gqa(draw, ctx)
    if ctx.op == "RotaryEmbedding":
        return _contrib_rotary(draw, ctx) if ctx.spec.domain == "com.microsoft" else _rotary(draw, ctx)
    if ctx.op == "LinearAttention":
        return _linear_attention(draw, ctx)
    if ctx.op == "CausalConvWithState":
        return _causal_conv(draw, ctx)
    raise NotGeneratable(f"the attention family has no builder for {ctx.op}")
