"""Cases made from another case: its siblings (``expand``), the case under another type binding
(``recast``), with one attribute set (``with_attribute``) or with its attributes left to their defaults."""

from __future__ import annotations

import numpy as np

from ..core.onnx_types import INT_RANGES
from ..spec.model import OpVersion
from .bindings import bind_type_attributes
from .case import TYPE_FIXING, Case, NotGeneratable, input_parameter, param_elem
from .draws import MAX_DIM, MAX_RANK, VALUE_KINDS, cast, edge_values, fill


def recast(case: Case, version: OpVersion, binding: dict[str, str]) -> Case | None:
    """``case`` asked of another type binding: every tensor's values cast to the element type the
    binding gives its parameter (a crash found in uint8, asked again of int32), type attributes
    rebound. None when a value cannot be carried over (text to numbers, a sequence, a value the
    target type cannot hold such as NaN as an integer)."""
    import dataclasses

    inputs = []
    for name, value in case.inputs:
        if value is None:
            inputs.append((name, value))
            continue
        param = input_parameter(version, name)
        if param is None or not isinstance(value, np.ndarray):
            return None
        try:
            elem = param_elem(param, binding)
        except NotGeneratable:
            return None
        if (value.dtype.kind in "OUS") != (elem == "string"):
            return None
        try:
            if elem in INT_RANGES and value.dtype.kind in "fcV":
                if not np.all(np.isfinite(value.astype(np.float64))):
                    return None
                value = np.trunc(value.astype(np.float64))
            with np.errstate(all="ignore"):
                new = cast(value.reshape(-1).tolist(), elem).reshape(value.shape)
        except (ValueError, TypeError, OverflowError):
            return None
        inputs.append((name, new))
    attrs = bind_type_attributes(version, binding, dict(case.attributes))
    return dataclasses.replace(case, types=tuple(sorted(binding.items())), inputs=tuple(inputs),
                               attributes=tuple(attrs.items()), siblings=0)


def with_attribute(case: Case, name: str, value) -> Case:
    """``case`` with attribute ``name`` set to ``value`` (given, no longer a default)."""
    import dataclasses

    attributes = dict(case.attributes)
    attributes[name] = value
    defaults = tuple((k, v) for k, v in case.defaults if k != name)
    return dataclasses.replace(case, attributes=tuple(sorted(attributes.items())), defaults=defaults, siblings=0)


def with_default_attributes(case: Case, version: OpVersion) -> Case | None:
    """``case`` with every optional attribute left out (its default), the required ones and those
    naming an output type kept; None when it has none to leave out."""
    import dataclasses

    keep = {a.name for a in version.attributes if a.required or a.name in TYPE_FIXING}
    given = tuple((k, v) for k, v in case.attributes if k in keep)
    if len(given) == len(case.attributes):
        return None
    defaults = tuple((a.name, a.default) for a in version.attributes if a.has_default and a.name not in dict(given))
    return dataclasses.replace(case, attributes=given, defaults=defaults, siblings=0)


def expand(case: Case, version: OpVersion) -> list[Case]:
    """The case followed by its siblings: same types, attributes and input presence (all graph
    inputs), new shapes of the same ranks and new values, drawn with NumPy from ``sibling_seed``."""
    out = [case]
    if not case.siblings:
        return out
    import dataclasses

    rng = np.random.default_rng(case.sibling_seed)
    binding = case.type_map
    for _ in range(case.siblings):
        dims = rng.integers(0, MAX_DIM + 1, MAX_RANK).tolist()
        inputs = []
        for name, arr in case.inputs:
            if arr is None:
                inputs.append((name, None))
                continue
            elem = param_elem(input_parameter(version, name), binding)
            rank = arr.ndim
            if rank == 0:
                if elem in INT_RANGES:
                    lo, hi = INT_RANGES[elem]
                    pool = edge_values(elem) + list(range(max(lo, -6), min(hi, 6) + 1))
                    value = cast([pool[int(rng.integers(0, len(pool)))]], elem).reshape(())
                else:
                    value = fill(elem, (), VALUE_KINDS[int(rng.integers(0, 3))], int(rng.integers(0, 2**32)))
                inputs.append((name, value))
                continue
            shp = [d if arr.shape[i] != 1 or len(case.inputs) == 1 else 1
                   for i, d in enumerate(dims[MAX_RANK - rank:] if rank <= MAX_RANK else
                                         [1] * (rank - MAX_RANK) + dims)]
            inputs.append((name, fill(elem, tuple(shp), VALUE_KINDS[int(rng.integers(0, 3))],
                                      int(rng.integers(0, 2**32)))))
        out.append(dataclasses.replace(case, inputs=tuple(inputs), initializers=frozenset(), siblings=0,
                                       sibling_seed=0))
    return out
