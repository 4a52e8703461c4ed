"""com.microsoft quantized ops: "dequantize -> float op -> requantize" in float32, as onnxruntime's
contrib-op tests compute their expected values (QLinearAdd, QLinearMul, QLinearSigmoid,
QLinearLeakyRelu, ...).

A quantized value q with scale s and zero point z stands for s * (q - z): the difference is exact
(an integer), the product is rounded once to float32. The float op runs in float32, and the result
y is requantized as round_half_even(y / s_out) + z_out (division in float32), saturated to the
output type's range.
"""

from __future__ import annotations

import numpy as np

__all__ = ["q_dequantize", "q_requantize", "qlinear_average_pool", "qlinear_binary", "qlinear_global_average_pool", "qlinear_unary", "matmul_integer_to_float", "qgemm",
           "unpack_bits", "matmul_nbits_weight", "matmul_nbits",
           "gather_block_quantized", "block_float_data", "block_scale_shape",
           "BNB4_CODES", "matmul_bnb4"]


def _scalar(p) -> np.float32:
    return np.float32(np.asarray(p, dtype=np.float32).reshape(-1)[0])


def _zp(z) -> int:
    return 0 if z is None else int(np.asarray(z).reshape(-1)[0])


def q_dequantize(x, scale, zero_point=None) -> np.ndarray:
    """float32(scale * (x - zero_point)) for a per-tensor scale and zero point (absent: 0)."""
    diff = np.asarray(x).astype(np.int64) - _zp(zero_point)
    with np.errstate(over="ignore", invalid="ignore"):
        return (_scalar(scale) * diff.astype(np.float32)).astype(np.float32)


def q_requantize(y, scale, zero_point, dtype) -> np.ndarray:
    """saturate(round_half_even(float32(y / scale)) + zero_point) in ``dtype`` (per tensor)."""
    info = np.iinfo(dtype)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        q = np.rint(np.asarray(y, dtype=np.float32) / _scalar(scale)).astype(np.float64) + _zp(zero_point)
    return np.clip(q, info.min, info.max).astype(dtype)


_BINARY = {"add": np.add, "mul": np.multiply}


def qlinear_binary(kind, A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point=None):
    """QLinearAdd / QLinearMul: C = quantize(dequantize(A) op dequantize(B)), NumPy broadcasting."""
    a = q_dequantize(A, A_scale, A_zero_point)
    b = q_dequantize(B, B_scale, B_zero_point)
    with np.errstate(over="ignore", invalid="ignore"):
        y = _BINARY[kind](a, b).astype(np.float32)
    return q_requantize(y, C_scale, C_zero_point, A.dtype)


def qlinear_unary(fn, X, X_scale, X_zero_point, Y_scale, Y_zero_point=None):
    """Y = quantize(fn(dequantize(X))): ``fn`` maps float32 to float32."""
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.asarray(fn(q_dequantize(X, X_scale, X_zero_point)), dtype=np.float32)
    return q_requantize(y, Y_scale, Y_zero_point, X.dtype)


def qlinear_global_average_pool(X, x_scale, x_zero_point, y_scale, y_zero_point, channels_last=0):
    """QLinearGlobalAveragePool: the mean of X - x_zero_point over the spatial axes (an exact
    integer sum), times x_scale / y_scale, rounded half to even once, plus y_zero_point,
    saturated. The one rounding is of a float64 quotient: S * x_scale / (N * y_scale) with S
    an exact integer, so only quotients within ~1e-16 relative of a tie could round otherwise."""
    axes = tuple(range(1, X.ndim - 1)) if channels_last else tuple(range(2, X.ndim))
    n = int(np.prod([X.shape[a] for a in axes], dtype=np.int64))
    s = np.sum(X.astype(np.int64) - _zp(x_zero_point), axis=axes, keepdims=True)
    v = s.astype(np.float64) * float(_scalar(x_scale)) / (n * float(_scalar(y_scale)))
    info = np.iinfo(X.dtype)
    return np.clip(np.rint(v) + _zp(y_zero_point), info.min, info.max).astype(X.dtype)


