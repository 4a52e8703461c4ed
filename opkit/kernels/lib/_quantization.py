"""Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the integer and
QLinear matmul / conv ops."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ..runtime import as_dtype, onnx_dtype
from ._window import conv


def _broadcast_param(param, x_shape, axis, block_size):
    """A per-tensor / per-axis / blocked scale or zero point, broadcastable against ``x_shape``."""
    p = np.asarray(param)
    rank = len(x_shape)
    if p.size == 1 and not block_size:
        return p.reshape(())
    axis = axis + rank if axis < 0 else axis
    if block_size:
        return np.repeat(p, block_size, axis=axis).take(np.arange(x_shape[axis]), axis=axis)
    if p.ndim == 1:
        return p.reshape([-1 if i == axis else 1 for i in range(rank)])
    return p


def _int_range(dtype):
    try:
        info = ml_dtypes.iinfo(dtype)
    except (TypeError, ValueError):
        info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _division_dtype(y_scale, precision) -> np.dtype:
    """The type QuantizeLinear divides in: "The type of `y_scale` determines the precision of the
    division operation between `x` and `y_scale`, unless the `precision` attribute is specified"
    (opset 23+; before, x and y_scale share one type, or y_scale is float32). An integer scale has
    no rounding of its own: float64 holds every int32 quotient's digits. float8e8m0 (a power of
    two) divides in float32, where dividing by it is exact."""
    dtype = onnx_dtype(int(precision)) if precision else y_scale.dtype
    if dtype.kind in "iu":
        return np.dtype(np.float64)
    if dtype in (np.float16, np.float32, np.float64, ml_dtypes.bfloat16):
        return np.dtype(dtype)
    return np.dtype(np.float32)


def quantize(x, y_scale, y_zero_point=None, axis=1, block_size=0, output_dtype=0, saturate=1, precision=0):
    """QuantizeLinear: `y = saturate((x / y_scale) + y_zero_point)`, x / y_scale divided in the
    precision the spec names (see _division_dtype) and rounded half to even; integer outputs
    saturate to their range (+-inf to the ends), float8 / float4 / float6 outputs are Cast with
    ``saturate``."""
    from ..runtime import ONNX_TO_NUMPY, cast_to

    if y_zero_point is not None:
        out = y_zero_point.dtype
    elif output_dtype:
        out = onnx_dtype(output_dtype)
    else:
        out = np.dtype(np.uint8)
    division = _division_dtype(y_scale, precision)
    scale = _broadcast_param(y_scale, x.shape, axis, block_size or 0).astype(division)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = x.astype(division) / scale
    zp = 0 if y_zero_point is None else _broadcast_param(y_zero_point, x.shape, axis, block_size or 0)
    name = [k for k, dt in ONNX_TO_NUMPY.items() if dt == out][0]
    if out.kind in "iu" or name in ("int4", "uint4", "int2", "uint2"):
        lo, hi = _int_range(out)
        # in float64: every rounded quotient plus zero point is exact there, and clipping before
        # the integer conversion saturates what no integer type holds (1e30, inf)
        q = np.rint(v).astype(np.float64) + (np.asarray(zp).astype(np.float64) if y_zero_point is not None else 0)
        return np.clip(q, lo, hi).astype(np.int64).astype(out)
    with np.errstate(over="ignore", invalid="ignore"):
        zf = np.asarray(zp).astype(division) if y_zero_point is not None else division.type(0)
        return cast_to(np.asarray(v + zf).astype(np.float32) if division != np.float64 else v + zf, name,
                       saturate=saturate)


def dequantize(x, x_scale, x_zero_point=None, axis=1, block_size=0, output_dtype=0):
    """DequantizeLinear: `y = (x - x_zero_point) * x_scale`, exactly (float64 holds every product
    of a <= 32-bit integer and a float32 scale) and rounded once to the output type."""
    out = onnx_dtype(output_dtype) if output_dtype else x_scale.dtype
    scale = _broadcast_param(x_scale, x.shape, axis, block_size or 0).astype(np.float64)
    xf = x.astype(np.float64)
    if x_zero_point is not None:
        xf = xf - _broadcast_param(x_zero_point, x.shape, axis, block_size or 0).astype(np.float64)
    return as_dtype(xf * scale, out)


def _zp_rows(zp, rows_axis_len, as_column):
    if zp is None:
        return 0
    z = np.asarray(zp).astype(np.int64)
    if z.ndim == 1 and z.size != 1:
        return z.reshape(-1, 1) if as_column else z.reshape(1, -1)
    return z.reshape(()) if z.size == 1 else z


def matmul_integer(A, B, a_zero_point=None, b_zero_point=None):
    a = A.astype(np.int64) - _zp_rows(a_zero_point, A.shape[-2] if A.ndim > 1 else 1, True)
    b = B.astype(np.int64) - _zp_rows(b_zero_point, B.shape[-1], False)
    return np.matmul(a, b).astype(np.int32)


def conv_integer(x, w, x_zero_point=None, w_zero_point=None, **attrs):
    xi = x.astype(np.float64) - (0 if x_zero_point is None else np.asarray(x_zero_point).astype(np.float64))
    wz = 0 if w_zero_point is None else np.asarray(w_zero_point).astype(np.float64)
    if np.ndim(wz) == 1 and np.size(wz) > 1:
        wz = wz.reshape((-1,) + (1,) * (w.ndim - 1))
    wi = w.astype(np.float64) - wz
    y = conv(xi, wi, None, attrs.get("kernel_shape"), attrs.get("strides"), attrs.get("pads"),
             attrs.get("dilations"), attrs.get("auto_pad"), attrs.get("group", 1))
    return np.rint(y).astype(np.int32)


def _per_row(p):
    """a's scale / zero point against a: a vector of M values is per row ([M, 1]); N-D ([..., M, 1])
    and 1-element ones broadcast as they are."""
    p = np.asarray(p).astype(np.float64)
    if p.ndim == 1 and p.size != 1:
        return p.reshape(-1, 1)
    return p.reshape(()) if p.ndim <= 1 else p


def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    af = (a.astype(np.float64) - _per_row(a_zero_point)) * _per_row(a_scale)
    bf = (b.astype(np.float64) - np.asarray(b_zero_point).astype(np.float64)) * np.asarray(b_scale, np.float64)
    y = np.matmul(af, bf)
    return quantize(y.astype(np.float32), np.asarray(y_scale).astype(np.float32), y_zero_point)


def qlinear_conv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B=None, **attrs):
    xf = (x.astype(np.float64) - np.asarray(x_zero_point).astype(np.float64)) * np.asarray(x_scale, np.float64)
    shape_w = (-1,) + (1,) * (w.ndim - 1)
    wz = np.asarray(w_zero_point).astype(np.float64)
    ws = np.asarray(w_scale).astype(np.float64)
    wf = (w.astype(np.float64) - (wz.reshape(shape_w) if wz.size > 1 else wz)) * (ws.reshape(shape_w) if ws.size > 1 else ws)
    y = conv(xf, wf, None, attrs.get("kernel_shape"), attrs.get("strides"), attrs.get("pads"),
             attrs.get("dilations"), attrs.get("auto_pad"), attrs.get("group", 1))
    if B is not None:
        y = y + (B.astype(np.float64) * np.asarray(x_scale, np.float64) * ws).reshape((1, -1) + (1,) * (x.ndim - 2))
    ys = float(np.asarray(y_scale).reshape(-1)[0])
    q = np.rint(y / ys) + np.asarray(y_zero_point).astype(np.int64)
    lo, hi = _int_range(np.asarray(y_zero_point).dtype)
    return np.clip(q, lo, hi).astype(np.asarray(y_zero_point).dtype)


def dynamic_quantize_linear(x):
    """DynamicQuantizeLinear, every step in float32 as its function body computes it (Sub, Div,
    Clip, Round half to even, then QuantizeLinear's float32 division). An all-zero x gives
    y_scale = (0 - 0) / 255 = 0, the spec's formula; the zero point and y are then 0 / 0, which the
    spec leaves undefined: here 0."""
    f32 = np.float32
    xf = x.astype(f32)
    x_min = min(f32(0), xf.min()) if xf.size else f32(0)
    x_max = max(f32(0), xf.max()) if xf.size else f32(0)
    scale = f32(x_max - x_min) / f32(255)
    if scale == 0:
        return np.zeros(x.shape, np.uint8), np.array(scale, f32), np.array(0, np.uint8)
    zp = np.rint(np.clip(f32(0) - x_min / scale, f32(0), f32(255)))
    with np.errstate(over="ignore"):
        y = np.clip(np.rint(xf / scale) + zp, 0, 255)
    return y.astype(np.uint8), np.array(scale, f32), np.array(zp, np.uint8)
