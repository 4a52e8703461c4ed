"""The case generator: the one strategy ``opkit test``, the generated tests and the pytest plugin
draw cases from.

Order of the steps, each constrained by what came before:

1. the type binding (pinned by the caller or drawn from the type constraints);
2. the family hook named by the spec's ``family:`` (``opkit.cases.families``), which builds the
   attributes and inputs its family knows how to make valid;
3. ranks and shapes of the remaining inputs, from the rank plan ONNX inference accepts for the
   binding (``opkit.cases.ranks``) and the spec's ``rank:`` rules;
4. the remaining attributes, with ``axis``/``axes`` drawn within the rank of the data input;
5. tensor values (small integers, random values, edge values).

The final check (reference kernel and ONNX inference) stays in the runner; how often it still
rejects a drawn case is measured per op (``benchmarks/case_validity.py``).
"""

from __future__ import annotations

import functools

import numpy as np
from dataclasses import dataclass
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st

from ..spec.model import OpSpec, OpVersion, RankRule
from .bindings import bind_type_attributes, bindable_types, type_binding
from .case import (
    ABSENT,
    TYPE_ATTRIBUTES,
    Case,
    NotGeneratable,
    input_parameter,
    param_elem,
    variadic_arguments,
)
from .draws import _BOOL, _DIMS, _FEED, _SEED, _draw_tensor, _ints, _pick, attribute
from .memo import cache_by_identity
from ..core.values import is_container_type
from .containers import draw_value, generic_tensors
from .context import Context, Draft, distinct_axes
from .edges import EDGE_CHANCE, applicable, apply_edge
from .families import hook_for

# attributes whose valid values depend on the data input's rank, drawn after the inputs
AXIS_ATTRIBUTES = ("axis", "axes")


@functools.lru_cache(maxsize=None)
def _exact_rank(rank: int) -> RankRule:
    return RankRule(rank, rank)


@cache_by_identity
def _plan(spec: OpSpec, version: OpVersion, types_key: tuple):
    """Prebuilt strategies (building strategies per draw is what makes hypothesis slow)."""
    binding = type_binding(version, dict(types_key) if types_key else None)
    hook = hook_for(version.family)
    attrs = {}
    for a in version.attributes:
        if a.name in TYPE_ATTRIBUTES:
            attrs[a.name] = st.just(ABSENT)
        elif _rank_dependent(a):
            attrs[a.name] = None  # drawn once the inputs are known
        else:
            try:
                attrs[a.name] = attribute(a)
            except NotGeneratable as exc:
                if hook is None:
                    raise
                attrs[a.name] = _HookOnly(str(exc))  # the family hook must set it (Einsum's equation)
    broadcast = len([p for p in version.inputs if p.option != "variadic"]) > 1
    return binding, attrs, broadcast, hook


@dataclass(frozen=True)
class _HookOnly:
    """An attribute only the family hook can draw."""

    why: str


def _rank_dependent(attr) -> bool:
    dom = attr.domain
    if attr.name not in AXIS_ATTRIBUTES or (dom is not None and dom.values is not None):
        return False
    return (attr.name == "axis" and attr.type == "int") or (attr.name == "axes" and attr.type == "ints")


def _rank_plan(spec: OpSpec, version: OpVersion, binding: dict):
    try:
        from .ranks import rank_plan
    except ImportError:  # onnx is not installed: independent draws
        return None
    return rank_plan(spec.name, spec.domain, version, tuple(sorted(binding.items())))


def _axis_value(draw, attr, rank: int) -> Any:
    """``axis`` within [-rank, rank-1] (or the spec's min/max when they are tighter), ``axes`` a
    set of distinct axes; absent when the attribute is optional and the draw says so."""
    if not attr.required and draw(_BOOL):
        return ABSENT
    if attr.name == "axes":
        return distinct_axes(draw, rank, min_size=1)
    lo, hi = -rank, rank - 1
    dom = attr.domain
    if dom is not None:
        lo = max(lo, int(dom.min)) if dom.min is not None else lo
        hi = min(hi, int(dom.max)) if dom.max is not None else hi
    if hi < lo:
        return ABSENT if not attr.required else 0
    return draw(_ints(lo, hi))


