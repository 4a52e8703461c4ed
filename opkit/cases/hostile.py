"""Hostile variants of a valid case, for the robustness suite.

"Undefined" in the ONNX text still means "must not crash": a runtime given an index out of range, an
integer division of INT_MIN by -1, a zero-size tensor, a rank the op excludes or an attribute out of
its domain may refuse the model or compute anything, but must not die, hang or exhaust memory. Each
variant changes one thing of a valid case (one input's values, one input's shape or rank, or one
attribute), so that a crash points at what triggered it: the rule it breaks is the one the change
touched.

Values that would only ask for a huge, valid output are left out (INT_MAX as a size, a float maximum
as a count): a runtime allocating what it was asked for is not a defect, and the memory limit of the
worker would report it as one. Integer extremes are therefore INT_MIN, -1, 0 and values one past the
input's extents, plus +-64 (or zeros alone, see ZERO_SHARE), and for an index (``index_inputs``: its
values bound by an extent, so it sizes nothing) the type's maximum and FAR_INDICES too; floats get
NaN, the infinities, -0.0, the largest finite values and the subnormals.

Deterministic: the variants are a pure function of (case, version, count, seed).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from ..spec.rules import ParsedRule, parse_rules
from ..core.onnx_types import INT_RANGES
from .case import TYPE_ATTRIBUTES, Case, NotGeneratable, input_parameter, param_elem
from .draws import cast, edge_values
from .derived import with_attribute

LARGE = 64  # out of any drawn extent (at most 5), small enough that a size of it asks for little memory
# Integer values are zeros alone this often: 0 is one value of ten in the extremes' pool, so a
# scalar divisor (Div, Mod), stride or block size met it once in ten variants, and a batch stops
# at its first crash (INT_MIN / -1 hid x / 0 in onnxruntime 1.16's Div)
ZERO_SHARE = 0.3


@dataclass(frozen=True)
class Hostile:
    """One hostile variant and what was changed, for the report ("b: integer extremes")."""

    case: Case
    change: str


# Far out-of-range values for an index (see index_inputs): one past the input's extents reads a
# neighbour's memory and returns garbage, not a crash; onnxruntime 1.16's RoiAlign read out of its
# mapping (SIGSEGV) from batch index 65,536 on. Past 2^31 for an index that a runtime may narrow to
# 32 bits. Never for a size: these would only ask for a huge, valid output.
FAR_INDICES = (2 ** 16 + 1, -(2 ** 16) - 1, 2 ** 31, -(2 ** 31) - 1, 10 ** 12)


def _int_pool(elem: str, extents: list[int], index: bool = False) -> list[int]:
    lo, hi = INT_RANGES[elem]
    pool = [lo, lo + 1, -1, 0, 1, LARGE, -LARGE] + [e for d in extents for e in (d, -d - 1)]
    if hi <= 2 ** 16 or index:  # the maximum of a narrow type cannot size a huge allocation; an index sizes none
        pool += [hi, hi - 1]
    if index:
        pool += FAR_INDICES
    return sorted({v for v in pool if lo <= v <= hi})


def index_inputs(version) -> frozenset:
    """The inputs whose values the spec's rules bound by an extent of an input (``indices.max() <
    data.shape[axis]``, ``batch_indices ... < X.shape[0]``, TopK's ``K <= x.shape[axis]``): indices,
    whose far out-of-range values (FAR_INDICES) are invalid input, which must be refused before
    anything is read or allocated with them. Read off the rules' comparisons: the lesser side uses
    the input's values themselves (not only its ``.shape``, ``.ndim``, ``.size`` or ``len``, and
    no arithmetic on them), the greater a ``.shape``. A lower bound, a bound on arithmetic of the
    values (Pad's ``-min(pads[i], 0) <= x.shape[i]``: only the crop is bounded) or an equality
    (Split's sizes) makes no index: a far value there may be valid and huge."""
    return _index_inputs(tuple(p.name for p in version.inputs), parse_rules(version))


@functools.lru_cache(maxsize=4096)
def _index_inputs(inputs: tuple, rules: tuple[ParsedRule, ...]) -> frozenset:
    names = set(inputs)
    found: set[str] = set()
    for rule in rules:
        if rule.tree is None:
            continue
        for node in ast.walk(rule.tree):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                for op, a, b in zip(node.ops, sides, sides[1:]):
                    if isinstance(op, (ast.Gt, ast.GtE)):
                        a, b = b, a
                    if isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) and _uses_shape(b) and not any(
                            isinstance(n, (ast.BinOp, ast.UnaryOp)) for n in ast.walk(a)):
                        found |= _value_names(a, names)  # a < x.shape[...]: the values bounded above by an extent
    return frozenset(found)


_META = ("shape", "ndim", "size", "dtype")
_META_CALLS = ("len", "ndim", "shape", "size")  # len(x), np.ndim(x) ... read no values


def _uses_shape(node) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "shape" for n in ast.walk(node))


def _value_names(node, names: set) -> set:
    """The input names ``node`` reads the values of (a name not only under .shape/.ndim/.size)."""
    meta = {id(n.value) for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr in _META}
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", None)) in _META_CALLS:
            meta |= {id(n) for arg in call.args for n in ast.walk(arg)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in names and id(n) not in meta}


