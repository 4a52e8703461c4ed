"""Sequence, optional and map values: how opkit holds them, and what their type strings say.

ONNX values are tensors, sequences of tensors or maps, optionals of either, and maps
(``map(int64, float)``, ai.onnx.ml's CastMap, DictVectorizer, ZipMap). opkit holds them as

- a tensor: a NumPy array;
- a sequence: a Python ``list`` of arrays of one element type (possibly empty), which is what
  onnxruntime's and onnx's Python APIs take and return;
- an optional: its element (an array or a list) when it has one. An *empty* optional is
  ``EMPTY_OPTIONAL`` inside a ``Case``, where ``None`` already means "the node leaves this input
  out", and ``None`` everywhere a value reaches a kernel or a runtime (``runtime_value``): an
  empty optional fed to a graph input and an input left out are different test inputs, but both
  read as ``None`` to the code that computes on them;
- a map: a ``MapValue``, a ``dict`` (what onnxruntime's Python API takes and returns) that also
  carries its key and value element types, since ``{1: 0.5}`` alone does not say whether it is a
  ``map(int64, float)`` or a ``map(int64, double)``. Keys are Python ``int`` or ``str``, values
  Python ``int``, ``float`` (a ``float`` map's values rounded to float32) or ``str``; a sequence of
  maps is a list of them.
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


def is_map_type(type_str: str | None) -> bool:
    return bool(type_str) and type_str.startswith("map(")


def has_map_type(type_str: str | None) -> bool:
    """A map, or a sequence or optional of maps (``seq(map(string, float))``)."""
    return bool(type_str) and "map(" in type_str


def is_container_type(type_str: str | None) -> bool:
    """``seq(...)``, ``optional(...)`` or ``map(...)``: a value that is not a plain tensor."""
    return bool(type_str) and (is_sequence_type(type_str) or is_optional_type(type_str) or is_map_type(type_str))


def inner_type(type_str: str) -> str:
    """What a ``seq(...)`` holds or an ``optional(...)`` may hold (a map's value type, as a tensor
    type); a tensor type is returned as is."""
    if is_map_type(type_str):
        return f"tensor({map_types(type_str)[1]})"
    if is_container_type(type_str) and type_str.endswith(")"):
        return type_str[type_str.index("(") + 1:-1]
    return type_str


def map_types(type_str: str) -> tuple[str, str]:
    """The key and value element types of ``map(K, V)`` (``V`` written as ``float`` or
    ``tensor(float)``): ``('int64', 'float')``."""
    body = type_str[len("map("):-1]
    key, _, value = body.partition(",")
    value = value.strip()
    if value.startswith("tensor(") and value.endswith(")"):
        value = value[7:-1]
    return key.strip(), value


def map_type(key_type: str, value_type: str) -> str:
    """The type string of a map, spelled as the specs spell it: ``map(int64, float)``."""
    return f"map({key_type}, {value_type})"


def element_of(type_str: str | None) -> str | None:
    """The tensor element type under any nesting ('optional(seq(tensor(float)))' -> 'float'; a
    map's value type: 'seq(map(string, float))' -> 'float'); None for sparse tensors and anything
    else that holds no plain tensor."""
    while type_str and is_container_type(type_str):
        type_str = inner_type(type_str)
    if type_str and type_str.startswith("tensor(") and type_str.endswith(")"):
        return type_str[7:-1]
    return None


# ---------------------------------------------------------------------------------------------
# maps

_INT_KEYS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _key(value, key_type: str):
    if key_type == "string":
        if not isinstance(value, str):
            raise TypeError(f"map key {value!r} is not a string")
        return value
    if isinstance(value, (bool, str, float)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"map key {value!r} is not an integer")
    return int(value)


def _item(value, value_type: str):
    if value_type == "string":
        if not isinstance(value, str):
            raise TypeError(f"map value {value!r} is not a string")
        return value
    if isinstance(value, (str, bool)):
        raise TypeError(f"map value {value!r} is not a number")
    if value_type in _INT_KEYS:
        if isinstance(value, (float, np.floating)) and float(value) != int(value):
            raise TypeError(f"map value {value!r} is not an integer")
        return int(value)
    return float(np.float32(value)) if value_type == "float" else float(value)


class MapValue(dict):
    """A map value: a ``dict`` that knows its key and value element types (see the module doc).
    Built through ``make_map``, which checks and normalizes the keys and values."""

    key_type: str = "int64"
    value_type: str = "float"

    @property
    def type_str(self) -> str:
        return map_type(self.key_type, self.value_type)

    def __reduce__(self):  # pickles with its types (worker pipes)
        return make_map, (list(self.items()), self.key_type, self.value_type)

    def __repr__(self) -> str:
        return f"MapValue({dict(self)!r}, {self.type_str})"


def make_map(items, key_type: str, value_type: str) -> MapValue:
    """A ``MapValue`` of ``map(key_type, value_type)`` from a dict or (key, value) pairs; raises
    TypeError for a key or value of another kind and ValueError for a repeated key."""
    pairs = list(items.items()) if isinstance(items, dict) else [tuple(p) for p in items]
    out = MapValue()
    out.key_type, out.value_type = key_type, value_type
    for k, v in pairs:
        k = _key(k, key_type)
        if k in out:
            raise ValueError(f"map key {k!r} occurs twice")
        out[k] = _item(v, value_type)
    return out


def as_map(value, type_str: str) -> MapValue:
    """``value`` (a dict, e.g. from a runtime) as a ``MapValue`` of ``type_str``."""
    key_type, value_type = map_types(type_str)
    if isinstance(value, MapValue) and value.type_str == map_type(key_type, value_type):
        return value
    return make_map(value, key_type, value_type)


def as_value(value, type_str: str | None):
    """``value`` with its maps as ``MapValue``s of ``type_str`` (a map, or a sequence or optional of
    maps); anything else is returned as is."""
    if value is None or not has_map_type(type_str):
        return value
    if is_map_type(type_str):
        return as_map(value, type_str) if isinstance(value, dict) else value
    if is_sequence_type(type_str) and isinstance(value, (list, tuple)):
        return [as_value(v, inner_type(type_str)) for v in value]
    if is_optional_type(type_str):
        return as_value(value, inner_type(type_str))
    return value


def is_map_value(value: Any) -> bool:
    return isinstance(value, dict)


# ---------------------------------------------------------------------------------------------
# values


def runtime_value(value: Any) -> Any:
    """The value as kernels and runtimes take it: an empty optional is ``None``."""
    return None if value is EMPTY_OPTIONAL else value


def is_tensor_value(value: Any) -> bool:
    return isinstance(value, np.ndarray)


def is_container_value(value: Any) -> bool:
    """An empty optional, a map or a sequence (a list of arrays or maps); a plain list of numbers is not one."""
    return value is EMPTY_OPTIONAL or isinstance(value, dict) or (
        isinstance(value, list) and all(isinstance(v, (np.ndarray, dict)) for v in value))


def common_rank(values: list) -> int | None:
    """The rank every tensor of a sequence has, or None (mixed ranks, or no tensor at all)."""
    ranks = {np.ndim(v) for v in values if not isinstance(v, dict)}
    return ranks.pop() if len(ranks) == 1 else None


def value_signature(value: Any) -> tuple:
    """What a model declaring ``value``'s graph input depends on (opkit.cases.onnx_model declares
    a sequence's tensors with their common rank, an optional like its element)."""
    if value is EMPTY_OPTIONAL:
        return ("empty",)
    if isinstance(value, dict):
        return ("map",)
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return ("seq", "map")
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
    if isinstance(value, dict):
        kinds = getattr(value, "type_str", "map")
        return f"{kinds}{{{len(value)}}}"
    if getattr(value, "ndim", 1) == 0:
        return f"{value.dtype}:{value.item()!r}"
    return f"{value.dtype}{list(value.shape)}"


def value_size(value: Any) -> int:
    """Elements held, summed over a sequence's tensors (0 for absent and empty values)."""
    if value is None or value is EMPTY_OPTIONAL:
        return 0
    if isinstance(value, dict):
        return len(value)
    if isinstance(value, list):
        return sum(value_size(v) for v in value)
    return int(np.size(value))


__all__ = ["EMPTY_OPTIONAL", "MapValue", "as_map", "as_value", "common_rank", "describe_value", "element_of",
           "has_map_type", "inner_type", "is_container_type", "is_container_value", "is_map_type", "is_map_value",
           "is_optional_type", "is_sequence_type", "is_tensor_value", "make_map", "map_type", "map_types",
           "runtime_value", "value_signature", "value_size"]


def structure(value: Any) -> Any:
    """``value`` with every tensor zeroed: what compares equal exactly when the types and shapes do.
    A random op's outputs are the runtime's own draw: only this much of them can be checked."""
    if value is None:
        return None
    if isinstance(value, dict):
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(structure(v) for v in value)
    arr = np.asarray(value)
    return np.zeros(arr.shape, dtype=arr.dtype) if arr.dtype != object else np.full(arr.shape, "", dtype=object)
