"""Targeted edge strategies: narrow triggers that plain draws rarely reach.

Runtime bugs hide where a kernel takes another path: a NaN at the first or last position of a
reduced axis, subnormals on a CPU that flushes them to zero, the vectorized main loop and its
remainder (a last axis longer than any drawn extent), a float8 or 4-bit conversion at its
saturation edge, INT_MIN and INT_MAX in integer arithmetic, negative axes, rank 6. Each strategy
here turns a drawn valid case into one with that trigger; ``cases`` applies one in a fixed share of
its draws (about one in ``EDGE_SHARE``), and the case is then checked like any other (a variant the op's rules
exclude is discarded, never run as a finding).

A strategy applies to an op version by what the version can hold (a floating-point input, an axis
attribute, a narrower output type ...); ``applicable`` lists them, and the op pages show the list.
Strategies whose values a rule of the version excludes (a rule on NaN or on finiteness) are left out
rather than drawn and discarded.

Pure and deterministic: a strategy is a function of (case, version, seed).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..spec.rules import parse_rules
from ..core.dtypes import FLOATS
from ..core.onnx_types import INT_RANGES
from .case import TYPE_FIXING, Case, NotGeneratable, input_parameter, param_elem
from .draws import cast
from .derived import with_attribute
from .conversion_edges import conversion_edge, stated
from .relational_edges import (at_extent, broadcasts, has_integer_operand, has_relations, output_extent,
                               rule_boundary, zero_broadcast)

EDGE_SHARE = 4  # about one case in this many gets an edge strategy ...
# ... for which a drawn seed must pick one with this chance: hypothesis draws seed 0 and other
# simple values far more often than chance would (measured: 0.25 gave one case in 8 to 12)
EDGE_CHANCE = 0.4
LONG_AXIS = (17, 33, 67)  # past 16 lanes of a vector unit, and not a multiple of 4 or 8: main loop + remainder
NARROW = ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float8e8m0", "float4e2m1",
          "int4", "uint4", "int2", "uint2", "int8", "uint8", "float16", "bfloat16")
_NAN_NAMES = frozenset({"isnan", "isfinite", "isinf"})  # a rule calling one of these is on NaN or finiteness


@dataclass(frozen=True)
class EdgeStrategy:
    name: str
    doc: str  # what it draws and which code paths it aims at (shown on the op pages)
    applies: Callable  # (version) -> bool
    apply: Callable  # (case, version, rng, frozen input/attribute names[, variant]) -> Case | None
    # the deterministic sweep (``sweep``) runs each variant once; None: the strategy's own draw
    variants: tuple = (None,)
    # changes only the values of floating-point inputs, never a shape, an integer or an attribute:
    # the sweep applies it to a family hook's cases too (what the hook built for validity is
    # indices, sizes and shapes; a float value the rules exclude is discarded like any other)
    on_values: bool = False
    # sets attribute values: the sweep starts it from the cases that give the most attributes
    sets_attributes: bool = False
    # checks each variant against the version's rules and reference kernel before returning it
    # (the relational strategies): the sweep applies it to a family hook's cases too
    checked: bool = False
    # the sweep tries it on at most this many bases per variant (0: all); bounds a costly search
    max_bases: int = 0


def _elements(case: Case, version, frozen=frozenset()) -> list[tuple[int, str, str]]:
    """(position, input name, element type) of every tensor input of the case that no family hook
    built."""
    out = []
    for i, (name, arr) in enumerate(case.inputs):
        if arr is None or not isinstance(arr, np.ndarray) or name in frozen:
            continue
        param = input_parameter(version, name)
        try:
            elem = param_elem(param, case.type_map) if param is not None else None
        except NotGeneratable:
            elem = None
        if elem is not None:
            out.append((i, name, elem))
    return out


def _input_types(version) -> set[str]:
    types: set[str] = set()
    for p in version.inputs:
        tc = version.type_constraint(p.type) if hasattr(version, "type_constraint") else None
        allowed = tc.types if tc is not None else [p.type]
        types |= {t[7:-1] if t.startswith("tensor(") else t for t in allowed}
    return types


def _replace(case: Case, index: int, arr: np.ndarray) -> Case:
    inputs = list(case.inputs)
    inputs[index] = (inputs[index][0], arr)
    return dataclasses.replace(case, inputs=tuple(inputs), siblings=0)


def _pick_input(case, version, rng, want, frozen=frozenset()) -> tuple[int, str, np.ndarray] | None:
    choices = [(i, elem) for i, _, elem in _elements(case, version, frozen) if want(elem) and case.inputs[i][1].size]
    if not choices:
        return None
    i, elem = choices[int(rng.integers(0, len(choices)))]
    return i, elem, case.inputs[i][1]


def _special_floats(case, version, rng, frozen=frozenset()):
    picked = _pick_input(case, version, rng, lambda e: e in FLOATS, frozen)
    if picked is None:
        return None
    i, elem, arr = picked
    flat = arr.reshape(-1).copy()
    pool = cast([np.nan, np.inf, -np.inf, -0.0, 0.0], elem)
    where = rng.integers(0, flat.size, max(1, flat.size // 4))
    flat[where] = pool[rng.integers(0, len(pool), where.size)]
    return _replace(case, i, flat.reshape(arr.shape))


def _one_nan(case, version, rng, frozen=frozenset(), variant=None):
    picked = _pick_input(case, version, rng, lambda e: e in FLOATS, frozen)
    if picked is None:
        return None
    i, elem, arr = picked
    if variant is not None and arr.size < 2:
        return None  # first and last are one element: the sweep looks for a larger case
    flat = arr.reshape(-1).copy()
    last = rng.random() >= 0.5 if variant is None else variant == "last"
    flat[flat.size - 1 if last else 0] = cast([np.nan], elem)[0]
    return _replace(case, i, flat.reshape(arr.shape))


def _subnormals(case, version, rng, frozen=frozenset()):
    picked = _pick_input(case, version, rng, lambda e: e in ("float", "double", "float16", "bfloat16"), frozen)
    if picked is None:
        return None
    i, elem, arr = picked
    from ..core.dtypes import np_dtype

    dt = np_dtype(elem)
    try:
        info = np.finfo(dt)
    except ValueError:
        import ml_dtypes

        info = ml_dtypes.finfo(dt)
    tiny, smallest = float(info.tiny), float(info.smallest_subnormal)
    values = rng.uniform(smallest, tiny, arr.size) * rng.choice([-1.0, 1.0], arr.size)
    values[rng.random(arr.size) < 0.2] = smallest
    return _replace(case, i, cast(values, elem).reshape(arr.shape))


def _integer_extremes(case, version, rng, frozen=frozenset()):
    picked = _pick_input(case, version, rng, lambda e: e in INT_RANGES, frozen)
    if picked is None:
        return None
    i, elem, arr = picked
    lo, hi = INT_RANGES[elem]
    # the maximum of a narrow type only: a wide type's (or even 2**16) as a size or a count asks
    # for a valid, huge output (a HannWindow of 65,536), which is work, not an edge
    top = [hi, hi - 1] if hi <= 2 ** 8 else []
    pool = [v for v in (lo, lo + 1, *top, -1, 0, 1) if lo <= v <= hi]
    flat = arr.reshape(-1).copy()
    where = rng.random(flat.size) < 0.5
    where[int(rng.integers(0, flat.size))] = True
    flat[where] = cast([pool[int(k)] for k in rng.integers(0, len(pool), int(where.sum()))], elem)
    return _replace(case, i, flat.reshape(arr.shape))


def _output_elem(case: Case, version) -> str | None:
    for p in version.outputs:
        try:
            return param_elem(p, case.type_map)
        except NotGeneratable:
            continue
    return None


def _saturation_edge(case, version, rng, frozen=frozenset()):
    """Values at the largest finite value of the output type, half an ulp past it (a rounding tie
    that must saturate or become inf/NaN as the text says), and twice it."""
    out = _output_elem(case, version)
    if out not in NARROW:
        return None
    picked = _pick_input(case, version, rng, lambda e: e in FLOATS and e != out, frozen)
    if picked is None:
        return None
    i, elem, arr = picked
    from ..core.dtypes import np_dtype

    if out in INT_RANGES:
        lo, hi = INT_RANGES[out]
        edge = [hi, hi + 0.5, hi + 1, lo, lo - 0.5, lo - 1, 0.5, -0.5, 1.5, 2.5]
    else:
        try:
            info = np.finfo(np_dtype(out))
        except (ValueError, TypeError):
            import ml_dtypes

            info = ml_dtypes.finfo(np_dtype(out))
        top, eps = float(info.max), float(info.eps)
        edge = [top, top * (1 + eps / 2), top * (1 + eps), 2 * top, float(info.tiny), float(info.tiny) / 2]
        edge += [-v for v in edge]
    flat = arr.reshape(-1).copy()
    picks = cast([edge[int(k)] for k in rng.integers(0, len(edge), flat.size)], elem)
    where = rng.random(flat.size) < 0.6
    where[int(rng.integers(0, flat.size))] = True
    flat[where] = picks[where]
    return _replace(case, i, flat.reshape(arr.shape))


def _numeric_text(case, version, rng, frozen=frozenset()):
    """A string input cast to a number holds the target type's largest value, smallest normal and
    smallest subnormal as text, either sign (a parser that reports underflow as an error, as C's
    strtod does, refuses the subnormals)."""
    from .families.cast import _edge_texts

    out = _output_elem(case, version)
    texts = _edge_texts(out) if out is not None else []
    strings = [i for i, _, elem in _elements(case, version) if elem == "string" and case.inputs[i][1].size]
    if not texts or not strings:
        return None
    i = strings[int(rng.integers(0, len(strings)))]
    arr = case.inputs[i][1]
    # the smallest subnormal first: a one-element input still gets the rarest trigger
    texts = [texts[2], texts[0], texts[1], texts[5], texts[3], texts[4]] if len(texts) == 6 else texts
    values = np.empty(arr.size, dtype=object)
    values[:] = [texts[k % len(texts)] for k in range(arr.size)]
    return _replace(case, i, values.reshape(arr.shape))


def _long_axis(case, version, rng, frozen=frozenset()):
    """Every input whose last extent equals the largest one is tiled along it to 17, 33 or 67
    (inputs broadcasting along it with extent 1 keep it), so shapes still agree."""
    # floating-point data only: an integer input may be a shape or a size (ConstantOfShape's 33
    # extents of a new tensor), where a longer axis asks for far more work
    elements = _elements(case, version, frozen)
    if frozen or any(elem not in FLOATS and case.inputs[i][1].ndim for i, _, elem in elements):
        return None  # a hook's inputs agree in shape in ways only the hook knows
    tensors = [(i, arr) for i, _, _ in elements for arr in [case.inputs[i][1]] if arr.ndim]
    if not tensors:
        return None
    last = max(arr.shape[-1] for _, arr in tensors)
    if last == 0 or any(arr.shape[-1] not in (1, last) for _, arr in tensors):
        return None
    size = LONG_AXIS[int(rng.integers(0, len(LONG_AXIS)))]
    out = case
    for i, arr in tensors:
        if arr.shape[-1] == last:
            reps = -(-size // last)
            grown = np.concatenate([arr] * reps, axis=-1)[..., :size]
            out = _replace(out, i, np.ascontiguousarray(grown))
    return out


def _negative_axes(case, version, rng, frozen=frozenset()):
    attrs = dict(case.attributes)
    data = next((a for _, a in case.inputs if isinstance(a, np.ndarray)), None)
    rank = data.ndim if data is not None else 0
    changed = False
    for name in ("axis", "axes"):
        if name in frozen:
            continue
        value = attrs.get(name)
        if isinstance(value, int) and 0 <= value < rank:
            attrs[name], changed = value - rank, True
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, int) for v in value):
            attrs[name] = [v - rank if 0 <= v < rank else v for v in value]
            changed = changed or attrs[name] != list(value)
    if not changed:
        return None
    return dataclasses.replace(case, attributes=tuple(attrs.items()), siblings=0)


def _rank_six(case, version, rng, frozen=frozenset()):
    """Every input gains the same leading extents of 1 up to rank 6 (broadcasting is unchanged)."""
    tensors = [(i, case.inputs[i][1]) for i, _, _ in _elements(case, version, frozen)]
    if frozen or not tensors or any(arr.ndim != tensors[0][1].ndim for _, arr in tensors) or tensors[0][1].ndim >= 6:
        return None
    out = case
    for i, arr in tensors:
        out = _replace(out, i, arr.reshape((1,) * (6 - arr.ndim) + arr.shape))
    return out


MAX_ATTRIBUTE_VALUES = 8  # (attribute, value) pairs the sweep tries per binding


def _attribute_pairs(version) -> list[tuple[str, object]]:
    """(name, value) for every value of each flag (an int attribute defaulting to 0 or 1 that is
    not an axis) and each enumerated attribute of the version, in spec order, at most
    MAX_ATTRIBUTE_VALUES: count_include_pad 0/1, ceil_mode 0/1, Pad's four modes ..."""
    pairs: list[tuple[str, object]] = []
    for attr in version.attributes:
        if attr.name in TYPE_FIXING or "axis" in attr.name or "axes" in attr.name:
            continue
        values = attr.domain.values if attr.domain is not None and attr.domain.values is not None else None
        if values is not None and len(values) <= 5:
            pairs += [(attr.name, v) for v in values]
        elif values is None and attr.type == "int" and attr.default in (0, 1):
            pairs += [(attr.name, 0), (attr.name, 1)]
    return pairs[:MAX_ATTRIBUTE_VALUES]


