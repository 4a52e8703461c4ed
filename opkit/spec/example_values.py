"""Examples and attribute values: literal values checked against the version's declared types.

An example's attributes are checked against their types and value domains, its tensors (and
sequences, optionals, maps, variadic lists) against the declared type parameters, which each binds
consistently, and the declared ranks. A map is ``{type: map(int64, string), map: {1: a, 2: b}}`` or
with ``map:`` a list of ``[key, value]`` pairs; it becomes a ``ContainerValue`` whose items are the
(key, value) pairs. ``attribute_value_problem`` also checks attribute defaults.
"""

from __future__ import annotations

from typing import Any

from ..core import onnx_types as T
from .model import ContainerValue, Example, FormalParameter, Location, OpVersion, TensorValue
from .located_values import _MISSING, _Ctx, _Obj, _convert, _doc, _get, _list_or_empty, _object
from .yamlsource import MappingNode, Node, ScalarNode, SequenceNode


def attribute_value_problem(atype: str, value: Any) -> str | None:
    """Why ``value`` is not a valid value of an attribute of type ``atype``, or None."""
    scalar_checks = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "string": lambda v: isinstance(v, str),
    }
    names = {"int": "an integer", "float": "a number", "string": "a string"}
    if atype in scalar_checks:
        return None if scalar_checks[atype](value) else f"expected {names[atype]}, got {T.show(value)}"
    if atype in ("ints", "floats", "strings"):
        inner = atype[:-1]
        if not isinstance(value, list):
            return f"expected a list of {inner}s, got {T.show(value)}"
        for item in value:
            if not scalar_checks[inner](item):
                return f"expected a list of {inner}s, but {T.show(item)} is not {names[inner]}"
        return None
    if atype == "graph":  # ONNX's textual syntax, checked by onnx.parser
        from .graph_text import graph_text_problem

        return graph_text_problem(value) if isinstance(value, str) else "expected a graph in ONNX's text syntax"
    if atype == "tensor":
        if isinstance(value, dict) and "value" in value:
            return None
        return "expected a tensor literal {dtype: ..., value: ...}"
    return f"values of {atype} attributes cannot be written in a spec"


def _example(ctx: _Ctx, e: _Obj, node: Node, version: OpVersion, where: str) -> Example | None:
    name = _get(ctx, e, "name")
    if not isinstance(name, str):
        return None
    label = f"example {name!r}"
    attrs_raw = _get(ctx, e, "attributes")
    attributes = []
    for aname, key_node, value in _list_or_empty(attrs_raw):
        attr = version.attribute(aname)
        if attr is None:
            names = [a.name for a in version.attributes]
            ctx.error(key_node, f"{label}: {where} has no attribute {aname!r}" + (
                T.suggest(aname, names) or f" (hint: attributes are {', '.join(names) or 'none'})"))
            continue
        problem = attribute_value_problem(attr.type, value)
        if problem:
            ctx.error(key_node, f"{label}: attribute {aname!r}: {problem}")
        elif attr.domain is not None and not attr.domain.allows(value):
            ctx.error(key_node, f"{label}: attribute {aname!r} = {T.show(value)} is outside its domain "
                                f"({attr.domain.describe()})")
        attributes.append((aname, value))
    given = {a for a, _ in attributes}
    for attr in version.attributes:
        if attr.required and attr.name not in given:
            ctx.error(e.node, f"{label}: required attribute {attr.name!r} is missing")

    bindings: dict[str, tuple[str, Location]] = {}
    given_inputs: set[str] = set()
    inputs = _example_tensors(ctx, e, "inputs", version.inputs, bindings, label, given_inputs)
    outputs = _example_tensors(ctx, e, "outputs", version.outputs, bindings, label, set())
    for p in version.inputs:
        if p.option == "single" and p.name not in given_inputs:
            ctx.error(e.node, f"{label}: required input {p.name!r} is missing")
    outputs_node = e.value_node("outputs")
    if isinstance(outputs_node, MappingNode) and not outputs_node.value:
        ctx.error(outputs_node, f"{label}: 'outputs' is empty; give at least one expected output")
    source, rtol, atol = (_get(ctx, e, key) for key in ("source", "rtol", "atol"))
    precision = {}
    for key, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if value < 0 or value != value:
                ctx.error(e.value_node(key), f"{label}: {key} must be a number >= 0")
            else:
                precision[key] = float(value)
    return Example(name, _doc(ctx, e), tuple(attributes), tuple(inputs), tuple(outputs),
                   source=source if isinstance(source, str) else "", location=ctx.loc(node), **precision)


