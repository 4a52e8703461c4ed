"""Hypothesis strategies for the values of a case: arrays, shapes, scalars, tensors, attribute values.

A drawn ``Case`` binds one element type per type parameter (every type a constraint allows is
reachable: bool, string, float16, bfloat16, float8 via ml_dtypes, complex, all integer widths), a
shape per input from its rank rule (zero-size dims, 1xN, Nx1, batch dims), attribute values from
their value domains (absent = default), optional inputs present or absent, edge values (NaN, +-inf,
-0.0, integer min/max) and, per input, whether it is fed as a graph input or an initializer.

The building blocks (``base_dims``, ``tensor``, ``scalar``, ``attribute``, ``optional``; the type
binding is ``opkit.cases.bindings``) are public; ``opkit.cases`` composes them, with family hooks,
into the one case generator. Values are drawn as a (kind, seed) pair and filled by NumPy, so a
draw is cheap and shrinks towards small, simple arrays.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from ..core.dtypes import COMPLEX, FLOATS, elem_of, np_dtype
from ..core.onnx_types import INT_RANGES
from ..spec.model import Attribute, RankRule
from .case import ABSENT, NotGeneratable

MAX_RANK = 5  # unbounded rank rules draw up to this rank
MAX_DIM = 5
Rank = RankRule


# ---------------------------------------------------------------------------------------------
# edge values


def edge_values(elem: str) -> list:
    """Interesting values of an element type (as Python/NumPy scalars castable to its dtype)."""
    elem = elem_of(elem)
    if elem == "bool":
        return [False, True]
    if elem == "string":
        return ["", "a", "\u00e9\u4e2d", "x" * 40, " "]
    if elem in INT_RANGES:
        lo, hi = INT_RANGES[elem]
        vals = [0, 1, lo, hi, lo + 1, hi - 1]
        if lo < 0:
            vals.append(-1)
        return sorted(set(vals), key=vals.index)
    if elem in COMPLEX:
        return [0j, complex(-0.0, 0.0), complex(math.nan, 0), complex(math.inf, -math.inf), 1 + 1j, -1j]
    if elem in FLOATS:
        dt = np_dtype(elem)
        try:
            fi = np.finfo(dt)
        except Exception:  # ml_dtypes types
            import ml_dtypes

            fi = ml_dtypes.finfo(dt)
        vals = [0.0, -0.0, 1.0, -1.0, math.nan, math.inf, -math.inf, float(fi.max), -float(fi.max),
                float(fi.tiny), float(fi.smallest_subnormal) if hasattr(fi, "smallest_subnormal") else 0.0]
        return vals
    return [0]


def cast(values, elem: str) -> np.ndarray:
    """A NumPy array of ``values`` with the dtype of ONNX element ``elem``."""
    elem = elem_of(elem)
    dt = np_dtype(elem)
    if elem == "string":
        arr = np.empty(len(values) if isinstance(values, list) else np.shape(values), dtype=object)
        flat = list(np.asarray(values, dtype=object).ravel()) if not isinstance(values, list) else values
        arr.ravel()[:] = [str(v) for v in flat] if flat else []
        return arr
    if elem in INT_RANGES:
        if elem in ("int64", "uint64"):
            return np.array([int(v) for v in np.ravel(np.asarray(values, dtype=object))],
                            dtype=dt).reshape(np.shape(values))
        return np.asarray(values, dtype=np.int64).astype(dt)
    with np.errstate(all="ignore"):
        if elem in COMPLEX:
            return np.asarray(values, dtype=np.complex128).astype(dt)
        if elem == "bool":
            return np.asarray(values, dtype=bool)
        return np.asarray(values, dtype=np.float64).astype(dt)


# ---------------------------------------------------------------------------------------------
# values


VALUE_KINDS = ("small", "random", "edges")


def fill(elem: str, shape: tuple[int, ...], kind: str, seed: int) -> np.ndarray:
    """Deterministic array contents for (kind, seed): the cheap core of ``tensor``."""
    elem = elem_of(elem)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    dt = np_dtype(elem)
    if elem == "string":
        pool = edge_values(elem) + ["b", "abc", "Z"] if kind != "small" else ["", "a", "b", "abc"]
        idx = rng.integers(0, len(pool), n)
        arr = np.empty(n, dtype=object)
        arr[:] = [pool[i] for i in idx]
        return arr.reshape(shape)
    if elem == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if elem in INT_RANGES:
        lo, hi = INT_RANGES[elem]
        if kind == "small":
            flat = rng.integers(max(lo, -3), min(hi, 3) + 1, n)
        elif elem in ("uint64", "int64"):
            flat = rng.integers(lo, hi, n, dtype=np.dtype(elem.replace("64", "") + "64"), endpoint=True)
        else:
            flat = rng.integers(lo, hi + 1, n)
        arr = flat.astype(dt)
    elif elem in COMPLEX:
        if kind == "small":
            arr = (rng.integers(-3, 4, n) + 1j * rng.integers(-3, 4, n)).astype(dt)
        else:
            arr = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)
                   + 1j * rng.standard_normal(n)).astype(dt)
    else:  # floats
        with np.errstate(all="ignore"):
            if kind == "small":
                arr = rng.integers(-3, 4, n).astype(np.float64).astype(dt)
            else:
                arr = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(dt)
    if kind == "edges" and n:
        edges = cast(edge_values(elem), elem)
        mask = rng.random(n) < 0.5
        picks = edges[rng.integers(0, len(edges), n)]
        arr = np.where(mask, picks, arr).astype(dt)
    return np.asarray(arr).reshape(shape)


@functools.lru_cache(maxsize=None)
def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


@functools.lru_cache(maxsize=None)
def _pick(values: tuple) -> st.SearchStrategy:
    return st.sampled_from(values)


_BOOL = st.booleans()
_SEED = st.integers(0, 2**32 - 1)
_KIND = st.sampled_from(VALUE_KINDS)
_DIMS = st.lists(st.integers(0, MAX_DIM), min_size=MAX_RANK, max_size=MAX_RANK)


def base_dims() -> st.SearchStrategy[list[int]]:
    """Dimensions shared by the inputs of a case (aligned from the right, NumPy style): small
    sizes, including 0 and 1, so zero-size tensors, 1xN, Nx1 and batches all occur."""
    return _DIMS


def rank_range(rule: RankRule | None) -> tuple[int, int]:
    if rule is None:
        return 0, 4
    high = rule.max if rule.max is not None else max(rule.min + 2, min(MAX_RANK, rule.min + 3))
    return rule.min, min(high, max(rule.min, MAX_RANK))


def _draw_shape(draw, dims, rank, broadcast):
    lo, hi = rank_range(rank)
    n = draw(_ints(lo, hi)) if hi > lo else lo
    out = list(dims[len(dims) - n:]) if n <= len(dims) else [1] * (n - len(dims)) + list(dims)
    if broadcast and out:
        out = [1 if draw(_BOOL) else d for d in out]
    return tuple(out)


@st.composite
def shape(draw, dims: list[int], rank: RankRule | None = None, broadcast: bool = False) -> tuple[int, ...]:
    """A shape whose rank satisfies ``rank``, taken from the right end of ``dims``; with
    ``broadcast`` some dims may become 1."""
    return _draw_shape(draw, dims, rank, broadcast)


@functools.lru_cache(maxsize=None)
def _scalar_int_strategy(elem: str) -> st.SearchStrategy[int]:
    lo, hi = INT_RANGES[elem]
    return st.one_of(st.integers(max(lo, -6), min(hi, 6)), st.sampled_from(edge_values(elem)), st.integers(lo, hi))


def _draw_scalar(draw, elem):
    if elem in INT_RANGES:
        return cast([draw(_scalar_int_strategy(elem))], elem).reshape(())
    return fill(elem, (), draw(_KIND), draw(_SEED))


@st.composite
def scalar(draw, elem: str) -> np.ndarray:
    """A 0-d array: small values first (shrinks to 0), then the type's edge values."""
    return _draw_scalar(draw, elem_of(elem))


