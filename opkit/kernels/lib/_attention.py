"""Attention: scaled dot-product Attention (and its rule), LinearAttention (and its rule),
RotaryEmbedding."""

from __future__ import annotations

import numpy as np

from ..runtime import onnx_dtype, widen


def rotary_embedding(X, cos_cache, sin_cache, position_ids=None, *, interleaved=0, num_heads=0,
                     rotary_embedding_dim=0):
    if X.ndim == 4:
        x = X.transpose(0, 2, 1, 3)  # (batch, seq, heads, head_size)
    else:
        b, s, hidden = X.shape
        x = X.reshape(b, s, int(num_heads), hidden // int(num_heads))
    d = x.shape[-1]
    rd = int(rotary_embedding_dim) or d
    if position_ids is not None:
        cos, sin = cos_cache[position_ids], sin_cache[position_ids]
    else:
        cos, sin = cos_cache, sin_cache
    # float16 / bfloat16 rotations in float32, rounded once
    cos, sin = widen(cos[:, :, None, :rd // 2]), widen(sin[:, :, None, :rd // 2])
    xr, xp = widen(x[..., :rd]), x[..., rd:]
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
    else:
        x1, x2 = xr[..., :rd // 2], xr[..., rd // 2:]
    r1, r2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    rot = np.stack([r1, r2], axis=-1).reshape(xr.shape) if interleaved else np.concatenate([r1, r2], axis=-1)
    y = np.concatenate([rot.astype(X.dtype), xp], axis=-1)
    return y.transpose(0, 2, 1, 3) if X.ndim == 4 else y.reshape(X.shape)


def _attention_heads(Q, K, V, past_key, past_value, q_num_heads, kv_num_heads):
    """Q, K, V as (batch, heads, sequence, head_size), the past keys and values prepended and K, V
    repeated to Q's heads (GQA / MQA); also the present key and value and the past's length."""
    if Q.ndim == 3:
        B, Sq = Q.shape[:2]
        q = Q.reshape(B, Sq, int(q_num_heads), -1).transpose(0, 2, 1, 3)
        k = K.reshape(B, K.shape[1], int(kv_num_heads), -1).transpose(0, 2, 1, 3)
        v = V.reshape(B, V.shape[1], int(kv_num_heads), -1).transpose(0, 2, 1, 3)
    else:
        q, k, v = Q, K, V
    Hq = q.shape[1]
    past = 0
    if past_key is not None:
        past = past_key.shape[2]
        k = np.concatenate([past_key, k], axis=2)
        v = np.concatenate([past_value, v], axis=2)
    present_k, present_v = k, v
    Hkv = k.shape[1]
    if Hq != Hkv:
        k = np.repeat(k, Hq // Hkv, axis=1)
        v = np.repeat(v, Hq // Hkv, axis=1)
    return q, k, v, present_k, present_v, past


def _attention_steps(dt, work_t, _exact):
    """The conversions of attention's steps, for input type ``dt`` computed in ``work_t``: up (to
    the working type), r (one step's rounding) and out (to an output in T1)."""
    def up(x):  # to the working type (bfloat16 through float32)
        x = np.asarray(x)
        return (x if x.dtype.kind == "f" else x.astype(np.float32)).astype(work_t)

    def r(x):  # each step rounds to the input precision, as the op's function body does
        return np.asarray(x, dtype=work_t) if _exact else np.asarray(x).astype(dt).astype(work_t)

    def out(x):  # an output in T1 (long double to float64 first: numpy cannot cast it to bfloat16)
        return np.asarray(x).astype(np.float64).astype(dt) if _exact else np.asarray(x).astype(dt)

    return up, r, out


def _attention_mask(shape, attn_mask, nonpad_kv_seqlen, past_key, past, is_causal, left_window_size,
                    right_window_size, up, work_t):
    """(bias, allowed) over (batch, 1, Sq, St): a float attn_mask's bias, and the keys each query
    attends after a boolean attn_mask, nonpad_kv_seqlen, the causal rule and the windows."""
    B, Sq, St = shape
    bias = np.zeros((B, 1, Sq, St), dtype=work_t)
    allowed = np.ones((B, 1, Sq, St), dtype=bool)
    if attn_mask is not None:
        m = attn_mask
        if m.shape[-1] < St:  # shorter masks are padded with -inf (False)
            width = [(0, 0)] * (m.ndim - 1) + [(0, St - m.shape[-1])]
            m = np.pad(m, width, constant_values=False if m.dtype == bool else -np.inf)
        if m.dtype == bool:
            allowed = allowed & m
        else:
            bias = bias + up(m)
    j = np.arange(St).reshape(1, 1, 1, St)
    i = np.arange(Sq).reshape(1, 1, Sq, 1)
    if nonpad_kv_seqlen is not None:
        lens = np.asarray(nonpad_kv_seqlen).astype(np.int64).reshape(B, 1, 1, 1)
        allowed = allowed & (j < lens)
        offset = lens - Sq if past_key is None else past
    else:
        offset = past
    if is_causal:
        allowed = allowed & (j <= i + offset)
    pos = i + offset
    if left_window_size is not None and left_window_size >= 0:
        allowed = allowed & (j >= pos - left_window_size)
    if right_window_size is not None and right_window_size >= 0:
        allowed = allowed & (j <= pos + right_window_size)
    return bias, allowed


def _attention_probs(qk, bias, softmax_precision, _exact, work_t):
    """The softmax of the biased scores ``qk`` over the keys, and the array it was computed from
    (in softmax_precision when given)."""
    work = qk.astype(onnx_dtype(softmax_precision)) if softmax_precision and not _exact else qk.astype(work_t)
    wf = work.astype(np.float32) if work.dtype.kind == "V" else work
    mx = np.max(wf, axis=-1, keepdims=True)
    # a fully-masked row (every key's combined bias is -inf) gives zeros, not NaN (the 1.23 errata);
    # a row whose scores are NaN or infinite is not masked and gives NaN, as softmax does
    dead = np.broadcast_to(np.all(np.isneginf(bias), axis=-1, keepdims=True), mx.shape)
    e = np.exp(wf - np.where(dead, 0, mx))
    total = np.sum(e, axis=-1, keepdims=True)
    p = np.where(dead, 0, e / np.where(total == 0, 1, total))
    return p, work


def attention(Q, K, V, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None, *,
              is_causal=0, kv_num_heads=None, q_num_heads=None, qk_matmul_output_mode=0, scale=None,
              softcap=0.0, softmax_precision=None, left_window_size=-1, right_window_size=-1, _exact=False):
    """Scaled dot-product attention (MHA / GQA / MQA) with the opset 23-25 masking rules.

    ``_exact``: the text's reading instead of the function body's, for ``attention_defined``: every
    step in long double (no rounding to T1, no overflow of intermediates), keys a query does not
    attend (boolean mask, causal rule, nonpad_kv_seqlen, windows) left out of its softmax and of its
    weighted sum of V rather than given a -inf bias; the outputs are rounded to T1 once."""
    three_d = Q.ndim == 3
    q, k, v, present_k, present_v, past = _attention_heads(Q, K, V, past_key, past_value, q_num_heads,
                                                           kv_num_heads)
    B, Hq, Sq, D = q.shape
    St = k.shape[2]
    # the function body computes sqrt(scale) in float32 (scale is a float attribute; the default
    # 1 / sqrt(head_size) divides float constants) and only then casts it to T1, also for double
    f32 = np.float32
    s = f32(1) / np.sqrt(f32(D)) if scale is None else f32(scale)
    sq = np.sqrt(s)
    dt = Q.dtype

    native = dt.kind == "f"  # float16/32/64: compute in the input type; bfloat16: float32, rounded per step
    work_t = np.longdouble if _exact else (dt if native else np.float32)
    up, r, out = _attention_steps(dt, work_t, _exact)

    sqt = up(np.asarray(sq).astype(dt))  # Cast <to: T1> (Sqrt (scale))
    qk = r(np.matmul(r(up(q) * sqt), np.swapaxes(r(up(k) * sqt), -1, -2)))
    qk_raw = qk
    if softcap:
        qk = r(softcap * r(np.tanh(r(qk / softcap))))
    qk_capped = qk
    bias, allowed = _attention_mask((B, Sq, St), attn_mask, nonpad_kv_seqlen, past_key, past, is_causal,
                                    left_window_size, right_window_size, up, work_t)
    # the body sums the biases ("AttnBiasCausalOrNot = Add (AttnBias, MaskTri)"): a float mask's NaN
    # or +inf at a key the causal rule excludes stays NaN (+inf + -inf), it is not replaced by -inf
    bias = np.where(allowed, bias, -np.inf) if _exact else bias + np.where(allowed, 0, -np.inf).astype(work_t)
    qk = np.where(allowed, qk + bias, -np.inf) if _exact else r(qk + bias)
    qk_biased = qk
    p, work = _attention_probs(qk, bias, softmax_precision, _exact, work_t)
    if _exact:  # a key the query does not attend takes no part in its sum: 0 * inf is not computed
        y = out(np.where(allowed[..., None], p[..., None] * up(v)[:, :, None], 0).sum(axis=-2))
    else:
        if softmax_precision:
            p = p.astype(work.dtype)
        p = p.astype(Q.dtype)
        y = np.matmul(p.astype(work_t), r(v.astype(work_t))).astype(Q.dtype)
    if three_d:
        y = y.transpose(0, 2, 1, 3).reshape(B, Sq, -1)
    qk_out = out({0: qk_raw, 1: qk_capped, 2: qk_biased, 3: p}[int(qk_matmul_output_mode)])
    return y, present_k, present_v, qk_out


def attention_defined(Q, K, V, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None,
                      **attrs) -> bool:
    """Whether Attention's result is defined: the function body (each step rounded to T1) and the
    text's exact reading (``attention(..., _exact=True)``) agree, element by element of Y and
    qk_matmul_output, on NaN / +inf / -inf / finite.

    They disagree where a half-precision intermediate of the body (Q * sqrt(scale), the QK matmul,
    the mask Add) overflows or underflows and a runtime computing in float32 does not; where a
    finite product overflows next to an infinite operand in the QK dot product, so that summation
    order or a fused multiply-add decides between +-inf and NaN; and where NaN or inf sits in K or V
    at a key the query does not attend (the body adds -inf to it and multiplies it by a 0 weight,
    while the text leaves such keys out). A call the kernel cannot take at all counts as defined:
    the kernel reports it."""
    try:
        with np.errstate(all="ignore"):
            body = attention(Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen, **attrs)
            exact = attention(Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen, **attrs, _exact=True)
    except Exception:  # noqa: BLE001 -- inputs the kernel rejects are not this rule's business
        return True
    for b, e in ((body[0], exact[0]), (body[3], exact[3])):
        b = np.asarray(b).astype(np.float64)
        e = np.asarray(e).astype(np.float64)
        if b.shape != e.shape:
            return True
        for cls in (np.isnan, np.isposinf, np.isneginf):
            if not np.array_equal(cls(b), cls(e)):
                return False
    return True


def linear_attention_defined(query, key, value, past_state=None, decay=None, beta=None, *, kv_num_heads=1,
                             q_num_heads=1, scale=0.0, update_rule="gated_delta") -> bool:
    """LinearAttention's rule: finite inputs, and the recurrence (run in float64) keeps every
    intermediate (exp(decay), the state, S^T k, the output) and its terms well inside float32's range
    (below 2^100 * ... : 1e36 after the terms' count), so neither an implementation in float32 nor one
    in float64 meets an overflow, inf - inf or 0 * inf the text leaves unordered."""
    arrays = [a for a in (query, key, value, past_state, decay, beta) if a is not None]
    if not all(np.all(np.isfinite(np.asarray(a, dtype=np.float64))) for a in arrays):
        return False
    update_rule = update_rule or "gated_delta"
    try:
        hq, hkv = int(q_num_heads), int(kv_num_heads)
        B, T, _ = query.shape
        dk = query.shape[-1] // hq
        dv = value.shape[-1] // hkv
        limit = 1e36 / max(1, dk + dv)
        mag = lambda a: np.abs(np.asarray(a, dtype=np.float64))  # noqa: E731
        q = mag(query).reshape(B, T, hkv, hq // hkv, dk)
        k = mag(key).reshape(B, T, hkv, dk)
        v = mag(value).reshape(B, T, hkv, dv)
        S = np.zeros((B, hkv, dk, dv)) if past_state is None else mag(past_state).reshape(B, hkv, dk, dv)
        gated = update_rule in ("gated", "gated_delta") and decay is not None
        delta = update_rule in ("delta", "gated_delta") and beta is not None
        if gated:
            g = np.asarray(decay, dtype=np.float64)
            if float(np.max(g, initial=-np.inf)) > 80.0:  # exp(80) = 5.5e34
                return False
            g = g.reshape(B, T, hkv, dk) if g.shape[-1] == hkv * dk else g.reshape(B, T, hkv, 1)
        if delta:
            bt = np.broadcast_to(mag(beta).reshape(B, T, -1), (B, T, hkv))
        top = float(np.max(S, initial=0.0))
        with np.errstate(all="ignore"):
            for t in range(T):  # the recurrence on magnitudes: a bound on every term of the real one
                kt, vt = k[:, t], v[:, t]
                decayed = S * np.exp(g[:, t])[..., None] if gated else S
                if delta:
                    pred = np.einsum("bhkv,bhk->bhv", decayed, kt)
                    S = decayed + bt[:, t][..., None, None] * np.einsum("bhk,bhv->bhkv", kt, vt + pred)
                    top = max(top, float(np.max(pred, initial=0.0)))
                else:
                    S = decayed + np.einsum("bhk,bhv->bhkv", kt, vt)
                out = np.einsum("bhgk,bhkv->bhgv", q[:, t], S) * max(1.0, abs(float(scale or 0.0)))
                top = max(top, float(np.max(S, initial=0.0)), float(np.max(out, initial=0.0)))
    except (ValueError, IndexError, TypeError):  # shapes another rule refuses
        return True
    return bool(np.isfinite(top) and top <= limit)


def linear_attention(query, key, value, past_state=None, decay=None, beta=None, *, chunk_size=64,
                     kv_num_heads=None, q_num_heads=None, scale=0.0, update_rule="gated_delta"):
    """The recurrence of LinearAttention, run token by token (the definition, not a chunked kernel)."""
    B, T, _ = query.shape
    hq, hkv = int(q_num_heads), int(kv_num_heads)
    dk = query.shape[-1] // hq
    dv = value.shape[-1] // hkv
    q = query.reshape(B, T, hq, dk).astype(np.float64)
    k = key.reshape(B, T, hkv, dk).astype(np.float64)
    v = value.reshape(B, T, hkv, dv).astype(np.float64)
    s = 1 / np.sqrt(dk) if not scale else scale
    S = np.zeros((B, hkv, dk, dv)) if past_state is None else past_state.astype(np.float64).copy()
    if decay is not None:
        g = decay.astype(np.float64)
        g = g.reshape(B, T, hkv, dk) if g.shape[-1] == hkv * dk else g.reshape(B, T, hkv, 1)
    if beta is not None:
        bt = beta.astype(np.float64)
        bt = np.broadcast_to(bt.reshape(B, T, -1), (B, T, hkv)) if bt.shape[-1] in (1, hkv) else bt
    group = hq // hkv
    out = np.zeros((B, T, hq, dv))
    for t in range(T):
        kt, vt = k[:, t], v[:, t]  # (B, hkv, dk), (B, hkv, dv)
        if update_rule in ("gated", "gated_delta"):
            gate = np.exp(g[:, t])[..., None]  # (B, hkv, dk or 1, 1)
            decayed = S * gate
        else:
            decayed = S
        if update_rule in ("delta", "gated_delta"):
            pred = np.einsum("bhkv,bhk->bhv", decayed, kt)
            S = decayed + bt[:, t][..., None, None] * np.einsum("bhk,bhv->bhkv", kt, vt - pred)
        else:
            S = decayed + np.einsum("bhk,bhv->bhkv", kt, vt)
        qt = q[:, t].reshape(B, hkv, group, dk)
        out[:, t] = (s * np.einsum("bhgk,bhkv->bhgv", qt, S)).reshape(B, hq, dv)
    state_t = query.dtype if past_state is None else past_state.dtype  # present_state is of type S
    return out.reshape(B, T, hq * dv).astype(query.dtype), S.astype(state_t)