def _example_tensors(ctx: _Ctx, e: _Obj, key: str, params: tuple[FormalParameter, ...],
                     bindings: dict[str, tuple[str, Location]], label: str, given: set[str]) -> list:
    out = []
    by_name = {p.name: p for p in params}
    for pname, key_node, value_node in _list_or_empty(_get(ctx, e, key)):
        param = by_name.get(pname)
        if param is None:
            ctx.error(key_node, f"{label}: there is no {key[:-1]} named {pname!r}"
                      + (T.suggest(pname, by_name) or f" (hint: {key} are {', '.join(by_name) or 'none'})"))
            continue
        given.add(pname)
        if isinstance(value_node, ScalarNode) and value_node.tag == "tag:yaml.org,2002:null":
            if param.option != "optional":
                ctx.error(value_node, f"{label}: {key[:-1]} {pname!r} is not optional, so it cannot be null")
            out.append((pname, None))
            continue
        if param.option == "variadic":
            tensors = _variadic(ctx, value_node, param, bindings, f"{label}, {key[:-1]} {pname!r}")
            if tensors is not None:
                out.append((pname, tensors))
            continue
        value = _value(ctx, value_node, param, bindings, f"{label}, {key[:-1]} {pname!r}")
        if value is not None:
            out.append((pname, value))
    return out


def _variadic(ctx: _Ctx, node: Node, param: FormalParameter, bindings: dict[str, tuple[str, Location]],
              label: str) -> tuple[TensorValue, ...] | None:
    """A variadic parameter's arguments: a list of tensors, at least ``min_arity`` of them. The
    arguments of a heterogeneous one may each have their own type."""
    if not isinstance(node, SequenceNode) or not all(isinstance(item, MappingNode) for item in node.value):
        ctx.error(node, f"{label}: {param.name!r} is variadic: give a list of tensors "
                        "({dtype: ..., value: ...} each)")
        return None
    if len(node.value) < param.min_arity:
        ctx.error(node, f"{label}: {param.name!r} needs at least {param.min_arity} tensors, got {len(node.value)}")
        return None
    tensors = []
    for i, item in enumerate(node.value):
        scope = bindings if param.homogeneous else dict(bindings)
        tensor = _value(ctx, item, param, scope, f"{label}[{i}]")
        if tensor is None:
            return None
        tensors.append(tensor)
    return tuple(tensors)


def _value(ctx: _Ctx, node: Node, param: FormalParameter, bindings: dict[str, tuple[str, Location]],
           label: str) -> TensorValue | ContainerValue | None:
    """One argument: a map, a container (a mapping with ``type``) or a tensor."""
    keys = {k.value for k, _ in node.value if isinstance(k, ScalarNode)} if isinstance(node, MappingNode) else set()
    if "map" in keys or param.type.startswith("map("):
        return _map_value(ctx, node, param, bindings, label)
    if "type" in keys:
        return _container(ctx, node, param, bindings, label)
    return _tensor(ctx, node, param, bindings, label)


