"""Reading one spec file's YAML nodes into checked values, each problem reported at its location.

The load context (the file, its lines, the diagnostics so far) and the first pass over a file:
key and kind checks driven by ``fields.OBJECTS`` (unknown keys with a did-you-mean hint,
duplicate keys, missing keys, wrong kinds). A value that is present but invalid comes back as
``_MISSING``, already reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core import onnx_types as T
from .diagnostics import Diagnostic
from .fields import OBJECTS, Field
from .model import Location, RankRule, TypeConstraint
from .yamlsource import (
    TAG_NAMES, ConstructorError, MappingNode, Node, ScalarNode, SequenceNode, node_location, plain_value,
    scalar_value, shorten,
)


_MISSING = object()


@dataclass
class _Ctx:
    path: str
    diags: list[Diagnostic] = field(default_factory=list)
    # type constraints of the version being built, for checking example dtypes
    constraints: dict[str, TypeConstraint] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)  # the file's text, to point into block scalars
    # embedded Python of the version being built that parses: (kind, node, source, what), checked
    # for undefined names once the version's inputs and attributes are known
    code: list[tuple[str, Node, str, str]] = field(default_factory=list)

    def loc(self, node: Node) -> Location:
        return node_location(self.path, node)

    def error(self, where: Node | Location, message: str) -> None:
        loc = where if isinstance(where, Location) else self.loc(where)
        self.diags.append(Diagnostic(loc, message))


def _describe(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    return TAG_NAMES.get(node.tag, f"a {node.tag}") + (f" ({shorten(node.value)!r})" if node.value != "" else "")


def _scalar_value(ctx: _Ctx, node: ScalarNode) -> Any:
    """scalar_value, or _MISSING with the reason reported at the node (a date, a huge integer)."""
    try:
        return scalar_value(node)
    except ConstructorError as exc:
        ctx.error(node, str(exc.problem))
        return _MISSING


class _Obj:
    """The checked keys of one mapping node: key -> (key node, value node)."""

    __slots__ = ("node", "items", "name")

    def __init__(self, node: MappingNode, items: dict[str, tuple[Node, Node]], name: str):
        self.node, self.items, self.name = node, items, name

    def has(self, key: str) -> bool:
        return key in self.items

    def value_node(self, key: str) -> Node | None:
        pair = self.items.get(key)
        return pair[1] if pair else None


def _object(ctx: _Ctx, node: Node, name: str, what: str | None = None) -> _Obj | None:
    fields = OBJECTS[name]
    if not isinstance(node, MappingNode):
        ctx.error(node, f"expected a mapping for {what or name}, got {_describe(node)}"
                  + (f"; keys: {', '.join(fields)}" if len(fields) < 12 else ""))
        return None
    items: dict[str, tuple[Node, Node]] = {}
    hinted: set[str] = set()  # required keys an unknown key probably meant: reported once, there
    for key_node, value_node in node.value:
        if not isinstance(key_node, ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
            ctx.error(key_node, f"keys of {what or name} must be names, got {_describe(key_node)}")
            continue
        key = key_node.value
        if key in items:
            first = ctx.loc(items[key][0])
            ctx.error(key_node, f"duplicate key {key!r} (first given at line {first.line})")
            continue
        if key not in fields:
            ctx.error(key_node, f"unknown key {key!r} in {what or name}" + _hint_keys(key, fields))
            hinted.add(T.closest(key, fields) or "")
            continue
        items[key] = (key_node, value_node)
    for key, spec in fields.items():
        if spec.required and key not in items and key not in hinted:
            ctx.error(node, f"{what or name} is missing required key {key!r}")
    return _Obj(node, items, name)


def _hint_keys(key: str, fields: dict[str, Field]) -> str:
    hint = T.suggest(key, fields)
    return hint or f" (hint: allowed keys are {', '.join(fields)})"


def _get(ctx: _Ctx, obj: _Obj, key: str) -> Any:
    """The value of ``key`` converted to its declared kind, the field default when absent, or
    _MISSING when present but invalid (already reported)."""
    spec = OBJECTS[obj.name][key]
    pair = obj.items.get(key)
    if pair is None:
        return spec.default
    return _convert(ctx, pair[1], spec.kind, key, spec)


def _convert(ctx: _Ctx, node: Node, kind: str, key: str, spec: Field | None = None) -> Any:
    if kind in ("string", "integer", "number", "boolean", "enum"):
        return _scalar(ctx, node, kind, key, spec)
    if kind == "any":
        reported = len(ctx.diags)
        value = plain_value(node, ctx.path, ctx.diags)
        return value if len(ctx.diags) == reported else _MISSING  # a date, a duplicate key: no follow-ups
    if kind.startswith("list:"):
        if not isinstance(node, SequenceNode):
            ctx.error(node, f"{key!r} must be a list, got {_describe(node)}")
            return _MISSING
        inner = kind[5:]
        if inner.startswith("obj:") or inner == "any":
            return [item if inner != "any" else plain_value(item, ctx.path, ctx.diags) for item in node.value]
        out = [_convert(ctx, item, inner, key) for item in node.value]
        return _MISSING if any(v is _MISSING for v in out) else out
    if kind.startswith(("map:", "intmap:")):
        if not isinstance(node, MappingNode):
            ctx.error(node, f"{key!r} must be a mapping, got {_describe(node)}")
            return _MISSING
        inner = kind.split(":", 1)[1]
        want_int = kind.startswith("intmap:")
        out: list[tuple[Any, Node, Any]] = []
        seen: dict[Any, Node] = {}
        for key_node, value_node in node.value:
            k = _scalar_value(ctx, key_node) if isinstance(key_node, ScalarNode) else None
            if k is _MISSING:
                continue
            if want_int and (not isinstance(k, int) or isinstance(k, bool)):
                ctx.error(key_node, f"keys of {key!r} must be integers, got {_describe(key_node)}")
                continue
            if not want_int and not isinstance(k, str):
                ctx.error(key_node, f"keys of {key!r} must be names, got {_describe(key_node)}"
                          + (" (hint: quote it)" if isinstance(key_node, ScalarNode) else ""))
                continue
            if k in seen:
                ctx.error(key_node, f"duplicate key {k!r} in {key!r} (first given at line "
                                    f"{ctx.loc(seen[k]).line})")
                continue
            seen[k] = key_node
            if inner.startswith("obj:") or inner == "tensor":
                value: Any = value_node
            else:
                value = _convert(ctx, value_node, inner, f"{key}.{k}")
                if value is _MISSING:
                    continue
            out.append((k, key_node, value))
        return out
    if kind.startswith("obj:"):
        return node
    if kind == "rank":
        return _rank(ctx, node)
    if kind == "arity":
        return _arity(ctx, node, key)
    raise AssertionError(f"unknown field kind {kind}")  # a bug in fields.py, not in a spec


def _scalar(ctx: _Ctx, node: Node, kind: str, key: str, spec: Field | None) -> Any:
    if not isinstance(node, ScalarNode):
        ctx.error(node, f"{key!r} must be {_kind_words(kind)}, got {_describe(node)}")
        return _MISSING
    value = _MISSING  # for the odd tags YAML resolves on its own: '<<' (merge), '=' (value)
    if node.tag in TAG_NAMES:
        value = _scalar_value(ctx, node)
        if value is _MISSING:  # a date, a huge integer: reported
            return _MISSING
    ok = {
        "string": isinstance(value, str),
        "enum": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
    }[kind]
    if not ok:
        quotable = node.tag != "tag:yaml.org,2002:null" and node.value != ""
        hint = " (hint: quote it to make it a string)" if kind in ("string", "enum") and quotable else ""
        ctx.error(node, f"{key!r} must be {_kind_words(kind)}, got {_describe(node)}{hint}")
        return _MISSING
    if kind == "enum" and spec is not None and value not in spec.enum:
        hint = T.suggest(value, spec.enum)
        names = [str(v) for v in spec.enum]
        if hint and len(names) > 10:  # the hint says what to write; a long list would bury it
            names = names[:4] + [f"... ({len(spec.enum)} names)"]
        ctx.error(node, f"{key!r} must be one of {', '.join(names)}; got {value!r}{hint}")
        return _MISSING
    return value


def _kind_words(kind: str) -> str:
    return {"string": "a string", "enum": "a string", "integer": "an integer",
            "number": "a number", "boolean": "true or false"}[kind]


def _rank(ctx: _Ctx, node: Node) -> RankRule | Any:
    if isinstance(node, ScalarNode):
        value = _scalar_value(ctx, node) if node.tag == "tag:yaml.org,2002:int" else None
        if value is _MISSING:
            return _MISSING
        if not isinstance(value, int):
            ctx.error(node, f"'rank' must be an integer or {{min: N, max: M}}, got {_describe(node)}")
            return _MISSING
        if value < 0:
            ctx.error(node, f"rank must be >= 0, got {value}")
            return _MISSING
        return RankRule(value, value, location=ctx.loc(node))
    if not isinstance(node, MappingNode):
        ctx.error(node, f"'rank' must be an integer or {{min: N, max: M}}, got {_describe(node)}")
        return _MISSING
    obj = _object(ctx, node, "Rank", "rank")
    low, high = _get(ctx, obj, "min"), _get(ctx, obj, "max")
    if low is _MISSING or high is _MISSING:
        return _MISSING
    if low < 0 or (high is not None and high < low):
        ctx.error(node, f"rank range must satisfy 0 <= min <= max, got min={low}, max={high}")
        return _MISSING
    return RankRule(low, high, location=ctx.loc(node))


def _arity(ctx: _Ctx, node: Node, key: str) -> tuple[int, int] | Any:
    values = []
    if isinstance(node, SequenceNode) and len(node.value) == 2:
        for item in node.value:
            v = _scalar_value(ctx, item) if isinstance(item, ScalarNode) else None
            if v is _MISSING:
                return _MISSING
            if v == "inf" or v == float("inf"):
                v = T.INFINITE_ARITY
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                break
            values.append(v)
    if len(values) != 2 or values[0] > values[1]:
        ctx.error(node, f"{key!r} must be [min, max] with 0 <= min <= max (max may be inf)")
        return _MISSING
    return tuple(values)


def _doc(ctx: _Ctx, obj: _Obj, key: str = "doc") -> str:
    value = _get(ctx, obj, key)
    return "" if value in (None, _MISSING) else value


def _list_or_empty(value: Any) -> list:
    return [] if value in (None, _MISSING) else value


def _items(ctx: _Ctx, obj: _Obj, key: str, objname: str, build) -> Iterable:
    for node in _list_or_empty(_get(ctx, obj, key)):
        item = _object(ctx, node, objname, f"an item of {key!r}")
        if item is not None:
            built = build(ctx, item, node)
            if built is not None:
                yield built


def _check_unique(ctx: _Ctx, names: list[tuple[str, Location | None]], what: str) -> None:
    seen: dict[str, Location | None] = {}
    for name, loc in names:
        if name in seen:
            first = seen[name]
            ctx.error(loc or Location(ctx.path, 1, 1),
                      f"duplicate {what} name {name!r}" + (f" (first at line {first.line})" if first else ""))
        else:
            seen[name] = loc