def _attribute_value(case, version, rng, frozen=frozenset(), variant=None):
    """One flag or enumerated attribute at another of its values (variant: which pair of
    ``_attribute_pairs``); None when the case has that value already. Bugs that need two attribute
    values at once meet here: the drawn case brings one, the sweep the other."""
    pairs = _attribute_pairs(version)
    if not pairs:
        return None
    k = int(rng.integers(0, len(pairs))) if variant is None else variant
    if k >= len(pairs):
        return None
    name, value = pairs[k]
    given = dict(case.defaults)
    given.update(case.attributes)
    if name in frozen or given.get(name) == value:
        return None
    return with_attribute(case, name, value)


def _has_float(version) -> bool:
    return bool(_input_types(version) & set(FLOATS))


def _no_nan_rule(version) -> bool:
    return not any(rule.names & _NAN_NAMES for rule in parse_rules(version))


def _elementwise_shapes(version) -> bool:
    # ops whose inputs take any rank (no rank rule on any input): extra leading 1s are valid input
    return all(p.rank is None for p in version.inputs) and not version.family


def _has_axis(version) -> bool:
    return any(a.name in ("axis", "axes") and a.type in ("int", "ints") for a in version.attributes)


def _narrow_or_numeric_output(version) -> bool:
    """An output bound to a type parameter of its own that can be a floating-point type."""
    data = version.inputs[0].type if version.inputs else None
    for p in version.outputs:
        if p.type == data:
            continue
        tc = version.type_constraint(p.type)
        if {t[7:-1] for t in (tc.types if tc is not None else [p.type]) if t.startswith("tensor(")} & set(FLOATS):
            return True
    return False