@st.composite
def cases(draw, spec: OpSpec, version: OpVersion, types: dict[str, Any] | None = None,
          initializers: bool = True, siblings: int = 0, ranks: tuple | None = None,
          pinned: dict[str, Any] | None = None, pin_hooks: bool = False) -> Case:
    """A case of ``version`` of ``spec``; ``types`` pins type parameters (a type string or a list).

    ``pinned`` (attribute -> value, ABSENT for "left off, the default applies") sets those
    attributes instead of drawing them (a row of ``opkit.cases.covering``); where the family hook
    sets one itself, a draw whose value differs from the pin is rejected (``hypothesis.reject``),
    or with ``pin_hooks`` set to the pin all the same (the case may then break what the hook made
    valid by construction: the caller checks it, as every drawn case is checked).

    ``siblings`` > 0 lets the case carry up to that many derived cases (``opkit.cases.derived.expand``),
    run through the same session. ``ranks`` overrides the rank plan (one rank per formal input,
    -1 for an absent optional input); by default it is learned from ONNX inference."""
    types_key = tuple(sorted((k, v if isinstance(v, str) else tuple(v)) for k, v in (types or {}).items()))
    binding_st, attr_sts, broadcast, hook = _plan(spec, version, types_key)
    binding = draw(binding_st)
    draft = hook(draw, Context(spec, version, binding)) if hook is not None else Draft()

    inputs = _draw_inputs(draw, spec, version, binding, draft, ranks, broadcast)
    data_rank = next((getattr(a, "ndim", 0) for _, a in inputs if a is not None), 0)
    attrs: dict[str, Any] = {}
    for a in version.attributes:
        if a.name in draft.attributes:
            attrs[a.name] = draft.attributes[a.name]
            if pinned and a.name in pinned and not _pin_holds(a, attrs[a.name], pinned[a.name]):
                if not pin_hooks:
                    reject()
                attrs[a.name] = pinned[a.name]
        elif pinned and a.name in pinned:
            attrs[a.name] = pinned[a.name]
        elif attr_sts[a.name] is None:
            attrs[a.name] = _axis_value(draw, a, data_rank)
        elif isinstance(attr_sts[a.name], _HookOnly):
            raise NotGeneratable(f"the {version.family} hook did not set attribute {a.name!r}: {attr_sts[a.name].why}")
        else:
            attrs[a.name] = draw(attr_sts[a.name])
    attrs = bind_type_attributes(version, binding, attrs)

    containers = {name for name, _ in inputs if _container_param(version, binding, name)}
    inits = set()
    if initializers:
        for name, arr in inputs:
            if arr is not None and name not in containers and draw(_FEED) == 7:
                inits.add(name)  # an initializer is a tensor: sequences and optionals are always fed
    given = tuple((k, v) for k, v in attrs.items() if v is not ABSENT)
    given_names = {k for k, _ in given}
    defaults = tuple((a.name, a.default) for a in version.attributes if a.has_default and a.name not in given_names)
    n_sib = draw(_ints(0, siblings)) if siblings and _siblings_apply(draft) and not containers else 0
    sib_seed = draw(_SEED) if n_sib else 0
    case = Case(spec.domain, spec.name, version.since, tuple(sorted(binding.items())), given, tuple(inputs),
                frozenset(inits), defaults, n_sib, sib_seed, draft.n_outputs)
    return _with_edge(draw, case, version, draft, containers, frozenset(pinned) if pinned else frozenset())


def _pin_holds(attr, value: Any, pin: Any) -> bool:
    """Whether a value the family hook set is the pinned one (left off and the default are the same)."""
    if value is ABSENT:
        value = attr.default
    if pin is ABSENT:
        pin = attr.default
    return type(value) is type(pin) and value == pin or (
        isinstance(value, (int, float)) and isinstance(pin, (int, float)) and value == pin)