def _values(arr: np.ndarray, elem: str, extents: list[int], rng, index: bool = False) -> tuple[np.ndarray, str] | None:
    """Replace about half the elements (at least one) with extreme values of the type (``index``:
    and FAR_INDICES)."""
    if arr.size == 0 or elem == "bool":
        return None
    if elem in INT_RANGES and rng.random() < ZERO_SHARE:  # a divisor, stride or size of 0
        pool, what = [0], "integer zeros"
    elif elem in INT_RANGES:
        pool, what = _int_pool(elem, extents, index), "integer extremes" + (" (an index: far out of range too)" if index else "")
    else:
        pool, what = edge_values(elem), "special values"
        if elem == "string":
            what = "edge strings"
    if not pool:
        return None
    flat = arr.reshape(-1).copy()
    chosen = cast([pool[int(i)] for i in rng.integers(0, len(pool), flat.size)], elem)
    mask = rng.random(flat.size) < 0.5
    mask[int(rng.integers(0, flat.size))] = True
    flat[mask] = chosen[mask]
    return flat.reshape(arr.shape), what


def _zero_size(arr: np.ndarray, rng) -> tuple[np.ndarray, str] | None:
    if arr.ndim == 0:
        return None
    axis = int(rng.integers(0, arr.ndim))
    shape = list(arr.shape)
    shape[axis] = 0
    return np.empty(shape, dtype=arr.dtype), f"extent 0 on axis {axis}"


def _rank(arr: np.ndarray, rng) -> tuple[np.ndarray, str] | None:
    if arr.ndim > 0 and rng.random() < 0.5:
        value = arr.reshape(-1)[:1].reshape(()) if arr.size else np.zeros((), arr.dtype)
        return value.copy(), "rank 0"
    grown = arr.reshape((1,) * max(1, 7 - arr.ndim) + arr.shape)
    return grown, f"rank {grown.ndim}"


def _attribute(case: Case, version, extents: list[int], rng) -> tuple[str, object, str] | None:
    """A new value out of the usual domain for one int, ints or float attribute."""
    given = dict(case.defaults)
    given.update(case.attributes)
    candidates = attribute_candidates(version)
    if not candidates:
        return None
    attr = candidates[int(rng.integers(0, len(candidates)))]
    rank = max(max_rank(case), 1)
    ints, floats = _attribute_pools(case)
    if attr.type == "int":
        value = ints[int(rng.integers(0, len(ints)))]
    elif attr.type == "float":
        value = floats[int(rng.integers(0, len(floats)))]
    else:
        old = list(given.get(attr.name) or [])
        pool = ints if attr.type == "ints" else floats
        if old and rng.random() < 0.7:
            old[int(rng.integers(0, len(old)))] = pool[int(rng.integers(0, len(pool)))]
            value = old
        else:  # the wrong length
            value = [pool[int(rng.integers(0, len(pool)))] for _ in range(int(rng.integers(0, rank + 3)))]
        value = [int(v) for v in value] if attr.type == "ints" else [float(v) for v in value]
    return attr.name, value, f"attribute {attr.name} = {value!r}"


ATTRIBUTE_VARIANTS = 32  # at most this many in the deterministic attribute batch (attribute_variants)


def attribute_candidates(version) -> list:
    """The attributes hostile values are tried on: int, ints, float or floats, no type attribute."""
    return [a for a in version.attributes if a.name not in TYPE_ATTRIBUTES and a.type in ("int", "ints", "float", "floats")]


def _attribute_pools(case: Case) -> tuple[list, list]:
    """The out-of-domain values, 0 and -1 first: a divisor or size of 0 and a negative size are
    the values most often met unchecked (onnxruntime 1.16's MaxPool: SIGFPE on a stride of 0,
    SIGSEGV on pads of -1), and the attribute batch is cut at ATTRIBUTE_VARIANTS."""
    rank = max(max_rank(case), 1)
    return [0, -1, -(2 ** 31), -rank - 1, rank, LARGE], [float("nan"), float("inf"), float("-inf"), -1.0, 0.0, 1e30]


def _list_widths(attr, given: dict, n: int, accepts) -> list[int]:
    """The lengths an ints or floats attribute's hostile lists get: the given list's; for an absent
    one, the lengths at which a neutral list (all 0 or all 1) makes a valid case, as ``accepts``
    (the reference kernel) says: ``strides`` n, ``pads`` 2n, where n is the lists' length. Without
    ``accepts``, or when no neutral list is accepted, n and 2n."""
    old = list(given.get(attr.name) or [])
    if old:
        return [len(old)]
    widths = sorted({n, 2 * n}) if attr.type == "ints" else [n]
    if accepts is None or len(widths) == 1:
        return widths
    kind = int if attr.type == "ints" else float
    valid = [w for w in widths if any(accepts(attr.name, [kind(v)] * w) for v in (1, 0))]
    return valid or widths