def _narrow_output(version) -> bool:
    """An output bound to a type parameter of its own (Cast's T2, QuantizeLinear's T2) that can be
    a narrow type, from a floating-point input: a conversion that can saturate."""
    data = version.inputs[0].type if version.inputs else None
    outs = set()
    for p in version.outputs:
        if p.type == data:
            continue
        tc = version.type_constraint(p.type)
        outs |= {t[7:-1] for t in (tc.types if tc is not None else [p.type]) if t.startswith("tensor(")}
    return bool(outs & set(NARROW)) and _has_float(version)


STRATEGIES: tuple[EdgeStrategy, ...] = (
    EdgeStrategy("special values", "NaN, +-inf and +-0.0 at a quarter of the positions of one floating-point input",
                 lambda v: _has_float(v) and _no_nan_rule(v), _special_floats, on_values=True),
    EdgeStrategy("one NaN", "a single NaN at the first or the last position of one floating-point input (reductions "
                 "and arg ops that skip or propagate it by position)", lambda v: _has_float(v) and _no_nan_rule(v),
                 _one_nan, ("first", "last"), on_values=True),
    EdgeStrategy("subnormals", "one input made of subnormal values of either sign (CPUs that flush them to zero, "
                 "reciprocals that overflow)", lambda v: bool(_input_types(v) & {"float", "double", "float16",
                                                                                  "bfloat16"}), _subnormals, on_values=True),
    EdgeStrategy("numeric text", "a string input cast to a number holds the target's largest value, smallest normal "
                 "and smallest subnormal as text, either sign (parsers that report underflow as an error)",
                 lambda v: "string" in _input_types(v) and _narrow_or_numeric_output(v), _numeric_text,
                 on_values=True),
    EdgeStrategy("integer extremes", "INT_MIN, -1, 0 and 1 (and the maximum of an 8-bit type: a wider type's maximum "
                 "as a size would only ask for a huge output) at half the positions of one integer input", lambda v: bool(_input_types(v) & set(INT_RANGES)), _integer_extremes),
    EdgeStrategy("saturation edge", "inputs at the largest finite value of a narrower output type, half an ulp and one "
                 "ulp past it, twice it, and half its smallest normal (float8, 4-bit, 8-bit and half types)",
                 _narrow_output, _saturation_edge, on_values=True),
    EdgeStrategy("long last axis", "the last axis of the floating-point inputs tiled to 17, 33 or 67 elements (a "
                 "vectorized kernel's main loop and its remainder)", _has_float, _long_axis),
    EdgeStrategy("negative axes", "axis or axes attributes given as their negative equivalents", _has_axis,
                 _negative_axes),
    EdgeStrategy("rank 6", "every input raised to rank 6 with leading extents of 1", _elementwise_shapes, _rank_six),
    EdgeStrategy("attribute values", "each value of a flag or enumerated attribute (upper, largest, a mode ...) set "
                 "on the drawn cases that give the most other attributes: two attribute values at once",
                 lambda v: bool(_attribute_pairs(v)), _attribute_value, tuple(range(MAX_ATTRIBUTE_VALUES)),
                 sets_attributes=True),
    # relational edges (opkit.cases.relational_edges): derived from the version's rules and kernel
    EdgeStrategy("rule boundaries", "a comparison the version's rules state (k <= x.shape[axis], a crop within its "
                 "dimension, blocksize > 0) put at equality or one step either side where the rules allow it, by "
                 "moving one side: an int attribute, a value of a small integer input or an input extent",
                 has_relations, rule_boundary, (0, 1, 2), checked=True, max_bases=4),
    EdgeStrategy("operand at an extent", "an integer input value or int attribute (k, pads, starts, ends, repeats; "
                 "not an axis) set to an extent of another input or its negative, or one past it (a slice end past "
                 "the dimension, pads as large as it)", has_integer_operand, at_extent, ("equal", "past"),
                 checked=True, max_bases=4),
    EdgeStrategy("output extent 0 and 1", "one int attribute, integer input value or input extent moved so that an "
                 "extent of an output becomes 0 or 1 (a window as large as its padded input, a slice whose start "
                 "meets its end), found from the reference kernel's output shapes",
                 has_integer_operand, output_extent, ("0", "1"), checked=True, max_bases=2),
    EdgeStrategy("zero-size against broadcast", "an extent of 0 in one input against an extent of 1 at the same "
                 "axis of the others, or a leading extent of 0 the other inputs lack", broadcasts, zero_broadcast,
                 ("against 1", "against missing"), checked=True, max_bases=4),
    EdgeStrategy("stated conversions", "values where a conversion the text states changes: halfway between two "
                 "values of a narrower floating-point output type (round half to even), x.5 of either sign and the "
                 "floats next to small integers (a conversion to an integer type, a rounding op), and the values of "
                 "the scalar operands (Clip's min and max, a float attribute), their negatives and the floats next "
                 "to them; left out where the rules exclude them (Cast leaves a fractional value cast to an "
                 "integer undefined)", stated, conversion_edge, ("ties", "bounds"), on_values=True, max_bases=4),
)


