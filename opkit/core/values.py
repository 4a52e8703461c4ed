"""Sequence and optional values: how opkit holds them, and what their type strings say.

ONNX values are tensors, sequences of tensors and optionals of either. opkit holds them as

- a tensor: a NumPy array;
- a sequence: a Python ``list`` of arrays of one element type (possibly empty), which is what
  onnxruntime's and onnx's Python APIs take and return;
- an optional: its element (an array or a list) when it has one. An *empty* optional is
  ``EMPTY_OPTIONAL`` inside a ``Case``, where ``None`` already means "the node leaves this input
  out", and ``None`` everywhere a value reaches a kernel or a runtime (``runtime_value``): an
  empty optional fed to a graph input and an input left out are different test inputs, but both
  read as ``None`` to the code that computes on them.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class _EmptyOptional:
    """The one empty-optional marker (pickles to the same object, so it survives worker pipes)."""

    _instance: _EmptyOptional | None = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<empty optional>"

    def __reduce__(self):
        return "EMPTY_OPTIONAL"


EMPTY_OPTIONAL: Any = _EmptyOptional()


# ---------------------------------------------------------------------------------------------
# type strings


def is_sequence_type(type_str: str) -> bool:
    return type_str.startswith("seq(")


def is_optional_type(type_str: str) -> bool:
    return type_str.startswith("optional(")


def is_container_type(type_str: str | None) -> bool:
    """``seq(...)`` or ``optional(...)``: a value that is not a plain tensor."""
    return bool(type_str) and (is_sequence_type(type_str) or is_optional_type(type_str))


def inner_type(type_str: str) -> str:
    """What a ``seq(...)`` holds or an ``optional(...)`` may hold; a tensor type is returned as is."""
    if is_container_type(type_str) and type_str.endswith(")"):
        return type_str[type_str.index("(") + 1:-1]
    return type_str


def element_of(type_str: str | None) -> str | None:
    """The tensor element type under any nesting ('optional(seq(tensor(float)))' -> 'float');
    None for maps, sparse tensors and anything else that holds no plain tensor."""
    while type_str and is_container_type(type_str):
        type_str = inner_type(type_str)
    if type_str and type_str.startswith("tensor(") and type_str.endswith(")"):
        return type_str[7:-1]
    return None


# ---------------------------------------------------------------------------------------------
# values


def runtime_value(value: Any) -> Any:
    """The value as kernels and runtimes take it: an empty optional is ``None``."""
    return None if value is EMPTY_OPTIONAL else value


def is_tensor_value(value: Any) -> bool:
    return isinstance(value, np.ndarray)


def is_container_value(value: Any) -> bool:
    """An empty optional or a sequence (a list of arrays); a plain list of numbers is not one."""
    return value is EMPTY_OPTIONAL or (isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value))


def common_rank(values: list) -> int | None:
    """The rank every tensor of a sequence has, or None (mixed ranks, or no tensor at all)."""
    ranks = {np.ndim(v) for v in values}
    return ranks.pop() if len(ranks) == 1 else None


def value_signature(value: Any) -> tuple:
    """What a model declaring ``value``'s graph input depends on (opkit.cases.onnx_model declares
    a sequence's tensors with their common rank, an optional like its element)."""
    if value is EMPTY_OPTIONAL:
        return ("empty",)
    if isinstance(value, list):
        return ("seq", common_rank(value))
    return ("tensor", np.ndim(value))


def describe_value(value: Any) -> str:
    """A short text of a value: ``float32[2, 3]``, ``int64:5``, ``seq[float32[2], float32[]]``."""
    if value is None:
        return "<absent>"
    if value is EMPTY_OPTIONAL:
        return "<empty optional>"
    if isinstance(value, list):
        return "seq[" + ", ".join(describe_value(v) for v in value) + "]"
    if getattr(value, "ndim", 1) == 0:
        return f"{value.dtype}:{value.item()!r}"
    return f"{value.dtype}{list(value.shape)}"


def value_size(value: Any) -> int:
    """Elements held, summed over a sequence's tensors (0 for absent and empty values)."""
    if value is None or value is EMPTY_OPTIONAL:
        return 0
    if isinstance(value, list):
        return sum(int(np.size(v)) for v in value)
    return int(np.size(value))


__all__ = ["EMPTY_OPTIONAL", "common_rank", "describe_value", "element_of", "inner_type", "is_container_type",
           "is_container_value", "is_optional_type", "is_sequence_type", "is_tensor_value", "runtime_value",
           "value_signature", "value_size"]


def structure(value: Any) -> Any:
    """``value`` with every tensor zeroed: what compares equal exactly when the types and shapes do.
    A random op's outputs are the runtime's own draw: only this much of them can be checked."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return type(value)(structure(v) for v in value)
    arr = np.asarray(value)
    return np.zeros(arr.shape, dtype=arr.dtype) if arr.dtype != object else np.full(arr.shape, "", dtype=object)
