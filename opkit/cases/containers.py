"""Drawing sequence and optional values (``opkit.core.values`` says how they are held).

``draw_value`` turns a bound type string into a value: an optional is empty or holds a value of
its inner type, a sequence holds 0 to ``MAX_SEQUENCE`` tensors. How the tensors themselves are
drawn is the caller's: the generic step takes them from the case's shared dims and the input's
rank rule (``generic_tensors``; Identity's ``V`` bound to ``seq(tensor(float))``), the
``sequence`` family hook from its own small shapes.
"""

from __future__ import annotations

from typing import Any, Callable

from ..spec.model import RankRule
from .case import NotGeneratable
from .draws import _BOOL, _draw_tensor, _ints, rank_range
from ..core.values import EMPTY_OPTIONAL, element_of, inner_type, is_optional_type, is_sequence_type

MAX_SEQUENCE = 4  # tensors in a drawn sequence: 0 (empty) to this

Tensors = Callable[[str, int], list]  # (element type, count) -> that many arrays


def draw_value(draw, type_str: str, tensors: Tensors, *, allow_empty: bool = True) -> Any:
    """A value of ``type_str``: a tensor, a sequence, or an optional (empty when ``allow_empty``
    and the draw says so, else holding a value of its inner type)."""
    if is_optional_type(type_str):
        if allow_empty and draw(_BOOL):
            return EMPTY_OPTIONAL
        return draw_value(draw, inner_type(type_str), tensors, allow_empty=allow_empty)
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


__all__ = ["MAX_SEQUENCE", "draw_value", "generic_tensors"]
