"""ONNX element types <-> NumPy dtypes (ml_dtypes for bfloat16, float8, int4 ...) and type classes."""

from __future__ import annotations

import numpy as np

from ..spec.types import ELEMENT_TYPE_CODES, INT_RANGES, tensor_element

try:  # ml_dtypes is a dependency, but keep the module importable without it
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover
    _ml = None


def _ml_dtype(name: str):
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

FLOATS = ("float", "double", "float16", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
          "float8e5m2fnuz", "float4e2m1", "float8e8m0", "float6e2m3", "float6e3m2")
INTEGERS = tuple(INT_RANGES)
SIGNED = tuple(t for t in INTEGERS if not t.startswith("uint")) + FLOATS
COMPLEX = ("complex64", "complex128")
NUMERIC = INTEGERS + FLOATS + COMPLEX

TYPE_CLASSES: dict[str, tuple[str, ...]] = {
    "numeric": NUMERIC, "float": FLOATS, "integer": INTEGERS, "signed": SIGNED,
}


def elem_of(type_str: str) -> str:
    """'tensor(float)' -> 'float'; a bare element name is returned as is."""
    return tensor_element(type_str) or type_str


def np_dtype(elem_or_type: str) -> np.dtype:
    elem = elem_of(elem_or_type)
    dt = NUMPY_DTYPES.get(elem)
    if dt is None:
        raise KeyError(f"no NumPy dtype for ONNX element type {elem!r}")
    return dt


def onnx_code(elem_or_type: str) -> int:
    return ELEMENT_TYPE_CODES[elem_of(elem_or_type)]


def elem_from_dtype(dtype) -> str:
    """NumPy dtype -> ONNX element name ('float32' -> 'float'); str/object -> 'string'."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OUS":
        return "string"
    for name, dt in NUMPY_DTYPES.items():
        if dt is not None and dt == dtype and name != "string":
            return name
    raise KeyError(f"no ONNX element type for NumPy dtype {dtype}")


def in_class(elem_or_type: str, cls: str | None) -> bool:
    """Whether an element type belongs to a property's type class (None: all types)."""
    if not cls:
        return True
    names = TYPE_CLASSES.get(cls)
    if names is None:
        raise KeyError(f"unknown type class {cls!r}; known: {', '.join(TYPE_CLASSES)}")
    return elem_of(elem_or_type) in names


def is_float(elem: str) -> bool:
    return elem_of(elem) in FLOATS or elem_of(elem) in COMPLEX

