"""Type bindings: one ONNX type per type parameter. What a constraint can bind, linked
parameters, the drawn binding (``type_binding``), the enumerators a run walks (all, covering,
pairwise and probe bindings) and the type attributes a binding fixes (``bind_type_attributes``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..core.dtypes import NUMPY_DTYPES, elem_of
from ..core.onnx_types import tensor_element
from ..core.values import element_of, is_map_type, map_types
from ..spec.model import OpVersion
from ..spec.type_links import TypeLink
from ..spec.type_rules import binding_violation, type_rules
from .case import TYPE_ATTRIBUTES, TYPE_SWITCHES, NotGeneratable
from .draws import ScalarSeed
from .memo import cache_by_identity


def tensor_types(types) -> list[str]:
    """The plain tensor types of a constraint that NumPy can hold (seq/map/optional are left out)."""
    out = []
    for t in types:
        elem = tensor_element(t)
        if elem is not None and NUMPY_DTYPES.get(elem) is not None:
            out.append(t)
    return out


def bindable_types(types) -> list[str]:
    """The types of a constraint opkit can draw values of: plain tensors NumPy can hold, maps with
    int64 or string keys of such values, sequences of either, and optionals of those
    (``opkit.core.values`` says how they are held). Sparse tensors are left out."""
    out = []
    for t in types:
        inner = t[len("optional("):-1] if t.startswith("optional(") else t
        inner = inner[len("seq("):-1] if inner.startswith("seq(") else inner
        if is_map_type(inner):
            key, value = map_types(inner)
            if key in ("int64", "string") and tensor_types([f"tensor({value})"]):
                out.append(t)
        elif tensor_types([inner]):
            out.append(t)
    return out


@dataclass(frozen=True)
class MapValueLink(TypeLink):
    """A tensor parameter that is the value type of a map parameter (DictVectorizer's T2 is the
    tensor of what its input map T1 holds: ``map(string, double)`` gives ``tensor(double)``)."""

    def apply(self, type_str: str) -> str | None:
        return f"tensor({map_types(type_str)[1]})" if is_map_type(type_str) else None


def map_value_links(pools: dict[str, list[str]], taken: set) -> tuple:
    """``MapValueLink``s where a tensor parameter's types are exactly the value types of a map
    parameter's types (as ``opkit.spec.type_links`` links a sequence to its element). CastMap's T2
    (string, float, int64) is not the image of T1's (string, float), so it stays free: its
    ``cast_to`` attribute picks it."""
    links = []
    for source, src in pools.items():
        if not src or not all(is_map_type(t) for t in src):
            continue
        images = {f"tensor({map_types(t)[1]})" for t in src}
        for derived, dst in pools.items():
            if derived != source and derived not in taken and dst and set(dst) == images:
                links.append(MapValueLink(derived, source, "map_value"))
                taken.add(derived)
    return tuple(links)


_LINKS: dict[int, tuple] = {}  # id(version) -> (version, links); the version is kept so its id stays its own


def type_links(version: OpVersion) -> tuple:
    """Parameters bound from another one (SequenceAt's T is the tensor type its S holds), see
    ``opkit.spec.type_links``: drawn bindings never pair a sequence with another element type."""
    hit = _LINKS.get(id(version))
    if hit is None or hit[0] is not version:
        from ..spec.type_links import find_links

        pools = {n: bindable_types(version.type_constraint(n).types) for n in used_type_params(version)}
        links = find_links(version, pools)
        links += map_value_links(pools, {link.derived for link in links} | {link.source for link in links})
        hit = _LINKS[id(version)] = (version, links)
    return hit[1]


def with_linked(binding: dict, links: tuple) -> dict:
    """``binding`` with every linked parameter set from its source."""
    if not links:
        return binding
    out = dict(binding)
    for link in links:
        if link.source in out:
            out[link.derived] = link.apply(out[link.source])
    return out


def used_type_params(version: OpVersion) -> list[str]:
    names = {p.type for p in version.inputs + version.outputs}
    return [tc.name for tc in version.type_constraints if tc.name in names]


def type_binding(version: OpVersion, only: dict[str, Any] | None = None) -> st.SearchStrategy[dict]:
    """One ONNX type string per type parameter; ``only`` pins parameters (a string or a list)."""
    parts = {}
    links = type_links(version)
    derived = {link.derived for link in links}
    for name in used_type_params(version):
        if name in derived:
            continue  # set from its source below
        choices = bindable_types(version.type_constraint(name).types)
        pinned = (only or {}).get(name)
        if pinned is not None:
            pinned = [pinned] if isinstance(pinned, str) else list(pinned)
            choices = [t for t in choices if t in pinned]
        for link in links:  # a pinned derived parameter narrows its source (T=tensor(float): S=seq(tensor(float)))
            if link.source == name and (only or {}).get(link.derived) is not None:
                choices = [t for t in choices if link.apply(t) in _pinned(only, link.derived, "")]
        if not choices:
            raise NotGeneratable(f"type parameter {name} has no type opkit can generate"
                                 + (" (pinned)" if only and (name in only or derived & set(only)) else ""))
        parts[name] = st.sampled_from(choices)
    if not type_rules(version):
        drawn = st.fixed_dictionaries(parts)
        return drawn.map(functools.partial(with_linked, links=links)) if links else drawn
    # rules that exclude bindings (RMSNormalization's T == V): draw among the allowed ones only
    allowed = [b for b in all_bindings(version) if all(b[k] in _pinned(only, k, b[k]) for k in b)]
    if not allowed:
        raise NotGeneratable(f"no type binding satisfies {', '.join(r.label for r in type_rules(version))}")
    return st.sampled_from(allowed)


def _pinned(only: dict[str, Any] | None, name: str, default: str) -> list[str]:
    pinned = (only or {}).get(name)
    if pinned is None:
        return [default]
    return [pinned] if isinstance(pinned, str) else list(pinned)


def all_bindings(version: OpVersion) -> list[dict[str, str]]:
    """Every combination of allowed tensor types, one dict per binding, in schema order."""
    return [dict(b) for b in _all_bindings(version)]


@cache_by_identity
def _all_bindings(version: OpVersion) -> tuple[dict[str, str], ...]:
    import itertools

    names, pools = _free_pools(version)
    combos = (with_linked(dict(zip(names, combo)), type_links(version)) for combo in itertools.product(*pools))
    return tuple(b for b in combos if binding_violation(version, b) is None)


def _free_pools(version: OpVersion) -> tuple[list[str], list[list[str]]]:
    """The parameters drawn on their own (not linked to another one) and their bindable types."""
    derived = {link.derived for link in type_links(version)}
    names = [n for n in used_type_params(version) if n not in derived]
    return names, [bindable_types(version.type_constraint(n).types) for n in names]


MAX_BINDINGS = 64


def covering_bindings(version: OpVersion, limit: int | None = MAX_BINDINGS) -> list[dict[str, str]]:
    """``all_bindings`` when there are at most ``limit``; otherwise a deterministic subset in which
    every allowed type of every type parameter still occurs (each-choice coverage), topped up with
    evenly spaced bindings of the full product. Cast's 400 (T1, T2) pairs per version become 64."""
    full = all_bindings(version)
    if not limit or len(full) <= limit:
        return full
    names, pools = _free_pools(version)
    chosen: list[dict[str, str]] = []
    seen: set = set()
    width = max(len(p) for p in pools)
    for i in range(width):  # each-choice: row i takes the i-th type of every parameter (wrapping)
        b = with_linked({n: pool[(i + j) % len(pool)] for j, (n, pool) in enumerate(zip(names, pools))},
                        type_links(version))
        key = tuple(sorted(b.items()))
        if key not in seen and binding_violation(version, b) is None:
            seen.add(key)
            chosen.append(b)
    step = max(1, len(full) // max(1, limit - len(chosen)))
    for b in full[::step]:
        if len(chosen) >= max(limit, width):
            break
        key = tuple(sorted(b.items()))
        if key not in seen:
            seen.add(key)
            chosen.append(b)
    order = {tuple(sorted(b.items())): i for i, b in enumerate(full)}
    return sorted(chosen, key=lambda b: order[tuple(sorted(b.items()))])


PROBE_LIMIT = 700  # op versions with at most this many bindings have every one of them tested


@cache_by_identity
def pairwise_bindings(version: OpVersion) -> list[dict[str, str]]:
    """A small set of bindings in which every pair of types of every two type parameters that some
    valid binding has occurs at least once (greedy: each step takes the binding that covers most
    pairs not yet covered; ties go to schema order, so the set is deterministic). OneHot-9's 1,815
    (indices, depth, values) bindings need about 170."""
    import itertools

    full = all_bindings(version)
    names, _ = _free_pools(version)
    if len(names) < 2:
        return tuple(full)

    def pairs(b: dict) -> set:
        return {(i, b[names[i]], j, b[names[j]]) for i, j in itertools.combinations(range(len(names)), 2)}

    covers = [pairs(b) for b in full]
    uncovered = set().union(*covers) if covers else set()
    chosen: list[int] = []
    while uncovered:
        best = max(range(len(full)), key=lambda k: (len(covers[k] & uncovered), -k))
        chosen.append(best)
        uncovered -= covers[best]
    return tuple(full[k] for k in sorted(chosen))


def probe_bindings(version: OpVersion, searched: list[dict[str, str]],
                   limit: int | None = PROBE_LIMIT) -> list[dict[str, str]]:
    """The bindings a run probes with a few examples besides the ``searched`` ones (the covering
    subset that gets the full search): all the others when the version has at most ``limit``
    bindings (a missing type registration is often one pair: Cast of bfloat16 to int4), else those
    of a pairwise covering set; none when ``limit`` is 0."""
    if not limit:
        return []
    full = all_bindings(version)
    pool = full if len(full) <= limit else [dict(b) for b in pairwise_bindings(version)]
    seen = {tuple(sorted(b.items())) for b in searched}
    return [b for b in pool if tuple(sorted(b.items())) not in seen]


def bind_type_attributes(version: OpVersion, binding: dict[str, str], attrs: dict[str, Any]) -> dict[str, Any]:
    """Attributes that name an output's element type (Cast's ``to``, EyeLike's ``dtype`` ...) must
    agree with the drawn type binding: set them from the binding of the output's type parameter.
    Tensor attributes typed by a type parameter become 0-D tensors of its bound type."""
    if any(isinstance(v, ScalarSeed) for v in attrs.values()):
        attrs = dict(attrs)
        for attr in version.attributes:
            seed = attrs.get(attr.name)
            if isinstance(seed, ScalarSeed) and attr.element_type in binding:
                dtype = NUMPY_DTYPES[elem_of(binding[attr.element_type])]
                value = abs(seed.value) if np.dtype(dtype).kind in "ub" else seed.value
                attrs[attr.name] = np.asarray(value, dtype=np.int64).astype(dtype)
    out_params = [p.type for p in version.outputs if p.type in binding]
    if not out_params:
        return attrs
    elem = element_of(binding[out_params[0]]) or elem_of(binding[out_params[0]])  # SequenceEmpty's dtype: what S holds
    from ..core.onnx_types import ELEMENT_TYPE_CODES

    attrs = dict(attrs)
    for attr in version.attributes:
        if attr.name in TYPE_ATTRIBUTES and attr.type in ("int", "string"):
            attrs[attr.name] = ELEMENT_TYPE_CODES[elem] if attr.type == "int" else elem.upper()
        elif attr.name in TYPE_SWITCHES and binding[out_params[0]] in TYPE_SWITCHES[attr.name]:
            attrs[attr.name] = TYPE_SWITCHES[attr.name][binding[out_params[0]]]
    return attrs