def applicable(version, swept: bool = False) -> tuple[EdgeStrategy, ...]:
    """The edge strategies of the version, in a fixed order. A version whose family hook builds its
    cases draws none (they are valid by construction in ways an edge would undo, and random edges
    would waste its draws on discarded cases); with ``swept``, what the edge sweep applies to it:
    the strategies that change only floating-point values."""
    family = bool(getattr(version, "family", None))
    if family and not swept:
        return ()
    out = []
    for s in STRATEGIES:
        if family and not (s.on_values or s.checked):
            continue
        try:
            if s.applies(version):
                out.append(s)
        except Exception:  # noqa: BLE001 - a spec shape a predicate did not foresee: leave it out
            continue
    return tuple(out)


def apply_edge(name: str, case: Case, version, seed: int, frozen=frozenset(), variant=None) -> Case:
    """``case`` with the edge strategy ``name`` applied (the case itself when it does not fit).
    ``frozen`` names the inputs and attributes a family hook built valid by construction (RoiAlign's
    batch indices, Gather's indices): an edge leaves them alone, and changes no shape. ``variant``
    picks one of the strategy's ``variants`` (None: its own draw)."""
    strategy = next(s for s in STRATEGIES if s.name == name)
    extra = {} if variant is None else {"variant": variant}
    try:
        with np.errstate(all="ignore"):
            out = strategy.apply(case, version, np.random.default_rng(seed), frozenset(frozen), **extra)
    except (ValueError, TypeError, OverflowError, NotGeneratable):
        return case
    if out is None:
        return case
    label = name if variant is None else f"{name} ({variant})"
    # a strategy may say what its variant changed (the relational ones: "K[0]=4: k <= ... at equality")
    detail = out.edge if out.edge and out.edge != case.edge else ""
    return dataclasses.replace(out, edge=f"{label}: {detail}" if detail else label)


