"""Small draws the shape-family builders share (``shape``, ``resample``): sizes, choices among a
spec's allowed values, rare events, axis subsets and their signed spellings."""

from __future__ import annotations

import functools

import numpy as np
from hypothesis import strategies as st

from ..context import Context, int_tensor

_BOOL = st.booleans()


@functools.lru_cache(maxsize=None)
def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


@functools.lru_cache(maxsize=None)
def _pick(options: tuple) -> st.SearchStrategy:
    return st.sampled_from(options)


def _int(draw, lo: int, hi: int) -> int:
    return draw(_ints(lo, hi)) if hi > lo else lo


def _one(draw, options):
    options = tuple(options)
    return options[0] if len(options) == 1 else draw(_pick(options))


def _rare(draw, one_in: int = 6) -> bool:
    """True about once in ``one_in`` draws (shrinks to False)."""
    return draw(_ints(0, one_in - 1)) == one_in - 1


def _dims(draw, rank: int, lo: int = 1, hi: int = 3, zero: bool = True) -> list[int]:
    """``rank`` sizes in [lo, hi]; with ``zero`` one of them is sometimes 0 (an empty tensor)."""
    out = [_int(draw, lo, hi) for _ in range(rank)]
    if zero and rank and _rare(draw):
        out[_int(draw, 0, rank - 1)] = 0
    return out


def _choices(ctx: Context, name: str, fallback: tuple) -> tuple:
    """The values the spec allows for attribute ``name`` (its ``values:``), else ``fallback``."""
    attr = ctx.attribute(name)
    if attr is not None and attr.domain is not None and attr.domain.values is not None:
        return tuple(attr.domain.values)
    return fallback


def _index_elem(ctx: Context, name: str) -> str:
    return ctx.elem(name) if ctx.has_input(name) else "int64"


def _ints_input(ctx: Context, name: str, data) -> np.ndarray:
    """A 1-D integer input (``Tind`` or int64) holding ``data``."""
    return int_tensor(_index_elem(ctx, name), list(data), (len(data),))


def _signed_axes(draw, axes: list[int], rank: int, allow_negative: bool = True) -> list[int]:
    if not allow_negative:
        return list(axes)
    return [a - rank if draw(_BOOL) else a for a in axes]


@functools.lru_cache(maxsize=None)
def _permutation(n: int) -> st.SearchStrategy:
    return st.permutations(range(n))


@functools.lru_cache(maxsize=None)
def _subsets(n: int, min_size: int) -> st.SearchStrategy:
    return st.lists(_ints(0, n - 1), min_size=min(min_size, n), max_size=n, unique=True)


def _permuted(draw, items: list) -> list:
    return [items[i] for i in draw(_permutation(len(items)))] if len(items) > 1 else list(items)


def _axes_subset(draw, rank: int, min_size: int = 1) -> list[int]:
    """Distinct axes of a rank-``rank`` tensor in drawn order (unsorted)."""
    return draw(_subsets(rank, min_size)) if rank else []


def range_bounds(draw, elem: str) -> tuple:
    """(start, limit, delta) of a Range of ``elem``: a few elements either way; float bounds in
    quarters, exact in every float type, so every runtime counts the same elements."""
    from ...core.onnx_types import INT_RANGES

    if elem in INT_RANGES:
        start, delta = _int(draw, -5, 5), _one(draw, (1, 2, 3, -1, -2, -3))
        return start, start + _int(draw, -6, 6), delta
    start = _int(draw, -12, 12) / 4
    delta = _one(draw, (1.0, 0.5, 2.0, 0.25, 1.5, -1.0, -0.5, -2.0, -0.75))
    return start, start + _int(draw, -12, 12) / 4, delta