def attribute_variants(case: Case, version, limit: int = ATTRIBUTE_VARIANTS, accepts=None) -> list[Hostile]:
    """Every int, ints, float or floats attribute at each out-of-domain value of ``_attribute_pools``,
    deterministically (a list attribute gets the value at every position, and the empty
    list): the batch the robustness suite asks once per op version, so that a stride of 0 or a
    negative pad is met whatever the random variants drew. Round-robin over the attributes, at
    most ``limit``. ``accepts(name, value)``: whether the case with that attribute value is valid
    (see ``_list_widths``)."""
    given = dict(case.defaults)
    given.update(case.attributes)
    ints, floats = _attribute_pools(case)
    # an absent list gets the length of the lists given (strides, kernel_shape) or twice it (pads)
    lists = [len(v) for v in given.values() if isinstance(v, (list, tuple)) and v]
    n = max(lists, default=max(max_rank(case) - 2, 1))
    per_attribute = []
    for attr in attribute_candidates(version):
        pool = ints if attr.type in ("int", "ints") else floats
        if attr.type in ("int", "float"):
            values = list(pool)
        else:
            widths = _list_widths(attr, given, n, accepts)
            values = [[int(v) if attr.type == "ints" else float(v)] * w for v in pool for w in widths] + [[]]
        per_attribute.append([(attr.name, v) for v in values])
    out: list[Hostile] = []
    for i in range(max((len(v) for v in per_attribute), default=0)):
        for values in per_attribute:
            if i < len(values) and len(out) < limit:
                name, value = values[i]
                out.append(Hostile(with_attribute(case, name, value), f"attribute {name} = {value!r}"))
    return out


def _element(version, binding, name: str) -> str | None:
    """The element type of input ``name``, or None when it is not bound to a tensor type (an
    optional's value is an array too, but its parameter is bound to optional(...))."""
    param = input_parameter(version, name)
    try:
        return param_elem(param, binding) if param is not None else None
    except NotGeneratable:
        return None


def _all_values(case: Case, version, binding, tensors, extents, rng) -> Hostile | None:
    """Every input's values at once; half the time integers come from {INT_MIN, -1} alone, so that
    the pair that overflows a signed division or remainder (INT_MIN / -1) meets at one position
    often, not once in a few hundred draws."""
    inputs, touched = list(case.inputs), False
    pair = rng.random() < 0.5
    for i, name, arr in tensors:
        elem = _element(version, binding, name)
        if pair and elem in INT_RANGES and INT_RANGES[elem][0] < 0 and arr.size:
            lo = INT_RANGES[elem][0]
            inputs[i], touched = (name, cast(list(rng.choice([lo, -1], arr.size)), elem).reshape(arr.shape)), True
            continue
        changed = _values(arr, elem, extents, rng, name in index_inputs(version)) if elem is not None else None
        if changed is not None:
            inputs[i], touched = (name, changed[0]), True
    if not touched:
        return None
    return Hostile(dataclasses.replace(case, inputs=tuple(inputs), siblings=0), "every input: extreme values")


def max_rank(case: Case) -> int:
    """The largest rank among the case's tensor inputs (0 when it has none)."""
    ranks = [a.ndim for _, a in case.inputs if isinstance(a, np.ndarray)]
    return max(ranks) if ranks else 0


def hostile_variants(case: Case, version, count: int, seed: int) -> list[Hostile]:
    """``count`` variants of ``case``, each with one hostile change (fewer when nothing applies)."""
    rng = np.random.default_rng(seed)
    binding = case.type_map
    tensors = [(i, name, arr) for i, (name, arr) in enumerate(case.inputs) if isinstance(arr, np.ndarray)]
    extents = sorted({d for _, _, a in tensors for d in a.shape})
    kinds = ["values", "values", "zero-size", "rank", "attribute"]
    out: list[Hostile] = []
    for _ in range(count * 3):  # some draws change nothing (a bool input's values): try again
        if len(out) >= count:
            break
        kind = kinds[int(rng.integers(0, len(kinds)))]
        if kind == "attribute":
            changed = _attribute(case, version, extents, rng)
            if changed is None:
                continue
            name, value, what = changed
            out.append(Hostile(with_attribute(case, name, value), what))
            continue
        if not tensors:
            continue
        i, name, arr = tensors[int(rng.integers(0, len(tensors)))]
        elem = _element(version, binding, name)
        if kind == "values" and rng.random() < 0.5:  # every input at once: INT_MIN / -1 needs both
            variant = _all_values(case, version, binding, tensors, extents, rng)
            if variant is not None:
                out.append(variant)
            continue
        if kind == "values":
            changed = _values(arr, elem, extents, rng, name in index_inputs(version)) if elem else None
        elif kind == "zero-size":
            changed = _zero_size(arr, rng)
        else:
            changed = _rank(arr, rng)
        if changed is None:
            continue
        new, what = changed
        inputs = list(case.inputs)
        inputs[i] = (name, new)
        out.append(Hostile(dataclasses.replace(case, inputs=tuple(inputs), siblings=0), f"{name}: {what}"))
    return out


__all__ = ["FAR_INDICES", "Hostile", "attribute_candidates", "index_inputs", "attribute_variants", "hostile_variants", "max_rank"]
