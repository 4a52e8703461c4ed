"""onnx.defs OpSchema -> OpSpec models (``opkit import onnx``).

Every field OpSchema exposes is carried over, so the specs can re-render ONNX's own Changelog.md.
The ONNX schema text is data (Apache-2.0, the ONNX Project Contributors); see the README.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ..spec.model import Attribute, FormalParameter, FunctionBody, OpSpec, OpVersion, TypeConstraint, derived_range
from ..core.onnx_types import DEFAULT_DOMAIN


def float32_literal(value: float) -> float:
    """The shortest decimal that reads back as the same float32 (0.0001, not 9.9999997e-05).

    ONNX stores float attributes as float32; keeping the short literal makes specs readable and
    converting back through float32 gives the exact ONNX value.
    """
    return float(str(np.float32(value)))


def _attr_type(attr_type: Any) -> str:
    return str(attr_type).rsplit(".", 1)[-1].lower()


def _default(attr: Any, atype: str, default_proto: Any) -> Any:
    """Python value of an OpSchema attribute default, or None when it has none."""
    from onnx import helper

    if not default_proto.name:
        return None
    value = helper.get_attribute_value(default_proto)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, list):
        return [v.decode("utf-8") if isinstance(v, bytes) else (float32_literal(v) if atype == "floats" else v)
                for v in value]
    if atype == "float":
        return float32_literal(value)
    return value


def _differentiable(category: Any) -> bool | None:
    name = str(category).rsplit(".", 1)[-1]
    return {"Differentiable": True, "NonDifferentiable": False}.get(name)


def _param(p: Any, *, homogeneous: bool, differentiable: bool | None, min_arity: int) -> FormalParameter:
    option = str(p.option).rsplit(".", 1)[-1].lower()
    return FormalParameter(
        name=p.name, type=getattr(p, "type_str", None) or p.typeStr, doc=p.description or "", option=option,
        homogeneous=homogeneous if option == "variadic" else True, differentiable=differentiable,
        min_arity=min_arity if option == "variadic" else 1,
    )


def _range(params: tuple[FormalParameter, ...], low: int, high: int) -> tuple[int, int] | None:
    return None if derived_range(params) == (low, high) else (low, high)


def _function_text(schema: Any, opset: int) -> str:
    import onnx
    import onnx.printer

    proto = onnx.FunctionProto()
    proto.ParseFromString(schema.get_function_with_opset_version(opset))
    return onnx.printer.to_text(proto)


def version_from_schema(schema: Any, attribute_default=None) -> OpVersion:
    """One OpSchema (from onnx or onnxruntime's pybind) -> OpVersion."""
    attributes = []
    for attr in schema.attributes.values():
        atype = _attr_type(attr.type)
        proto = attribute_default(attr) if attribute_default else attr.default_value
        attributes.append(Attribute(attr.name, atype, attr.description or "", bool(attr.required),
                                    _default(attr, atype, proto)))

    def params(items: Any) -> tuple[FormalParameter, ...]:
        return tuple(
            _param(p, homogeneous=bool(getattr(p, "is_homogeneous", getattr(p, "isHomogeneous", True))),
                   differentiable=_differentiable(getattr(p, "differentiation_category", "Unknown")),
                   min_arity=int(getattr(p, "min_arity", 1)))
            for p in items
        )

    inputs, outputs = params(schema.inputs), params(schema.outputs)
    has_function = bool(getattr(schema, "has_function", False))
    function = tuple(FunctionBody(v, _function_text(schema, v)) for v in schema.function_opset_versions) \
        if has_function else ()
    determinism = str(getattr(schema, "node_determinism", "Deterministic")).rsplit(".", 1)[-1].lower()
    return OpVersion(
        since=int(schema.since_version),
        doc=schema.doc or "",
        support_level=str(schema.support_level).rsplit(".", 1)[-1].lower(),
        deprecated=bool(schema.deprecated),
        attributes=tuple(attributes),
        inputs=inputs,
        outputs=outputs,
        type_constraints=tuple(TypeConstraint(tc.type_param_str, tuple(tc.allowed_type_strs), tc.description or "")
                               for tc in schema.type_constraints),
        input_range=_range(inputs, schema.min_input, schema.max_input),
        output_range=_range(outputs, schema.min_output, schema.max_output),
        function=function,
        context_dependent_function=tuple(getattr(schema, "context_dependent_function_opset_versions", ()) or ())
        if getattr(schema, "has_context_dependent_function", False) else (),
        shape_inference=bool(schema.has_type_and_shape_inference_function),
        data_propagation=bool(getattr(schema, "has_data_propagation_function", False)),
        determinism=determinism if determinism in ("deterministic", "nondeterministic") else "unknown",
    )


def specs_from_schemas(schemas: list[Any], source: tuple[tuple[str, str], ...], attribute_default=None) -> list[OpSpec]:
    grouped: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for schema in schemas:
        grouped[(schema.domain or DEFAULT_DOMAIN, schema.name)].append(schema)
    specs = []
    for (domain, name), items in sorted(grouped.items()):
        items.sort(key=lambda s: s.since_version)
        specs.append(OpSpec(name=name, domain=domain, source=source,
                            versions=tuple(version_from_schema(s, attribute_default) for s in items)))
    return specs


def import_onnx() -> list[OpSpec]:
    """Every schema in onnx.defs.get_all_schemas_with_history(), grouped into one spec per op."""
    import onnx
    import onnx.defs

    return specs_from_schemas(list(onnx.defs.get_all_schemas_with_history()), (("onnx", onnx.__version__),))