def _container(ctx: _Ctx, node: Node, param: FormalParameter, bindings: dict[str, tuple[str, Location]],
               label: str) -> ContainerValue | None:
    """A sequence or optional value: its type must be the parameter's (or allowed by its type
    parameter, and agree with what that is bound to), and its elements are checked as tensors of
    the type it holds."""
    from dataclasses import replace

    c = _object(ctx, node, "Container", label)
    if c is None:
        return None
    type_str = _get(ctx, c, "type")
    if not isinstance(type_str, str):
        return None
    try:
        T.check_type_string(type_str)
    except T.TypeStringError as exc:
        ctx.error(c.value_node("type"), f"{label}: {exc}")
        return None
    is_seq, is_opt = type_str.startswith("seq("), type_str.startswith("optional(")
    if not (is_seq or is_opt):
        ctx.error(c.value_node("type"), f"{label}: a container's type is seq(...) or optional(...), not {type_str}")
        return None
    if "(" in param.type:
        if type_str != param.type:
            ctx.error(c.value_node("type"), f"{label}: type {type_str} does not match the parameter type {param.type}")
            return None
    elif not _bind_parameter_type(ctx, c.value_node("type"), param, bindings, type_str, type_str, type_str, label):
        return None
    inner = replace(param, type=type_str[type_str.index("(") + 1:-1], rank=None, option="single")
    key = "sequence" if is_seq else "optional"
    if c.has("optional" if is_seq else "sequence"):
        ctx.error(c.node, f"{label}: a {type_str} value takes {key!r}")
        return None
    items_node = c.value_node(key)
    if is_seq:
        if items_node is None:
            ctx.error(c.node, f"{label}: give the sequence's elements as 'sequence: [...]'")
            return None
        if not isinstance(items_node, SequenceNode):
            ctx.error(items_node, f"{label}: 'sequence' must be a list of tensors")
            return None
        nodes = list(items_node.value)
    else:
        empty = items_node is None or (isinstance(items_node, ScalarNode)
                                       and items_node.tag == "tag:yaml.org,2002:null")
        nodes = [] if empty else [items_node]
    items = []
    for i, item in enumerate(nodes):
        value = _value(ctx, item, inner, {}, f"{label}[{i}]" if is_seq else label)
        if value is None:
            return None
        items.append(value)
    return ContainerValue(type_str, tuple(items), location=ctx.loc(node))


def _map_value(ctx: _Ctx, node: Node, param: FormalParameter, bindings: dict[str, tuple[str, Location]],
               label: str) -> ContainerValue | None:
    """A map: ``type`` (optional where the parameter fixes it) and ``map``, a mapping or a list of
    [key, value] pairs whose keys (distinct) and values are of the map's key and value types."""
    fields = {k.value: (k, v) for k, v in node.value if isinstance(k, ScalarNode)} \
        if isinstance(node, MappingNode) else {}
    for key in set(fields) - {"type", "map"}:
        ctx.error(fields[key][0], f"{label}: unknown key {key!r} in a map value (keys: type, map)")
    if "map" not in fields:
        ctx.error(node, f"{label}: give the map as 'map: {{key: value, ...}}' (with its 'type')")
        return None
    type_str = _convert(ctx, fields["type"][1], "string", "type") if "type" in fields else param.type
    if not isinstance(type_str, str) or not type_str.startswith("map("):
        ctx.error(node, f"{label}: a map value needs 'type: map(K, V)'")
        return None
    try:
        T.check_type_string(type_str)
    except T.TypeStringError as exc:
        ctx.error(fields.get("type", (node, node))[1], f"{label}: {exc}")
        return None
    where = fields.get("type", (node, node))[1]
    if "(" in param.type:
        if type_str.replace(" ", "") != param.type.replace(" ", ""):
            ctx.error(where, f"{label}: type {type_str} does not match the parameter type {param.type}")
            return None
    elif not _bind_parameter_type(ctx, where, param, bindings, type_str, type_str, type_str, label):
        return None
    return _map_items(ctx, fields["map"][1], type_str, label)


def _map_items(ctx: _Ctx, node: Node, type_str: str, label: str) -> ContainerValue | None:
    body = type_str[len("map("):-1]
    key_type, _, value_type = (part.strip() for part in body.partition(","))
    value_type = T.tensor_element(value_type) or value_type
    if isinstance(node, MappingNode):
        pairs = [(_convert(ctx, k, "any", label), _convert(ctx, v, "any", label)) for k, v in node.value]
    else:
        raw = _convert(ctx, node, "any", label)
        if not isinstance(raw, list) or not all(isinstance(p, list) and len(p) == 2 for p in raw):
            ctx.error(node, f"{label}: 'map' is a mapping or a list of [key, value] pairs")
            return None
        pairs = [tuple(p) for p in raw]
    seen = set()
    for k, v in pairs:
        why = T.element_value_problem(key_type, k) or T.element_value_problem(value_type, v)
        if why is None and k in seen:
            why = f"key {T.show(k)} occurs twice"
        if why:
            ctx.error(node, f"{label}: {why}")
            return None
        seen.add(k)
    return ContainerValue(type_str, tuple(pairs), location=ctx.loc(node))


