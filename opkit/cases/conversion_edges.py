"""Edges of the conversions a text states: values where the stated result changes.

A conversion of a non-integer to an integer type (Cast, CastLike, a quantization) or a rounding op
changes its answer at ties (x.5: half away from zero, half to even, truncation all differ) and
between an integer and its neighbouring floats; a clamp (Clip's min and max, a threshold
attribute) at its bound and one ulp either side of it. The saturation values of a narrower type
are ``edges._saturation_edge``'s and INT_MIN/INT_MAX ``edges._integer_extremes``': not repeated here.

Pure and deterministic: a function of (case, version, seed, variant). Only floating-point values
change, never a shape or an attribute.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from ..core.dtypes import FLOATS, np_dtype
from ..core.onnx_types import INT_RANGES
from .case import Case, NotGeneratable, param_elem
from .draws import cast
from .relational import input_elem
from .relational_edges import _safe

TIES = (0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5)  # half-to-even and half-away differ on every other one
NEAR = (1.0, -1.0, 2.0, -2.0, 3.0)  # integers whose neighbouring floats truncate or round differently
_ROUNDING_TEXT = re.compile(r"\bround(s|ed|ing)?\b|\btruncat", re.IGNORECASE)


def _finfo(elem: str):
    dt = np_dtype(elem)
    try:
        return np.finfo(dt)
    except (ValueError, TypeError):
        import ml_dtypes

        return ml_dtypes.finfo(dt)


def _types(version, p) -> set[str]:
    tc = version.type_constraint(p.type)
    return {t[7:-1] if t.startswith("tensor(") else t for t in (tc.types if tc is not None else [p.type])}


def rounds(version) -> bool:
    """A floating-point input converted to an integer type (an output with a type parameter of its
    own that can be an integer), or an op of one input whose text speaks of rounding or truncating
    (Round; not the floor of a window op's output shape)."""
    floats = [p for p in version.inputs if _types(version, p) & set(FLOATS)]
    if not floats:
        return False
    data = version.inputs[0].type
    if any(p.type != data and _types(version, p) & set(INT_RANGES) for p in version.outputs):
        return True
    return len(version.inputs) == 1 and bool(_ROUNDING_TEXT.search(version.doc or ""))


def _scalar_inputs(version) -> set[str]:
    from .relational import scalar_inputs

    return set(scalar_inputs(version))


def has_bounds(version) -> bool:
    """A float attribute or an input holding one value, and a floating-point input to meet it."""
    if not any(_types(version, p) & set(FLOATS) for p in version.inputs):
        return False
    return any(a.type == "float" for a in version.attributes) or bool(_scalar_inputs(version))


def stated(version) -> bool:
    return rounds(version) or has_bounds(version)


def _neighbours(k: float, elem: str) -> list[float]:
    """The floats of ``elem`` next to ``k`` (a normal number): one below and one above."""
    eps = float(_finfo(elem).eps)
    e = math.floor(math.log2(abs(k)))
    up = eps * 2.0 ** e
    down = up / 2 if abs(k) == 2.0 ** e else up
    below, above = (k - down, k + up) if k > 0 else (k - up, k + down)
    return [below, above]


def _bounds(case: Case, version, data: str) -> list[float]:
    """The values of the case's scalar operands: its float attributes and the inputs a rule says
    hold one value (Clip's min and max)."""
    out = []
    for name in sorted(_scalar_inputs(version)):
        arr = dict(case.inputs).get(name)
        if name != data and isinstance(arr, np.ndarray) and arr.size == 1 and input_elem(case, version, name) in FLOATS:
            out.append(float(np.asarray(arr, dtype=np.float64).reshape(-1)[0]))
    given = case.kernel_attributes()
    for a in version.attributes:
        if a.type == "float" and isinstance(given.get(a.name), (int, float)):
            out.append(float(given[a.name]))
    return [v for v in out if math.isfinite(v)]


def _data_input(case: Case, version, frozen, exclude=()) -> tuple[int, str, np.ndarray] | None:
    best = None
    for i, (name, arr) in enumerate(case.inputs):
        if name in frozen or name in exclude or not isinstance(arr, np.ndarray) or not arr.size:
            continue
        elem = input_elem(case, version, name)
        if elem in FLOATS and (best is None or arr.size > best[2].size):
            best = (i, elem, arr)
    return best


def _place(case: Case, index: int, arr: np.ndarray, values: np.ndarray, rng) -> Case:
    """``values`` at about half the positions of ``arr`` (each value once first, while positions
    last), the other positions kept."""
    flat = arr.reshape(-1).copy()
    n = flat.size
    order = rng.permutation(n)
    first = min(n, len(values))
    flat[order[:first]] = values[:first]
    rest = order[first:]
    where = rest[rng.random(rest.size) < 0.5]
    flat[where] = values[rng.integers(0, len(values), where.size)]
    inputs = list(case.inputs)
    inputs[index] = (inputs[index][0], flat.reshape(arr.shape))
    return dataclasses.replace(case, inputs=tuple(inputs), siblings=0)


def _output_elem(case: Case, version) -> str | None:
    """The element type of the first output with a type parameter of its own (Cast's T2)."""
    data = version.inputs[0].type if version.inputs else None
    for p in version.outputs:
        if p.type == data:
            continue
        try:
            return param_elem(p, case.type_map)
        except NotGeneratable:
            continue
    return None


def _float_ties(elem: str, out: str) -> list[float]:
    """Values of ``elem`` halfway between two neighbouring values of the narrower float type ``out``
    (round half to even goes down on one, up on the next) and the values of ``elem`` next to them."""
    eps_out, eps_in = float(_finfo(out).eps), float(_finfo(elem).eps)
    if eps_out <= eps_in:
        return []
    values = []
    for k in (1.0, 2.0, -1.0, 3.0):
        step = eps_out * 2.0 ** math.floor(math.log2(abs(k)))
        for tie in (k + step / 2, k + 3 * step / 2):
            values += [tie, *_neighbours(tie, elem)]
    return values


@_safe
def conversion_edge(case: Case, version, rng, frozen=frozenset(), variant=None) -> Case | None:
    """Variant "ties": one floating-point input holds values where a stated rounding decides:
    halfway between two values of a narrower floating-point output type and next to it; for an
    integer output or a rounding op, x.5 of either sign (and x.5 times a scalar input: a scale) and
    the floats next to small integers. Variant "bounds": it holds the values of the case's scalar
    operands (Clip's min and max, a float attribute), their negatives, and the floats next to them.
    None when the version's rules exclude the values (Cast leaves a fractional value cast to an
    integer undefined)."""
    from .relational import valid

    kinds = [k for k, ok in (("ties", rounds(version)), ("bounds", has_bounds(version))) if ok]
    kind = kinds[int(rng.integers(0, len(kinds)))] if variant is None and kinds else variant
    if kind not in kinds:
        return None
    scalars = _scalar_inputs(version)
    picked = _data_input(case, version, frozen, scalars)
    if picked is None:
        return None
    i, elem, arr = picked
    if kind == "ties":
        out = _output_elem(case, version)
        if out in FLOATS:
            pool = _float_ties(elem, out)
        else:
            scales = [b for b in _bounds(case, version, case.inputs[i][0]) if b and b != 1.0]
            pool = list(TIES) + [t * s for s in scales[:2] for t in TIES[:4]]
            pool += [v for k in NEAR for v in _neighbours(k, elem)]
    else:
        pool = []
        for b in _bounds(case, version, case.inputs[i][0]):
            pool += [b, -b] + (_neighbours(b, elem) if b and abs(b) >= float(_finfo(elem).tiny) else [])
    if not pool:
        return None
    with np.errstate(all="ignore"):
        values = cast(pool, elem)
    edged = _place(case, i, arr, values, rng)
    return edged if valid(edged, version) else None


__all__ = ["conversion_edge", "rounds", "has_bounds", "stated", "TIES"]
