"""Values as the operator pages print them: tensors as aligned text, attributes, Python literals."""

from __future__ import annotations

import math
from typing import Any

from ..spec.model import TensorValue


def _scalar(value: Any) -> str:
    """One element as the docs print it (numpy-like, but deterministic across numpy versions)."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    return str(value)


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _flat(item)]
    return [value]


# A tensor of more elements than this is shown summarised, as NumPy prints one: the first and last
# EDGE_ITEMS along each axis and "..." between (the page's snippet still carries every value).
SUMMARY_THRESHOLD = 200
EDGE_ITEMS = 3


def format_tensor(value: Any) -> str:
    """A nested value as aligned, bracketed text, e.g. ``[[4, 7],\\n [1, 2]]``."""
    if not isinstance(value, (list, tuple)):
        return _scalar(value)
    summarise = len(_flat(value)) > SUMMARY_THRESHOLD

    def shown(v: Any) -> list:
        return list(v[:EDGE_ITEMS]) + [...] + list(v[-EDGE_ITEMS:]) if summarise and len(v) > 2 * EDGE_ITEMS \
            else list(v)

    def leaves(v: Any) -> list:
        if not isinstance(v, (list, tuple)):
            return [v]
        return [x for item in shown(v) if item is not ... for x in leaves(item)]

    width = max((len(_scalar(x)) for x in leaves(value)), default=0)

    def render(v: Any, depth: int) -> str:
        if v is ...:
            return "...".rjust(width)
        if not isinstance(v, (list, tuple)):
            return _scalar(v).rjust(width)
        if not v:
            return "[]"
        if not isinstance(v[0], (list, tuple)):
            return "[" + ", ".join(render(x, depth + 1) for x in shown(v)) + "]"
        sep = ",\n" + "\n" * (_depth(v) - 2) + " " * (depth + 1)
        return "[" + sep.join(render(x, depth + 1) for x in shown(v)) + "]"

    return render(value, 0)


def _depth(v: Any) -> int:
    d = 0
    while isinstance(v, (list, tuple)) and v:
        d += 1
        v = v[0]
    return d


def _tensor_literal(value: Any) -> tuple[str, Any, tuple[int, ...] | None] | None:
    """(dtype, value, shape) of a tensor-valued attribute in an example ({dtype, value[, shape]})."""
    if isinstance(value, TensorValue):
        return value.dtype, value.value, value.shape
    if isinstance(value, dict) and "value" in value and "dtype" in value:
        shape = value.get("shape")
        return str(value["dtype"]), value["value"], tuple(shape) if shape is not None else None
    return None


def _attr_value(value: Any) -> str:
    literal = _tensor_literal(value)
    if literal is not None:
        dtype, val, _ = literal
        return f"{format_tensor(val)} ({dtype} tensor)".replace("\n", " ")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_attr_value(v) for v in value) + "]"
    if isinstance(value, float):
        return _scalar(value)
    return repr(value) if isinstance(value, str) else _scalar(value)


def _py_scalar(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "np.nan"
        if math.isinf(value):
            return "np.inf" if value > 0 else "-np.inf"
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    return repr(value)


def _py_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_py_value(v) for v in value) + "]"
    return _py_scalar(value)