def _draw_inputs(draw, spec: OpSpec, version: OpVersion, binding: dict, draft: Draft, ranks: tuple | None,
                 broadcast: bool) -> list[tuple[str, Any]]:
    """The case's inputs: those the family hook built, the rest drawn from the rank plan."""
    inputs: list[tuple[str, Any]] = []
    if len(draft.inputs) < len(version.inputs):
        plan = ranks if ranks is not None else _rank_plan(spec, version, binding)
        choice = draw(_pick(plan)) if plan else None
        dims = draw(_DIMS)
    for i, p in enumerate(version.inputs):
        if p.name in draft.inputs:
            given = draft.inputs[p.name]
            if p.option == "variadic" and isinstance(given, (list, tuple)):  # several values, named as expand() does
                inputs += variadic_arguments(p.name, given)
            else:
                inputs.append((p.name, given))
            continue
        bound = binding.get(p.type, p.type)
        if is_container_type(bound):  # a sequence or optional (Identity's V = seq(tensor(float)) ...)
            absent = p.option == "optional" and draw(_BOOL)
            inputs.append((p.name, None if absent else draw_value(draw, bound, generic_tensors(draw, dims, p.rank))))
            continue
        elem = param_elem(p, binding)
        if choice is not None and p.option != "variadic":
            r = choice[i]
            inputs.append((p.name, None if r < 0 else _draw_tensor(draw, elem, dims, _exact_rank(r), broadcast)))
        elif p.option == "optional":
            inputs.append((p.name, _draw_tensor(draw, elem, dims, p.rank, broadcast) if draw(_BOOL) else None))
        elif p.option == "variadic":
            count = draw(_ints(max(1, p.min_arity), max(1, p.min_arity) + 2))
            inputs += variadic_arguments(p.name, [_draw_tensor(draw, elem, dims, p.rank, broadcast)
                                                  for _ in range(count)])
        else:
            inputs.append((p.name, _draw_tensor(draw, elem, dims, p.rank, broadcast)))
    return inputs


def _with_edge(draw, case: Case, version: OpVersion, draft: Draft, containers: set,
               pinned: frozenset = frozenset()) -> Case:
    """``case``, or for a fixed share of the draws ``case`` with one targeted edge strategy applied
    (it leaves the ``pinned`` attributes alone)."""
    # a family hook builds inputs valid in ways only it knows (RoiAlign's batch indices, the
    # ranges BatchNormalization's rules ask for): its versions keep their cases as built
    edges = _edges(version) if not version.family else ()
    if edges and not containers:
        # a fixed share of the draws gets one targeted edge strategy. The choice comes from a
        # generator seeded by one drawn number, not from hypothesis's own small integers (biased
        # to their bounds, they would not keep the share); seed 0, where shrinking goes, is a
        # plain case, so a minimal failure keeps its edge only when it needs it
        rng = np.random.default_rng(draw(_SEED))
        if rng.random() < EDGE_CHANCE:
            case = apply_edge(edges[int(rng.integers(0, len(edges)))], case, version, int(rng.integers(0, 2**32)),
                              frozenset(draft.inputs) | frozenset(draft.attributes) | pinned)
    return case


@cache_by_identity
def _edges(version: OpVersion) -> tuple[str, ...]:
    return tuple(s.name for s in applicable(version))


def _container_param(version: OpVersion, binding: dict, name: str) -> bool:
    """Whether the formal input ``name`` (or the variadic input it is a copy of) is bound to a
    sequence or optional type (OptionalGetElement's O = optional(tensor(float)) holds an array)."""
    param = input_parameter(version, name)
    return param is not None and is_container_type(binding.get(param.type, param.type))


def _siblings_apply(draft: Draft) -> bool:
    """Siblings redraw shapes freely, which would undo what a family hook made consistent: only a
    case the hook left entirely to the generic steps (Cast of a non-string input) gets them (and
    only when every input is a tensor: siblings redraw tensors)."""
    return not draft.inputs and not draft.attributes and not draft.n_outputs


def generatable(spec: OpSpec, version: OpVersion) -> str | None:
    """None when cases can be drawn for the version, else why not (a graph attribute, a map
    input, a required attribute without a strategy ...)."""
    try:
        _plan(spec, version, ())
        for p in version.inputs:
            if "(" in p.type and not bindable_types([p.type]):
                raise NotGeneratable(f"input {p.name} has type {p.type}, which opkit cannot generate")
    except NotGeneratable as exc:
        return str(exc)
    return None


def clear_caches() -> None:
    _plan.cache_clear()


__all__ = ["cases", "generatable", "clear_caches"]