def _bind_parameter_type(ctx: _Ctx, node: Node, param: FormalParameter, bindings: dict[str, tuple[str, Location]],
                         type_str: str, key: str, shown: str, label: str) -> bool:
    """Check that ``type_str`` is allowed by the parameter's type parameter and agrees with what an
    earlier argument bound it to (``key``: a tensor's dtype, a container's type), then bind it.
    ``shown`` names the value in the errors. False when either check failed (both are reported)."""
    ok = True
    tc = ctx.constraints.get(param.type)
    if tc is not None and type_str not in tc.types:
        ctx.error(node, f"{label}: {shown} is not allowed by type parameter {param.type} ({', '.join(tc.types)})")
        ok = False
    bound = bindings.get(param.type)
    if bound and bound[0] != key:
        ctx.error(node, f"{label}: {shown} conflicts with {param.type} = {bound[0]} bound at line {bound[1].line}")
        ok = False
    elif not bound:
        bindings[param.type] = (key, ctx.loc(node))
    return ok


def _fixed_element(param: FormalParameter) -> str | None:
    return T.tensor_element(param.type) if "(" in param.type else None


def _tensor(ctx: _Ctx, node: Node, param: FormalParameter, bindings: dict[str, tuple[str, Location]],
            label: str) -> TensorValue | None:
    loc = ctx.loc(node)
    if isinstance(node, MappingNode):
        t = _object(ctx, node, "Tensor", label)
        if t is None:
            return None
        dtype, shape, value = _get(ctx, t, "dtype"), _get(ctx, t, "shape"), _get(ctx, t, "value")
        if _MISSING in (dtype, shape) or not t.has("value"):
            return None
    else:  # a bare value: the dtype must follow from the parameter's type
        dtype, shape, value = None, None, _convert(ctx, node, "any", label)
    if value is _MISSING:  # reported
        return None
    if "(" in param.type and T.tensor_element(param.type) is None:
        ctx.error(node, f"{label}: examples support tensor parameters only, not {param.type}")
        return None
    fixed = _fixed_element(param)
    if fixed is not None and fixed not in T.ELEMENT_TYPE_CODES:
        return None
    if dtype is None:
        dtype = fixed or (bindings.get(param.type, (None,))[0])
        if dtype is None:
            ctx.error(node, f"{label}: give 'dtype' (the type of {param.type} is not fixed here)")
            return None
    if fixed and dtype != fixed:
        ctx.error(node, f"{label}: dtype {dtype} does not match the parameter type {param.type}")
    elif not fixed:
        _bind_parameter_type(ctx, node, param, bindings, f"tensor({dtype})", dtype, f"dtype {dtype}", label)
    value_shape, flat, problem = _nested_shape(value)
    if problem:
        ctx.error(node, f"{label}: {problem}")
        return None
    if shape is not None:
        shape = tuple(shape)
        if any(d < 0 for d in shape):
            ctx.error(node, f"{label}: shape {list(shape)} has a negative dimension")
            return None
        count = 1
        for d in shape:
            count *= d
        if value_shape != shape and not (count == 0 and flat == []) and len(flat) != count:
            ctx.error(node, f"{label}: value has {len(flat)} elements but shape {list(shape)} needs {count}")
            return None
        if value_shape != shape and count != 0:
            value = _reshape(flat, shape)
    else:
        shape = value_shape
    for item in flat:
        why = T.element_value_problem(dtype, item)
        if why:
            ctx.error(node, f"{label}: {why}")
            return None
    if param.rank is not None and not param.rank.allows(len(shape)):
        ctx.error(node, f"{label}: rank {len(shape)} breaks the rank rule of {param.name!r} "
                        f"({param.rank.describe()})")
    return TensorValue(dtype, shape, _freeze(value), location=loc)


def _nested_shape(value: Any) -> tuple[tuple[int, ...], list, str | None]:
    """Shape and flattened elements of a nested list; a problem string for ragged lists."""
    if not isinstance(value, list):
        if isinstance(value, dict):
            return (), [], "a tensor value must be a scalar or nested lists, not a mapping"
        return (), [value], None
    if not value:
        return (0,), [], None
    shapes, flat = [], []
    for item in value:
        s, f, problem = _nested_shape(item)
        if problem:
            return (), [], problem
        shapes.append(s)
        flat.extend(f)
    if any(s != shapes[0] for s in shapes):
        return (), [], "ragged nested lists: rows have different shapes"
    return (len(value),) + shapes[0], flat, None


def _reshape(flat: list, shape: tuple[int, ...]) -> Any:
    if not shape:
        return flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [_reshape(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, list) else value
