"""ONNX element types -> NumPy dtypes, one table for kernels, conformance and backends.

The narrow types (bfloat16, float8, int4 ...) come from ml_dtypes; a type an older ml_dtypes
lacks maps to None.
"""

from __future__ import annotations

import numpy as np

try:  # ml_dtypes is a dependency, but keep this module importable without it
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover
    _ml = None


def _ml_dtype(name: str) -> np.dtype | None:
    return np.dtype(getattr(_ml, name)) if _ml is not None and hasattr(_ml, name) else None


NUMPY_DTYPES: dict[str, np.dtype | None] = {
    "float": np.dtype(np.float32), "double": np.dtype(np.float64), "float16": np.dtype(np.float16),
    "uint8": np.dtype(np.uint8), "int8": np.dtype(np.int8), "uint16": np.dtype(np.uint16),
    "int16": np.dtype(np.int16), "int32": np.dtype(np.int32), "int64": np.dtype(np.int64),
    "uint32": np.dtype(np.uint32), "uint64": np.dtype(np.uint64), "bool": np.dtype(np.bool_),
    "string": np.dtype(object), "complex64": np.dtype(np.complex64), "complex128": np.dtype(np.complex128),
    "bfloat16": _ml_dtype("bfloat16"),
    "float8e4m3fn": _ml_dtype("float8_e4m3fn"), "float8e4m3fnuz": _ml_dtype("float8_e4m3fnuz"),
    "float8e5m2": _ml_dtype("float8_e5m2"), "float8e5m2fnuz": _ml_dtype("float8_e5m2fnuz"),
    "uint4": _ml_dtype("uint4"), "int4": _ml_dtype("int4"), "float4e2m1": _ml_dtype("float4_e2m1fn"),
    "float8e8m0": _ml_dtype("float8_e8m0fnu"), "uint2": _ml_dtype("uint2"), "int2": _ml_dtype("int2"),
    "float6e2m3": _ml_dtype("float6_e2m3fn"), "float6e3m2": _ml_dtype("float6_e3m2fn"),
}


def elem_from_dtype(dtype) -> str:
    """NumPy dtype -> ONNX element name ('float32' -> 'float'); str/object -> 'string'."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OUS":
        return "string"
    for name, dt in NUMPY_DTYPES.items():
        if dt is not None and dt == dtype and name != "string":
            return name
    raise KeyError(f"no ONNX element type for NumPy dtype {dtype}")
