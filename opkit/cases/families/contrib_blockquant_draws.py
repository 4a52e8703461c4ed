"""Family hook helpers: com.microsoft's block-quantized ops (MatMulNBits, GatherBlockQuantized,
MatMulBnb4); the ``quantization`` family hands them here.

Each builder draws the quantization layout first (bits, block size, the quantized axis and its
length), then packs quantized data of exactly the shape that layout gives -- blocks padded to a
whole block, values packed low-order bits first -- and scales (finite, strictly positive, one per
block) and zero points (packed like the data, or of the scale's type) of the matching block
count. Padding bits past the last value are random: the text gives them no meaning, so an
implementation that reads them is caught.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..context import ABSENT, Context, Draft, by_op, values
from .quantization import positive

_BOOL = st.booleans()
_SEED = st.integers(0, 2**32 - 1)


def _bytes(draw, shape) -> np.ndarray:
    """Random uint8 bytes: packed quantized values, every bit pattern valid."""
    rng = np.random.default_rng(draw(_SEED))
    return rng.integers(0, 256, tuple(int(d) for d in shape)).astype(np.uint8)


def _float_zero_points(draw, elem: str, shape, bits: int) -> np.ndarray:
    """Zero points of the scale's type: integers in the quantized range, or (one draw in four)
    any value in it -- the text only says "same type as A", and (q - z) * s needs no integer z."""
    from ..draws import cast

    rng = np.random.default_rng(draw(_SEED))
    n = int(np.prod(shape))
    if draw(st.integers(0, 3)) == 3:
        vals = rng.uniform(0, 2**bits - 1, n)
    else:
        vals = rng.integers(0, 2**bits, n).astype(np.float64)
    return cast(vals, elem).reshape(shape)


def _g_idx(draw, K: int, block_size: int, k_blocks: int):
    """g_idx (deprecated): absent mostly; else the trivial k // block_size or any block per row,
    over K or the padded K (onnxruntime's tests give the padded length)."""
    kind = draw(st.sampled_from((None, None, None, "trivial", "any")))
    if kind is None:
        return None
    length = draw(st.sampled_from((K, k_blocks * block_size)))
    if kind == "trivial":
        return (np.arange(length) // block_size).astype(np.int32)
    rng = np.random.default_rng(draw(_SEED))
    return rng.integers(0, k_blocks, length).astype(np.int32)


def _matmul_nbits(draw, ctx: Context) -> Draft:
    """MatMulNBits: A (..., K), B (N, k_blocks, block_size * bits / 8) packed uint8, scales (N,
    k_blocks), zero points packed (N, ceil(k_blocks * bits / 8)) or unpacked (N, k_blocks) of A's
    type, g_idx and bias sometimes; accuracy_level 0 / 1 only (2-4 allow A to be downcast or
    quantized to int8, an approximation no tolerance of the text bounds)."""
    elem = ctx.elem("A")
    bits = draw(st.sampled_from((4, 4, 2, 8)))
    block_size = draw(st.sampled_from((16, 16, 32, 64)))
    K = draw(st.integers(1, 3 * block_size))
    N = draw(st.integers(1, 4))
    kb = -(-K // block_size)
    lead = [draw(st.integers(0, 3) if draw(st.integers(0, 7)) == 0 else st.integers(1, 3))
            for _ in range(draw(st.integers(0, 2)))]
    inputs = {
        "A": values(draw, elem, lead + [K], kind=draw(st.sampled_from(("small", "random")))),
        "B": _bytes(draw, (N, kb, block_size * bits // 8)),
        "scales": positive(draw, elem, (N, kb)),
    }
    z_elem = ctx.elem("zero_points")
    z_kind = draw(st.sampled_from(("none", "given", "given")))
    if z_kind == "given" and z_elem == "uint8":
        inputs["zero_points"] = _bytes(draw, (N, -(-kb * bits // 8)))
    elif z_kind == "given" and z_elem == elem:
        inputs["zero_points"] = _float_zero_points(draw, elem, (N, kb), bits)
    else:  # absent (2^(bits - 1)), also when the bound type is neither uint8 nor A's type
        inputs["zero_points"] = None
    inputs["g_idx"] = _g_idx(draw, K, block_size, kb)
    inputs["bias"] = values(draw, elem, (N,), kind="small") if draw(_BOOL) else None
    attrs = {"K": K, "N": N, "block_size": block_size, "bits": ABSENT if bits == 4 and draw(_BOOL) else bits,
             "accuracy_level": draw(st.sampled_from((ABSENT, 0, 1))),
             "weight_prepacked": draw(st.sampled_from((ABSENT, 0)))}  # other values name EP layouts
    return Draft(attrs, inputs)


_FLOAT_DATA = ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float4e2m1")


def _gather_layout(draw, elem: str, rank: int):
    """(bits, gather_axis, quantize_axis, block_size) valid for ``elem``: uint8 gathers on axis 0
    and, packed (bits < 8), quantizes another axis; int4 / uint4 are 4 bits; FP8 / FP4 ignore bits
    and may take block_size 0 (one block per axis)."""
    if elem == "uint8":
        bits = draw(st.sampled_from((4, 8, 2)))
        ga = draw(st.sampled_from((0, -rank)))
        axes = [a for a in range(rank) if bits == 8 or a != 0]
        qa = draw(st.sampled_from(axes))
    else:
        bits = 4
        ga, qa = draw(st.integers(0, rank - 1)), draw(st.integers(0, rank - 1))
    qa = qa - rank if draw(_BOOL) else qa
    sizes = (16, 16, 32, 0) if elem in _FLOAT_DATA else (16, 16, 32)
    block = draw(st.sampled_from(sizes))
    return bits, ga, qa, block


def _gather_block_quantized(draw, ctx: Context) -> Draft:
    """GatherBlockQuantized: data of rank 1-3 (uint8: packed along the last axis, 8 / bits values a
    byte), scales with the quantized axis cut to ceil(dim / block_size) (FP8 / FP4: other axes 1 at
    times, a broadcast scale), zero points of the scales' shape (uint8: packed like the data; none
    for FP8 / FP4), indices mostly in [-s, s - 1] and at times outside (a slice of zeros)."""
    elem, out = ctx.elem("data"), ctx.elem("scales")
    rank = draw(st.integers(2, 3)) if elem == "uint8" else draw(st.integers(1, 3))
    bits, ga, qa, block = _gather_layout(draw, elem, rank)
    a = qa % rank
    shape = [draw(st.integers(1, 3)) for _ in range(rank)]
    shape[a] = draw(st.integers(1, 2 * (block or 16) + 3))
    per = 8 // bits if elem == "uint8" else 1
    shape[-1] = -(-shape[-1] // per) * per  # whole bytes along the packed axis
    s_shape = list(shape)
    s_shape[a] = -(-shape[a] // block) if block else 1
    if elem in _FLOAT_DATA:
        s_shape = [1 if i != a and draw(st.integers(0, 2)) == 0 else d for i, d in enumerate(s_shape)]
    inputs = {"scales": positive(draw, out, s_shape)}
    if elem == "uint8":
        inputs["data"] = _bytes(draw, shape[:-1] + [shape[-1] // per])
        z_shape = s_shape[:-1] + [-(-s_shape[-1] * bits // 8)]
        inputs["zero_points"] = _bytes(draw, z_shape) if draw(_BOOL) else None
    else:
        inputs["data"] = values(draw, elem, shape)
        given = elem not in _FLOAT_DATA and draw(_BOOL)
        inputs["zero_points"] = values(draw, elem, s_shape) if given else None
    n = shape[ga % rank]
    rng = np.random.default_rng(draw(_SEED))
    i_shape = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
    lo, hi = (-n - 2, n + 2) if draw(st.integers(0, 5)) == 0 else (-n, n)
    from ..draws import cast

    inputs["indices"] = cast(rng.integers(lo, hi, i_shape), ctx.elem("indices")).reshape(i_shape)
    attrs = {"gather_axis": ABSENT if ga == 0 and draw(_BOOL) else ga,
             "quantize_axis": ABSENT if qa == 1 and draw(_BOOL) else qa,
             "block_size": block, "bits": ABSENT if bits == 4 and draw(_BOOL) else bits}
    return Draft(attrs, inputs)


def _matmul_bnb4(draw, ctx: Context) -> Draft:
    """MatMulBnb4: B holds the N * K codes of the (N, K) weight, two a byte ((N * K + 1) / 2 bytes,
    an odd count padded), absmax one positive value per block of block_size codes of the flattened
    weight; A is (..., K), or (..., N) with transB 0."""
    elem = ctx.elem("A")
    block_size = draw(st.sampled_from((16, 16, 32, 64)))
    K, N = draw(st.integers(1, 2 * block_size + 3)), draw(st.integers(1, 4))
    trans = draw(st.sampled_from((ABSENT, 1, 1, 0)))
    lead = [draw(st.integers(0, 3) if draw(st.integers(0, 7)) == 0 else st.integers(1, 3))
            for _ in range(draw(st.integers(0, 2)))]
    inputs = {
        "A": values(draw, elem, lead + [N if trans == 0 else K], kind=draw(st.sampled_from(("small", "random")))),
        "B": _bytes(draw, ((N * K + 1) // 2,)),
        "absmax": positive(draw, elem, (-(-N * K // block_size),)),
    }
    attrs = {"K": K, "N": N, "block_size": block_size, "quant_type": draw(st.sampled_from((0, 1))),
             "transB": trans, "training_mode": draw(st.sampled_from((ABSENT, 0, 0, 1)))}
    return Draft(attrs, inputs)


_OPS = {"MatMulNBits": _matmul_nbits, "GatherBlockQuantized": _gather_block_quantized, "MatMulBnb4": _matmul_bnb4}

OPS = frozenset(_OPS)

draw = by_op("quantization (com.microsoft block-quantized)", _OPS)
