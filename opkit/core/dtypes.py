"""ONNX element types <-> NumPy dtypes (ml_dtypes for bfloat16, float8, int4 ...) and type classes."""

from __future__ import annotations

import numpy as np

from .numpy_types import NUMPY_DTYPES, elem_from_dtype  # noqa: F401 - re-exported for the harness
from .onnx_types import COMPLEX_TYPES, ELEMENT_TYPE_CODES, FLOAT_TYPES, INT_RANGES, tensor_element

FLOATS = FLOAT_TYPES
INTEGERS = tuple(INT_RANGES)
SIGNED = tuple(t for t in INTEGERS if not t.startswith("uint")) + FLOATS
COMPLEX = COMPLEX_TYPES
NUMERIC = INTEGERS + FLOATS + COMPLEX

# the order tables list type bindings in (opkit compare, the scoreboard, the report's summary):
# bool, unsigned then signed integers by width, floats by width, complex, string
TYPE_ORDER: tuple[str, ...] = ("bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
                               "float16", "bfloat16", "float", "double", "complex64", "complex128", "string")

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


def type_label_order(label: str):
    """Sort key of a type binding label ('float' or 'int64,float'): by its first element type in
    ``TYPE_ORDER`` (types not listed after those), then by the label."""
    head = label.split(",")[0]
    return (TYPE_ORDER.index(head) if head in TYPE_ORDER else len(TYPE_ORDER), label)
