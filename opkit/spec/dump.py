"""``OpSpec`` -> YAML text: the inverse of the loader, deterministic, defaults left out.

Key order follows ``fields.OBJECTS`` so every spec file reads the same way; multi-line text is
written as literal blocks and tensor values as flow lists, so a spec diff reads like the change.
"""

from __future__ import annotations

from typing import Any

import yaml

from .fields import OBJECTS
from .model import Attribute, ContainerValue, Example, FormalParameter, OpSpec, OpVersion, RankRule, TensorValue
from ..core.onnx_types import INFINITE_ARITY


class _Flow(list):
    """A list dumped in flow style: [1, 2, 3]."""


class _Dumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, data: str):
    if any(c in data for c in "\x85\u2028\u2029"):  # YAML line breaks: keep them escaped
        style = '"'
    else:
        style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def _represent_flow(dumper: yaml.SafeDumper, data: _Flow):
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(_Flow, _represent_flow)
_Dumper.ignore_aliases = lambda self, data: True  # type: ignore[method-assign]


def _flow(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return _Flow(_flow(v) for v in value)
    return value


def _drop_defaults(obj_name: str, values: dict[str, Any]) -> dict[str, Any]:
    """Keep keys in field-table order, omitting empty values and values equal to the default."""
    out: dict[str, Any] = {}
    for key, spec in OBJECTS[obj_name].items():
        if key not in values:
            continue
        value = values[key]
        if value is None or value == "" or (isinstance(value, (list, tuple, dict)) and not value):
            continue
        if spec.default is not None and value == spec.default and not spec.required:
            continue
        out[key] = value
    return out


def _rank(rank: RankRule) -> Any:
    if rank.max == rank.min:
        return rank.min
    out = {"min": rank.min}
    if rank.max is not None:
        out["max"] = rank.max
    return out


def _param(p: FormalParameter) -> dict[str, Any]:
    values = {"name": p.name, "type": p.type, "doc": p.doc, "option": p.option,
              "differentiable": p.differentiable, "rank": _rank(p.rank) if p.rank else None}
    if p.option == "variadic":
        values["homogeneous"] = p.homogeneous
        values["min_arity"] = p.min_arity
    return _drop_defaults("Parameter", values)


def _attribute(a: Attribute) -> dict[str, Any]:
    values: dict[str, Any] = {"type": a.type, "doc": a.doc, "required": a.required,
                              "default": _flow(a.default) if isinstance(a.default, (list, tuple)) else a.default}
    if a.domain is not None:
        values.update(values=_flow(a.domain.values) if a.domain.values is not None else None,
                      min=a.domain.min, max=a.domain.max)
    values["element_type"] = a.element_type
    out = _drop_defaults("Attribute", values)
    if a.default is not None:  # a default equal to the field's own default must still be written
        out["default"] = values["default"]
        out = {k: out[k] for k in OBJECTS["Attribute"] if k in out}
    return out


def _tensor(t: TensorValue) -> dict[str, Any]:
    out: dict[str, Any] = {"dtype": t.dtype}
    if 0 in t.shape or not t.shape and isinstance(t.value, tuple):
        out["shape"] = _Flow(t.shape)
    out["value"] = _flow(t.value)
    return out


def _argument(value: TensorValue | ContainerValue | tuple | None) -> Any:
    if value is None:
        return None
    if isinstance(value, tuple):  # a variadic parameter's arguments
        return [_argument(v) for v in value]
    if isinstance(value, ContainerValue):
        if value.type.startswith("map("):
            return {"type": value.type, "map": [list(p) for p in value.items]}
        if value.type.startswith("seq("):
            return {"type": value.type, "sequence": [_argument(v) for v in value.items]}
        return {"type": value.type, "optional": _argument(value.items[0]) if value.items else None}
    return _tensor(value)


def _example(e: Example) -> dict[str, Any]:
    values = {
        "name": e.name, "doc": e.doc, "source": e.source,
        "attributes": {k: _flow(v) for k, v in e.attributes},
        "inputs": {k: _argument(v) for k, v in e.inputs},
        "outputs": {k: _argument(v) for k, v in e.outputs},
        "rtol": e.rtol, "atol": e.atol,
    }
    out = _drop_defaults("Example", values)
    if any(v is None for _, v in e.inputs):  # explicit nulls matter: an optional input left empty
        out["inputs"] = values["inputs"]
    return out


def _arity(r: tuple[int, int] | None) -> Any:
    if r is None:
        return None
    return _Flow("inf" if v == INFINITE_ARITY else v for v in r)


def _version(v: OpVersion) -> dict[str, Any]:
    values: dict[str, Any] = {
        "since": v.since, "support_level": v.support_level, "deprecated": v.deprecated, "doc": v.doc,
        "attributes": {a.name: _attribute(a) for a in v.attributes},
        "inputs": [_param(p) for p in v.inputs],
        "outputs": [_param(p) for p in v.outputs],
        "type_constraints": {
            t.name: _drop_defaults("TypeConstraint", {"types": _Flow(t.types), "doc": t.doc})
            for t in v.type_constraints
        },
        "input_range": _arity(v.input_range), "output_range": _arity(v.output_range),
        "function": {f.opset: f.text for f in v.function},
        "context_dependent_function": _Flow(v.context_dependent_function),
        "shape_inference": v.shape_inference, "data_propagation": v.data_propagation,
        "determinism": v.determinism, "changes": v.changes, "semantics": v.semantics, "family": v.family,
        "rules": [_drop_defaults("Rule", {"label": r.label, "holds": r.holds, "doc": r.doc}) for r in v.rules],
        "kernel": _kernel(v),
        "properties": [_drop_defaults("Property", {"name": p.name, "holds": p.holds, "types": p.types,
                                                   "doc": p.doc}) for p in v.properties],
        "lowerings": [_drop_defaults("Lowering", {"name": lo.name, "to": lo.to, "python": lo.python,
                                                  "doc": lo.doc}) for lo in v.lowerings],
        "tolerances": {t.dtype: {"rtol": t.rtol, "atol": t.atol} for t in v.tolerances},
        "examples": [_example(e) for e in v.examples],
        "accuracy": v.accuracy,
        "tolerance": _approximation(v),
    }
    out = _drop_defaults("Version", values)
    out["since"] = v.since
    return {k: out[k] for k in OBJECTS["Version"] if k in out}


def _approximation(v: OpVersion) -> dict[str, Any] | None:
    t = v.tolerance
    if t is None:
        return None
    return _drop_defaults("Approximation", {"ulps": t.ulps, "rtol": t.rtol, "atol": t.atol, "doc": t.doc})


def _kernel(v: OpVersion) -> dict[str, Any] | None:
    k = v.kernel
    if k is None:
        return None
    return _drop_defaults("Kernel", {"template": k.template, "params": {n: _flow(p) for n, p in k.params},
                                     "python": k.python, "same_as": k.same_as})


def spec_to_data(spec: OpSpec) -> dict[str, Any]:
    return _drop_defaults("Spec", {
        "op": spec.name, "domain": spec.domain, "source": dict(spec.source), "doc": spec.doc,
        "versions": [_version(v) for v in spec.versions],
    })


def dump_spec(spec: OpSpec) -> str:
    """The YAML text of a spec; loading it gives back an equal model."""
    return yaml.dump(spec_to_data(spec), Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     width=100, default_flow_style=False)
