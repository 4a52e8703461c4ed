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

__all__ = ["q_dequantize", "q_requantize", "qlinear_average_pool", "qlinear_binary", "qlinear_global_average_pool", "qlinear_unary", "matmul_integer_to_float", "qgemm"]


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
