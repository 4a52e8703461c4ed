"""Drawing sequence, optional and map values (``opkit.core.values`` says how they are held).

``draw_value`` turns a bound type string into a value: an optional is empty or holds a value of
its inner type, a sequence holds 0 to ``MAX_SEQUENCE`` tensors (or maps), a map 1 to ``MAX_MAP``
entries with distinct keys of its key type (``draw_map``). How the tensors themselves are
drawn is the caller's: the generic step takes them from the case's shared dims and the input's
rank rule (``generic_tensors``; Identity's ``V`` bound to ``seq(tensor(float))``), the
``sequence`` family hook from its own small shapes.
"""

from __future__ import annotations

from typing import Any, Callable

from ..spec.model import RankRule
from .case import NotGeneratable
from .draws import _BOOL, _draw_tensor, _ints, rank_range
from hypothesis import strategies as st

from ..core.values import (EMPTY_OPTIONAL, MapValue, element_of, inner_type, is_map_type, is_optional_type,
                           is_sequence_type, make_map, map_types)
from .draws import fill

MAX_SEQUENCE = 4  # tensors in a drawn sequence: 0 (empty) to this
MAX_MAP = 6  # entries in a drawn map: 1 to this
# map keys: small ones (dense packing, vocabularies) and far ones (sparse positions, extremes)
_INT_KEYS = st.one_of(st.integers(-3, 12), st.sampled_from((-(2**63), 2**63 - 1, 2**31, -1, 1000)))
_TEXT_KEYS = st.text(st.sampled_from("abcxyzAZ _-é0"), min_size=0, max_size=4)
_VALUE_KINDS = st.sampled_from(("small", "random", "random", "edge"))

Tensors = Callable[[str, int], list]  # (element type, count) -> that many arrays


def draw_value(draw, type_str: str, tensors: Tensors, *, allow_empty: bool = True) -> Any:
    """A value of ``type_str``: a tensor, a sequence, or an optional (empty when ``allow_empty``
    and the draw says so, else holding a value of its inner type)."""
    if is_optional_type(type_str):
        if allow_empty and draw(_BOOL):
            return EMPTY_OPTIONAL
        return draw_value(draw, inner_type(type_str), tensors, allow_empty=allow_empty)
    if is_map_type(type_str):
        return draw_map(draw, type_str)
    if is_sequence_type(type_str) and is_map_type(inner_type(type_str)):
        return [draw_map(draw, inner_type(type_str)) for _ in range(draw(_ints(0, MAX_SEQUENCE)))]
    elem = element_of(type_str)
    if elem is None:
        raise NotGeneratable(f"cannot draw values of type {type_str}")
    if is_sequence_type(type_str):
        return tensors(elem, draw(_ints(0, MAX_SEQUENCE)))
    return tensors(elem, 1)[0]


def generic_tensors(draw, dims, rank: RankRule | None) -> Tensors:
    """Tensors from the case's dims within ``rank``: one rank for all of them, or one each."""
    def tensors(elem: str, count: int) -> list:
        rule = rank
        if count > 1 and draw(_BOOL):
            lo, hi = rank_range(rank)
            r = draw(_ints(lo, hi)) if hi > lo else lo
            rule = RankRule(r, r)
        return [_draw_tensor(draw, elem, dims, rule, False) for _ in range(count)]
    return tensors


def map_keys(draw, key_type: str, size: int | None = None) -> list:
    """Distinct keys of ``key_type`` (``int64`` or ``string``): ``size`` of them, or 1 to ``MAX_MAP``."""
    if key_type == "string":
        strategy = _TEXT_KEYS
    elif key_type == "int64":
        strategy = _INT_KEYS
    else:
        raise NotGeneratable(f"cannot draw map keys of type {key_type}")
    low, high = (1, MAX_MAP) if size is None else (size, size)
    return draw(st.lists(strategy, min_size=low, max_size=high, unique=True))


def map_values(draw, value_type: str, count: int) -> list:
    """``count`` values of ``value_type`` as Python scalars (drawn like tensor contents: small
    integers, random values, edge values such as NaN and integer extremes)."""
    if value_type == "string":
        return draw(st.lists(_TEXT_KEYS, min_size=count, max_size=count))
    arr = fill(value_type, (count,), draw(_VALUE_KINDS), draw(st.integers(0, 2**32 - 1)))
    return [v.item() for v in arr]


def draw_map(draw, type_str: str, keys: list | None = None) -> MapValue:
    """A map of ``type_str`` (``map(int64, float)`` ...): the given ``keys`` or drawn distinct ones,
    with drawn values of the value type."""
    key_type, value_type = map_types(type_str)
    keys = map_keys(draw, key_type) if keys is None else list(keys)
    return make_map(zip(keys, map_values(draw, value_type, len(keys))), key_type, value_type)


__all__ = ["MAX_MAP", "MAX_SEQUENCE", "draw_map", "draw_value", "generic_tensors", "map_keys", "map_values"]
