"""Building the model's objects (``OpSpec``, ``OpVersion`` and their parts) field by field.

The second pass over a spec file, with the checks that need more than one field or the whole
version in view: undefined type parameters, defaults of the wrong type or outside their value
domain, versions out of order, names of ops and domains that name generated files.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ..core import onnx_types as T
from .embedded_python import _check_names, _check_same_as, _kernel, _lowering, _property, _rules
from .example_values import _example, attribute_value_problem
from .fields import OBJECTS
from .model import (
    Approximation, Attribute, Example, FormalParameter, FunctionBody, OpSpec, OpVersion, Tolerance, TypeConstraint,
    ValueDomain,
)
from .located_values import (
    _MISSING, _Ctx, _Obj, _check_unique, _doc, _get, _items, _list_or_empty, _object,
)
from .yamlsource import Node, shorten


# ASCII, because generated module and folder names must mean the same file on every file system
OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DOMAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _build_spec(ctx: _Ctx, node: Node) -> OpSpec | None:
    obj = _object(ctx, node, "Spec", "a spec file")
    if obj is None:
        return None
    name, domain = _get(ctx, obj, "op"), _get(ctx, obj, "domain")
    source = _get(ctx, obj, "source")
    doc = _doc(ctx, obj)
    # op and domain name generated files (generated/kernels/<domain>/<op>.py): anything but plain
    # names could point outside the project ('../../x', '/etc', 'a/b') or collide once sanitised
    if isinstance(name, str):
        stem = os.path.splitext(os.path.basename(ctx.path))[0]
        if not OP_NAME.fullmatch(name):
            ascii_hint = " (hint: ASCII letters, digits and '_' only)" if name.isidentifier() else ""
            ctx.error(obj.value_node("op"), f"op name {shorten(name)!r} is not an identifier{ascii_hint}")
        elif stem != name and not ctx.path.startswith("<"):
            ctx.error(obj.value_node("op"), f"op {shorten(name)!r} must live in a file named "
                                            f"{shorten(name)}.yaml, not {os.path.basename(ctx.path)}")
    if isinstance(domain, str) and not DOMAIN_NAME.fullmatch(domain):
        ctx.error(obj.value_node("domain"), f"domain {shorten(domain)!r} is not dot-separated identifiers "
                                            "(like ai.onnx or com.example)")
    versions: list[OpVersion] = []
    raw_versions = _get(ctx, obj, "versions")
    if raw_versions not in (None, _MISSING):
        if not raw_versions:
            ctx.error(obj.value_node("versions"), "'versions' is empty; a spec needs at least one version")
        previous: tuple[int, Node] | None = None
        for vnode in raw_versions:
            version = _build_version(ctx, vnode, name if isinstance(name, str) else "?")
            if version is None:
                continue
            if previous is not None and version.since == previous[0]:
                ctx.error(vnode, f"version since: {version.since} is given twice (first at line "
                                 f"{ctx.loc(previous[1]).line})")
            elif previous is not None and version.since < previous[0]:
                ctx.error(vnode, f"versions must be in ascending order of 'since': {version.since} "
                                 f"follows {previous[0]}")
            previous = (version.since, vnode)
            versions.append(version)
    _check_same_as(ctx, versions)
    if any(v is _MISSING for v in (name, domain, source, raw_versions)) or name is None or domain is None:
        return None
    return OpSpec(
        name=name, domain=domain, versions=tuple(versions),
        source=tuple((k, str(v)) for k, _, v in (source or [])), doc=doc,
        path=ctx.path, location=ctx.loc(node),
    )


def _build_version(ctx: _Ctx, node: Node, op: str) -> OpVersion | None:
    obj = _object(ctx, node, "Version", "a version")
    if obj is None:
        return None
    since = _get(ctx, obj, "since")
    where = f"{op}-{since}"
    ctx.code.clear()  # from a previous version that did not build
    constraints = _type_constraints(ctx, obj)
    ctx.constraints = constraints
    attributes = _attributes(ctx, obj)
    inputs = _params(ctx, obj, "inputs", constraints)
    outputs = _params(ctx, obj, "outputs", constraints)
    function = tuple(FunctionBody(k, text, location=ctx.loc(key_node))
                     for k, key_node, text in (_list_or_empty(_get(ctx, obj, "function"))))
    rules = _rules(ctx, obj)
    values: dict[str, Any] = {}
    for key in ("support_level", "deprecated", "input_range", "output_range", "context_dependent_function",
                "shape_inference", "data_propagation", "determinism", "changes", "semantics", "family"):
        values[key] = _get(ctx, obj, key)
    kernel = _kernel(ctx, obj.value_node("kernel"))
    properties = tuple(_items(ctx, obj, "properties", "Property", _property))
    lowerings = tuple(_items(ctx, obj, "lowerings", "Lowering", _lowering))
    tolerances = _tolerances(ctx, obj)
    accuracy, tolerance = _accuracy(ctx, obj)
    doc = _doc(ctx, obj)
    if since is _MISSING or since is None or any(v is _MISSING for v in values.values()):
        return None
    if since < 1:
        ctx.error(obj.value_node("since"), f"'since' must be >= 1, got {since}")
    version = OpVersion(
        since=since, doc=doc, attributes=tuple(attributes), inputs=tuple(inputs),
        outputs=tuple(outputs), type_constraints=tuple(constraints.values()), function=function,
        rules=tuple(rules), kernel=kernel, properties=properties, lowerings=lowerings,
        tolerances=tolerances, location=ctx.loc(node),
        support_level=values["support_level"], deprecated=values["deprecated"],
        input_range=values["input_range"], output_range=values["output_range"],
        context_dependent_function=tuple(values["context_dependent_function"] or ()),
        shape_inference=values["shape_inference"], data_propagation=values["data_propagation"],
        determinism=values["determinism"], changes=values["changes"] or "",
        semantics=values["semantics"] or "", family=values["family"],
        accuracy=accuracy, tolerance=tolerance,
    )
    _check_names(ctx, version)
    examples = tuple(_items(ctx, obj, "examples", "Example", lambda c, o, n: _example(c, o, n, version, where)))
    _check_unique(ctx, [(e.name, e.location) for e in examples], "example")
    return _replace_examples(version, examples)


def _replace_examples(version: OpVersion, examples: tuple[Example, ...]) -> OpVersion:
    from dataclasses import replace

    return replace(version, examples=examples) if examples else version


def _type_constraints(ctx: _Ctx, obj: _Obj) -> dict[str, TypeConstraint]:
    out: dict[str, TypeConstraint] = {}
    for name, key_node, value_node in _list_or_empty(_get(ctx, obj, "type_constraints")):
        tc = _object(ctx, value_node, "TypeConstraint", f"type constraint {name!r}")
        if tc is None:
            continue
        types = _get(ctx, tc, "types")
        if types is _MISSING or types is None:
            continue
        seen: set[str] = set()
        for item_node, type_str in zip(tc.value_node("types").value, types):
            try:
                T.check_type_string(type_str)
            except T.TypeStringError as exc:
                ctx.error(item_node, str(exc))
            if type_str in seen:
                ctx.error(item_node, f"type {type_str!r} is listed twice in type constraint {name!r}")
            seen.add(type_str)
        if not types:
            ctx.error(tc.value_node("types"), f"type constraint {name!r} allows no types")
        out[name] = TypeConstraint(name, tuple(types), _doc(ctx, tc), location=ctx.loc(key_node))
    return out


def _attributes(ctx: _Ctx, obj: _Obj) -> list[Attribute]:
    out = []
    for name, key_node, value_node in _list_or_empty(_get(ctx, obj, "attributes")):
        a = _object(ctx, value_node, "Attribute", f"attribute {name!r}")
        if a is None:
            continue
        atype, required = _get(ctx, a, "type"), _get(ctx, a, "required")
        default = _get(ctx, a, "default")
        has_default = a.has("default") and default is not _MISSING  # _MISSING: a date ... (reported)
        default = None if default is _MISSING else default
        values, low, high = _get(ctx, a, "values"), _get(ctx, a, "min"), _get(ctx, a, "max")
        if _MISSING in (atype, required, values, low, high) or atype is None:
            continue
        if required and a.has("default"):
            ctx.error(a.value_node("default"), f"attribute {name!r} is required, so it cannot have a "
                                               "default (hint: drop 'default' or 'required')")
        if has_default:
            if default is None:
                ctx.error(a.value_node("default"), f"default of attribute {name!r} is null (hint: omit "
                                                   "'default' for an attribute without one)")
            else:
                problem = attribute_value_problem(atype, default)
                if problem:
                    ctx.error(a.value_node("default"), f"default of {atype} attribute {name!r}: {problem}")
        domain = None
        if values is not None or low is not None or high is not None:
            if values is not None:
                for item_node, item in zip(a.value_node("values").value, values):
                    problem = attribute_value_problem(atype.rstrip("s") if atype.endswith("s") else atype, item)
                    if problem:
                        ctx.error(item_node, f"value of {atype} attribute {name!r}: {problem}")
            domain = ValueDomain(tuple(values) if values is not None else None, low, high,
                                 location=ctx.loc(value_node))
            if default is not None and not domain.allows(default):
                ctx.error(a.value_node("default"), f"default {default!r} of attribute {name!r} is not in its "
                                                   f"value domain ({domain.describe()})")
        element_type = _get(ctx, a, "element_type")
        if element_type is _MISSING:
            continue
        if element_type is not None and atype != "tensor":
            ctx.error(a.value_node("element_type"), f"element_type is for tensor attributes; {name!r} is {atype}")
        elif element_type is not None and element_type not in (ctx.constraints or {}):
            ctx.error(a.value_node("element_type"), f"element_type {element_type!r} of attribute {name!r} is not a "
                                                    "type parameter of this version"
                                                    + T.suggest(element_type, list(ctx.constraints or {})))
        out.append(Attribute(name, atype, _doc(ctx, a), bool(required), default, domain,
                             location=ctx.loc(key_node), element_type=element_type))
    return out


def _params(ctx: _Ctx, obj: _Obj, key: str, constraints: dict[str, TypeConstraint]) -> list[FormalParameter]:
    out: list[FormalParameter] = []
    for node in _list_or_empty(_get(ctx, obj, key)):
        p = _object(ctx, node, "Parameter", f"an item of {key!r}")
        if p is None:
            continue
        vals = {k: _get(ctx, p, k) for k in OBJECTS["Parameter"] if k != "doc"}
        if any(v is _MISSING for v in vals.values()) or vals["name"] is None or vals["type"] is None:
            continue
        ptype = vals["type"]
        if "(" in ptype or not ptype.isidentifier():
            try:
                T.check_type_string(ptype)
            except T.TypeStringError as exc:
                ctx.error(p.value_node("type"), str(exc))
        elif ptype not in constraints:
            ctx.error(p.value_node("type"), f"{key[:-1]} {vals['name']!r} uses undefined type parameter "
                      f"{ptype!r}" + (T.suggest(ptype, constraints) or
                                      " (hint: declare it under 'type_constraints')"))
        if vals["option"] != "variadic" and (p.has("min_arity") or p.has("homogeneous")):
            bad = "min_arity" if p.has("min_arity") else "homogeneous"
            ctx.error(p.value_node(bad), f"{bad!r} applies to variadic parameters only")
        out.append(FormalParameter(
            name=vals["name"], type=ptype, doc=_doc(ctx, p), option=vals["option"],
            homogeneous=vals["homogeneous"], differentiable=vals["differentiable"],
            min_arity=vals["min_arity"], rank=vals["rank"], location=ctx.loc(node),
        ))
    _check_unique(ctx, [(p.name, p.location) for p in out], key[:-1])
    for p in out[:-1]:
        if p.option == "variadic":
            ctx.error(p.location, f"variadic {key[:-1]} {p.name!r} must be the last one")
    return out


def _tolerances(ctx: _Ctx, obj: _Obj) -> tuple[Tolerance, ...]:
    out = []
    for dtype, key_node, value_node in _list_or_empty(_get(ctx, obj, "tolerances")):
        if dtype not in T.ELEMENT_TYPE_CODES:
            ctx.error(key_node, f"unknown element type {dtype!r} in 'tolerances'" + T.suggest(dtype, T.ELEMENT_TYPES))
            continue
        t = _object(ctx, value_node, "Tolerance", f"tolerance for {dtype}")
        if t is None:
            continue
        rtol, atol = _get(ctx, t, "rtol"), _get(ctx, t, "atol")
        if _MISSING in (rtol, atol):
            continue
        if rtol < 0 or atol < 0:
            ctx.error(value_node, "tolerances must be >= 0")
        out.append(Tolerance(dtype, float(rtol), float(atol), location=ctx.loc(key_node)))
    return tuple(out)


def _accuracy(ctx: _Ctx, obj: _Obj) -> tuple[str | None, Approximation | None]:
    """``accuracy`` and its ``tolerance``: only an approximation the ONNX text allows gets a
    tolerance, so the two come together (``accuracy: approximate``) or not at all."""
    accuracy = _get(ctx, obj, "accuracy")
    accuracy = None if accuracy is _MISSING else accuracy
    node = obj.value_node("tolerance")
    tolerance = None
    if node is not None:
        t = _object(ctx, node, "Approximation", "tolerance")
        if t is not None:
            amounts = {key: _get(ctx, t, key) for key in ("ulps", "rtol", "atol")}
            doc = _doc(ctx, t)
            if _MISSING not in amounts.values():
                if any(not v >= 0 or v == float("inf") for v in amounts.values()):  # NaN fails v >= 0
                    ctx.error(node, "tolerance amounts (ulps, rtol, atol) must be finite numbers >= 0")
                elif not any(amounts.values()):
                    ctx.error(node, "the tolerance allows nothing: give ulps, rtol or atol")
                elif t.has("doc") and not doc.strip():
                    ctx.error(t.value_node("doc"), "say in 'doc' where the ONNX text allows the approximation")
                else:
                    tolerance = Approximation(**{k: float(v) for k, v in amounts.items()}, doc=doc,
                                              location=ctx.loc(node))
        if accuracy != "approximate" and obj.has("accuracy"):
            ctx.error(node, f"'tolerance' belongs to accuracy: approximate, not {accuracy}")
        elif accuracy != "approximate":
            ctx.error(node, "'tolerance' needs accuracy: approximate (the tolerance is what the ONNX text's "
                            "approximation allows)")
    elif accuracy == "approximate":
        ctx.error(obj.value_node("accuracy"), "accuracy: approximate needs a 'tolerance' saying how far the "
                                              "ONNX text lets an implementation deviate")
    return accuracy, tolerance