def qlinear_average_pool(X, x_scale, x_zero_point=None, y_scale=None, y_zero_point=None, *, auto_pad="NOTSET",
                         ceil_mode=0, channels_last=0, count_include_pad=0, kernel_shape=None, pads=None,
                         strides=None):
    """QLinearAveragePool: AveragePool over X - x_zero_point (padding counts as the zero point,
    i.e. the real value 0), exact in float64 (sums of at most a few hundred 8-bit integers and one
    division by the window count), times x_scale / y_scale, rounded half to even once, plus
    y_zero_point, saturated. channels_last reads X as (N, D1, ..., Dn, C)."""
    from ._window import pool

    x = X.astype(np.float64) - _zp(x_zero_point)
    if channels_last:
        x = np.moveaxis(x, -1, 1)
    avg = pool(x, "avg", kernel_shape, strides, pads, None, auto_pad, ceil_mode, count_include_pad)
    if channels_last:
        avg = np.moveaxis(avg, 1, -1)
    v = avg * float(_scalar(x_scale)) / float(_scalar(y_scale))
    info = np.iinfo(X.dtype)
    return np.clip(np.rint(v) + _zp(y_zero_point), info.min, info.max).astype(X.dtype)


def _last_axis(p, zero=False):
    """A per-tensor (scalar / 1-element) or per-column (1-D, one value per column of the last
    axis) scale or zero point, as float64 broadcasting over the last axis; 0 when absent."""
    if p is None:
        return np.float64(0)
    a = np.asarray(p).astype(np.float64)
    return a.reshape(()) if a.size == 1 else a.reshape(-1)


def matmul_integer_to_float(A, B, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None):
    """MatMulIntegerToFloat: Y = matmul(a_scale * (A - a_zero_point), b_scale * (B - b_zero_point))
    + bias, the parameters per tensor or per column (A's and B's last axis), computed exactly in
    float64 (every product of an 8-bit difference and a float32 / float16 scale is exact, and the
    sums stay far within float64's precision for the sizes tested) and rounded once to the scales'
    type."""
    af = (A.astype(np.float64) - _last_axis(a_zero_point)) * _last_axis(a_scale)
    bf = (B.astype(np.float64) - _last_axis(b_zero_point)) * _last_axis(b_scale)
    y = np.matmul(af, bf)
    if bias is not None:
        y = y + bias.astype(np.float64)
    return y.astype(np.asarray(a_scale).dtype)


def qgemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point=None, C=None, y_scale=None, y_zero_point=None, *,
          alpha=1.0, transA=0, transB=0):
    """QGemm: acc = (A' - a_zero_point) @ (B' - b_zero_point) + C in exact integers (A', B' the
    possibly transposed inputs, b's parameters per tensor or per column), y = alpha * a_scale *
    b_scale * acc exactly (float64), then float32 (no y_scale) or quantized once: round half to
    even of y / y_scale, plus y_zero_point, saturated."""
    a = (A.T if transA else A).astype(np.int64) - _zp(a_zero_point)
    b = (B.T if transB else B).astype(np.int64)
    if b_zero_point is not None:
        b = b - np.asarray(b_zero_point).astype(np.int64).reshape(-1)
    acc = np.matmul(a, b) + (0 if C is None else C.astype(np.int64))
    y = float(np.float32(alpha)) * float(_scalar(a_scale)) * _last_axis(b_scale) * acc.astype(np.float64)
    if y_scale is None:
        return y.astype(np.float32)
    dtype = np.asarray(y_zero_point).dtype
    info = np.iinfo(dtype)
    return np.clip(np.rint(y / float(_scalar(y_scale))) + _zp(y_zero_point), info.min, info.max).astype(dtype)


# ---------------------------------------------------------------------------------------------
# Block-quantized weights (MatMulNBits, GatherBlockQuantized)