def sweep(bases, version, frozen=frozenset()) -> list[Case]:
    """Every applicable strategy, each variant once (one NaN at the first and at the last
    position), applied to the drawn valid cases ``bases`` in turn: the k-th to the k-th base, or to
    the next one it fits (negative axes need a case with an axis). Deterministic for given bases, so
    a binding's search meets every edge whatever share its seed happened to draw; a strategy that
    fits no base is left out. The largest bases go first: hypothesis draws its smallest cases first,
    and a NaN at the last position of a one-element tensor is at the first as well. A family
    hook's cases get only the strategies that change floating-point values: setting an attribute
    on them undoes what the hook built (Pad's reflect on pads the hook kept below the size for
    constant only, TopK's sorted=0 whose order the text leaves open)."""
    bases = sorted(bases, key=lambda c: -c.size())
    out: list[Case] = []
    if not bases:
        return out
    # an attribute value meets the others best on the cases that give the most of them
    rich = sorted(bases, key=lambda c: (-len(c.attributes), -c.size()))
    k = 0
    for strategy in applicable(version, swept=True):
        order = rich if strategy.sets_attributes else bases
        for variant in strategy.variants:
            for j in range(min(len(order), strategy.max_bases or len(order))):
                base = order[(k + j) % len(order)]
                edged = apply_edge(strategy.name, base, version, k, frozen, variant)
                if edged is not base:
                    out.append(edged)
                    break
            k += 1
    return out
