"""The deterministic fixed cases every run tries first (``edge_cases``), whatever a seed draws."""

from __future__ import annotations

from typing import Any

from ..core.onnx_types import INT_RANGES
from ..spec.model import OpSpec, OpVersion
from .bindings import bind_type_attributes
from .case import ABSENT, TYPE_FIXING, Case, NotGeneratable, make_case, param_elem
from .draws import cast, edge_values, fill, rank_range


def edge_cases(spec: OpSpec, version: OpVersion, binding: dict[str, str], limit: int = 64) -> list[Case]:
    """Fixed cases every run tries first (hypothesis' explicit examples): small canonical shapes,
    every edge value of each scalar integer input (Trilu's k = int64 min/max ...) crossed with every
    value of each attribute that has a value set. Deterministic, so expectations do not depend on
    what a seed happens to draw."""
    import itertools

    axes: list[list[tuple[str, str, Any]]] = []  # (kind, name, value)
    for attr in version.attributes:
        if attr.name in TYPE_FIXING:  # set from the binding (bind_type_attributes): another value mistypes the output
            continue
        if attr.domain is not None and attr.domain.values is not None and len(attr.domain.values) <= 4:
            axes.append([("attr", attr.name, ABSENT)] + [("attr", attr.name, v) for v in attr.domain.values])
    base_inputs: list[tuple[str, Any]] = []
    for p in version.inputs:
        try:
            elem = param_elem(p, binding)
        except NotGeneratable:
            return []
        lo, _ = rank_range(p.rank)
        rank = lo if p.rank is not None else 2
        shp = (2, 3)[-rank:] if rank <= 2 else (2,) * (rank - 2) + (2, 3)
        if rank == 0:
            shp = ()
        if p.option == "variadic":
            base_inputs.append((p.name, fill(elem, shp, "small", 0)))
            continue
        value = fill(elem, shp, "small", 0) if rank else cast([1 if elem != "string" else "a"], elem).reshape(())
        base_inputs.append((p.name, value))
        if rank == 0 and elem in INT_RANGES:
            axes.append([("input", p.name, v) for v in edge_values(elem)]
                        + ([("input", p.name, None)] if p.option == "optional" else []))
    out = []
    for combo in itertools.islice(itertools.product(*axes) if axes else [()], limit):
        attrs = bind_type_attributes(version, binding, {a.name: ABSENT for a in version.attributes})
        inputs = dict(base_inputs)
        for kind, name, value in combo:
            if kind == "attr":
                attrs[name] = value
            else:
                param = next(p for p in version.inputs if p.name == name)
                inputs[name] = None if value is None else cast([value], param_elem(param, binding)).reshape(())
        required_missing = [a for a in version.attributes if a.required and attrs.get(a.name) is ABSENT]
        if required_missing:
            continue
        items = list(inputs.items())
        while items and items[-1][1] is None:
            items.pop()
        out.append(make_case(spec, version, binding, attrs, items))
    return out