def unpack_bits(packed, bits: int) -> np.ndarray:
    """The ``bits``-wide unsigned values packed along the last axis of a uint8 array, low-order
    bits first ("the first 4 bits are stored in the lower 4 bits of a byte"): the last axis grows
    from n bytes to 8 n / bits values (a value may straddle two bytes when bits does not divide 8)."""
    a = np.asarray(packed, dtype=np.uint8)
    flat = np.unpackbits(a, axis=-1, bitorder="little")
    n = flat.shape[-1] // bits
    groups = flat[..., : n * bits].reshape(a.shape[:-1] + (n, bits)).astype(np.int64)
    return (groups << np.arange(bits, dtype=np.int64)).sum(axis=-1)


def matmul_nbits_weight(B, scales, zero_points=None, g_idx=None, *, K, N, block_size, bits=4) -> np.ndarray:
    """MatMulNBits' dequantized weight, (N, K) in float64: W[n, k] = (q[n, k] - z[n, b]) * s[n, b]
    with q the k-th value unpacked from row n of B (the padding past K in the last block dropped), b
    = k // block_size (or g_idx[k]), z the zero point (packed uint8 unpacked like B, or of the
    scale's type, or 2^(bits - 1) when absent). Exact: a difference of at most 255 times a float32
    scale fits float64's 53 bits."""
    kb = -(-K // block_size)
    q = unpack_bits(np.asarray(B).reshape(N, kb * np.asarray(B).shape[-1]), bits)[:, :K]
    s = np.asarray(scales).astype(np.float64).reshape(N, kb)
    if zero_points is None:
        z = np.full((N, kb), 2.0 ** (bits - 1))
    elif np.asarray(zero_points).dtype == np.uint8:
        z = unpack_bits(np.asarray(zero_points).reshape(N, -1), bits)[:, :kb].astype(np.float64)
    else:
        z = np.asarray(zero_points).astype(np.float64).reshape(N, kb)
    blk = np.arange(K) // block_size if g_idx is None else np.asarray(g_idx).astype(np.int64)[:K]
    return (q.astype(np.float64) - z[:, blk]) * s[:, blk]


def matmul_nbits(A, B, scales, zero_points=None, g_idx=None, bias=None, *, K, N, block_size, bits=4,
                 accuracy_level=0, weight_prepacked=0):
    """MatMulNBits: Y = A @ W^T + bias with W the dequantized (N, K) weight, every product and sum
    exact in float64 (A's values and W's are exact there; the sums of the sizes tested lose at most
    float64 roundings) and rounded once to A's type. accuracy_level only lets an implementation
    lower A's precision: the exact value is what every level approximates."""
    w = matmul_nbits_weight(B, scales, zero_points, g_idx, K=K, N=N, block_size=block_size, bits=bits)
    a = np.asarray(A).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.matmul(a, w.T)
        if bias is not None:
            y = y + np.asarray(bias).astype(np.float64)
        return y.astype(np.asarray(A).dtype)


def _expand_blocks(p, axis: int, dim: int, block_size: int, shape) -> np.ndarray:
    """A per-block parameter spread over the data's ``shape``: each entry repeated block_size times
    along ``axis`` (block_size 0: one block spans the axis) and cut to ``dim``; dims of 1 on the
    other axes broadcast."""
    a = np.asarray(p)
    a = np.repeat(a, block_size if block_size else dim, axis=axis)
    a = np.take(a, np.arange(dim), axis=axis)
    return np.broadcast_to(a, shape)


def _block_values(data, bits: int):
    """(the quantized values as float64, the default zero point): uint8 data unpacked along the last
    axis (bits < 8) with zero point 2^(bits - 1); int4 / uint4 as integers with zero point 0; float8 /
    float4 as their real values, with no zero point."""
    kind = np.asarray(data).dtype
    if kind == np.uint8:
        q = unpack_bits(data, bits) if bits < 8 else np.asarray(data).astype(np.int64)
        return q.astype(np.float64), 2.0 ** (bits - 1)
    return np.asarray(data).astype(np.float64), 0.0


def gather_block_quantized(data, indices, scales, zero_points=None, *, bits=4, block_size=128, quantize_axis=1,
                           gather_axis=0):
    """GatherBlockQuantized: dequantize data blockwise along quantize_axis -- (q - z) * s, rounded
    once to the scales' type (the difference is exact, so is its product in float64) -- then Gather
    along gather_axis; an index outside [-s, s - 1] gives a slice of zeros. uint8 data and zero
    points hold 8 / bits values per byte along the last axis, low-order bits first."""
    q, default_zp = _block_values(data, bits)
    r = q.ndim
    qa, ga = quantize_axis % r, gather_axis % r
    dim = q.shape[qa]
    s = _expand_blocks(np.asarray(scales).astype(np.float64), qa, dim, block_size, q.shape)
    if zero_points is None:
        z = default_zp
    else:
        zq, _ = _block_values(zero_points, bits)
        zq = np.take(zq, np.arange(np.shape(scales)[-1]), axis=-1)  # packing pads the last axis
        z = _expand_blocks(zq, qa, dim, block_size, q.shape)
    out_type = np.asarray(scales).dtype
    with np.errstate(over="ignore", invalid="ignore"):
        deq = ((q - z) * s).astype(out_type)
    n = q.shape[ga]
    idx = np.asarray(indices).astype(np.int64)
    inside = (idx >= -n) & (idx < n)
    picked = np.take(deq, np.where(inside, np.where(idx < 0, idx + n, idx), 0), axis=ga)
    mask = inside.reshape((1,) * ga + idx.shape + (1,) * (r - ga - 1))
    return np.where(mask, picked, np.zeros((), out_type)).astype(out_type)


_FLOAT_BLOCK_DATA = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn")


def block_float_data(data) -> bool:
    """Whether GatherBlockQuantized's data is FP8 / FP4 (symmetric: no zero point, bits ignored)."""
    return np.asarray(data).dtype.name in _FLOAT_BLOCK_DATA


def block_scale_shape(data, bits: int, block_size: int, quantize_axis: int) -> tuple:
    """The scales shape GatherBlockQuantized's data implies: the data's logical shape (uint8 holds
    8 / bits values a byte along the last axis) with the quantized axis cut to ceil(dim /
    block_size), or to 1 when block_size is 0."""
    shape = list(np.shape(data))
    if np.asarray(data).dtype == np.uint8 and shape:
        shape[-1] = shape[-1] * 8 // bits
    a = quantize_axis % len(shape)
    shape[a] = -(-shape[a] // block_size) if block_size else 1
    return tuple(shape)


# The 4-bit codes of bitsandbytes' formats, as onnxruntime decodes them (blockwise_quant_block_bnb4.h):
# FP4 (quant_type 0) is a sign bit and three bits of a small float scaled so its largest value is 1;
# NF4 (quant_type 1) is the QLoRA paper's "NormalFloat" (arXiv 2305.14314, appendix E), float32 values.
BNB4_CODES = {
    0: np.array([0.0, 5.208333333e-03, 0.66666667, 1.0, 0.33333333, 0.5, 0.16666667, 0.25,
                 -0.0, -5.208333333e-03, -0.66666667, -1.0, -0.33333333, -0.5, -0.16666667, -0.25], np.float32),
    1: np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
                 -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
                 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                 0.7229568362236023, 1.0], np.float32),
}


def matmul_bnb4(A, B, absmax, *, K, N, block_size, quant_type, transB=1, training_mode=0):
    """MatMulBnb4: the (N, K) weight is B's N * K codes in row-major order, two a byte, the first in
    the high nibble, each decoded by its table (FP4 or NF4) and times the absmax of its block of
    block_size consecutive codes; Y = A @ W^T (transB 1) or A @ W (transB 0), exact in float64 and
    rounded once to A's type. training_mode changes nothing in the result."""
    b = np.asarray(B, dtype=np.uint8).reshape(-1)
    codes = np.stack([b >> 4, b & 0xF], axis=-1).reshape(-1)[: N * K]
    scale = np.repeat(np.asarray(absmax).astype(np.float64).reshape(-1), block_size)[: N * K]
    w = (BNB4_CODES[int(quant_type)].astype(np.float64)[codes] * scale).reshape(N, K)
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.matmul(np.asarray(A).astype(np.float64), w.T if transB else w)
        return y.astype(np.asarray(A).dtype)