def _draw_tensor(draw, elem, dims, rank, broadcast):
    shp = _draw_shape(draw, dims, rank, broadcast)
    if shp == ():
        return _draw_scalar(draw, elem)
    return fill(elem, shp, draw(_KIND), draw(_SEED))


@st.composite
def tensor(draw, elem: str, dims: list[int] | None = None, rank: RankRule | None = None,
           broadcast: bool = False) -> np.ndarray:
    """An array of ONNX element ``elem`` whose rank satisfies ``rank``."""
    dims = dims if dims is not None else draw(_DIMS)
    return _draw_tensor(draw, elem_of(elem), dims, rank, broadcast)


def optional(strategy: st.SearchStrategy) -> st.SearchStrategy:
    """Absent (None) or present; shrinks towards absent."""
    return st.one_of(st.none(), strategy)


def attribute_values(attr: Attribute) -> st.SearchStrategy:
    """Values an attribute may take: its value domain, else a few type-driven candidates."""
    dom = attr.domain
    if dom is not None and dom.values is not None:
        vals = [v for v in dom.values if dom.allows(v)]
        return st.sampled_from(vals)
    if attr.type == "int":
        if dom is not None and (dom.min is not None or dom.max is not None):
            lo = int(dom.min) if dom.min is not None else -(2**63)
            hi = int(dom.max) if dom.max is not None else 2**63 - 1
            return st.one_of(st.integers(max(lo, -8) if hi >= max(lo, -8) else lo, min(hi, max(lo, 8))),
                             st.sampled_from([lo, hi]))
        cands = [attr.default] if attr.has_default else []
        cands += [v for v in (0, 1) if v not in cands]
        return st.sampled_from(cands)
    if attr.type == "float":
        lo = dom.min if dom is not None and dom.min is not None else -4.0
        hi = dom.max if dom is not None and dom.max is not None else 4.0
        return st.floats(float(lo), float(hi), allow_nan=False, width=32)
    if attr.type == "ints":
        return st.lists(st.integers(-4, 4), max_size=4)
    if attr.type == "floats":
        return st.lists(st.floats(-4, 4, width=32), max_size=4)
    if attr.type == "string" and attr.has_default:
        return st.just(attr.default)
    if attr.type == "strings":
        return st.lists(st.sampled_from(["a", "b"]), max_size=3)
    if attr.type == "tensor" and attr.element_type:
        # the element type is only known once the type binding is drawn: bind_type_attributes
        # turns the seed into a 0-D tensor of that type
        return st.integers(-3, 3).map(ScalarSeed)
    raise NotGeneratable(f"cannot draw values of {attr.type} attribute {attr.name!r}")


def attribute(attr: Attribute) -> st.SearchStrategy:
    """An attribute as a node sets it: ABSENT (the default applies) or an explicit value."""
    try:
        values = attribute_values(attr)
    except NotGeneratable:
        if attr.required:
            raise
        return st.just(ABSENT)
    return values if attr.required else st.one_of(st.just(ABSENT), values)


def feed_mode() -> st.SearchStrategy[bool]:
    """Whether an input is fed as an initializer (about one draw in eight) instead of a graph input."""
    return st.integers(0, 7).map(lambda i: i == 7)


_FEED = st.integers(0, 7)


@dataclass(frozen=True)
class ScalarSeed:
    """A drawn value for a tensor attribute whose element type is a type parameter's (see
    ``Attribute.element_type``); it becomes a 0-D tensor when the binding is known."""

    value: int
