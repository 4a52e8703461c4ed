"""YAML spec files -> ``OpSpec`` models, collecting every diagnostic with its location.

Two passes over each file: key/kind checks driven by ``fields.OBJECTS`` (unknown keys with a
did-you-mean hint, duplicate keys, missing keys, wrong kinds), then the semantic checks that need
the whole version in view (undefined type parameters, defaults of the wrong type, examples that do
not fit the declared types and ranks ...). Loading never raises for bad content: callers get the
model (or None) and the list of diagnostics.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import scopes
from ..core import onnx_types as T
from .diagnostics import Diagnostic, SpecError
from .fields import OBJECTS, Field
from .model import (
    Approximation, Attribute, ContainerValue, Example, FormalParameter, FunctionBody, Kernel, Location, Lowering,
    OpSpec, OpVersion, Property, RankRule, Rule, TensorValue, Tolerance, TypeConstraint, ValueDomain,
)
from .yamlsource import (
    TAG_NAMES, ConstructorError, MappingNode, Node, ScalarNode, SequenceNode, node_location, plain_value,
    read_spec_bytes, read_yaml, scalar_value, shorten,
)

_MISSING = object()
# ASCII, because generated module and folder names must mean the same file on every file system
OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DOMAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


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


# ---------------------------------------------------------------------------------------------
# pass 1: structure, driven by the field table


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


# ---------------------------------------------------------------------------------------------
# pass 2: build the model, with the checks that need more than one field


def _doc(ctx: _Ctx, obj: _Obj, key: str = "doc") -> str:
    value = _get(ctx, obj, key)
    return "" if value in (None, _MISSING) else value


def _python(ctx: _Ctx, node: Node | None, source: str, kind: str, what: str, mode: str | None = None) -> None:
    """Check embedded Python of ``kind`` (see scopes.py): syntax now, names with the version.
    ``mode`` overrides the kind's: "eval" for an expression pasted into code of that kind."""
    if node is not None and not _python_problem(ctx, node, source, mode or _mode(kind), what):
        ctx.code.append((kind, node, source, what))


def _mode(kind: str) -> str:
    return "exec" if kind in ("kernel", "lowering") else "eval"  # bodies of functions, or expressions


def _python_problem(ctx: _Ctx, node: Node, source: str, mode: str, what: str) -> bool:
    """Report a syntax error in embedded Python at its line in the YAML file; True if there is one."""
    # kernel and lowering bodies are function bodies (they 'return' their result)
    body = mode == "exec"
    if not any(ln.strip() and not ln.strip().startswith("#") for ln in source.splitlines()):
        ctx.error(node, f"empty Python in {what}")
        return True
    code = "def _body():\n " + source.replace("\n", "\n ") + "\n" if body else source
    try:
        with warnings.catch_warnings():  # SyntaxWarnings would go to stderr; they are not errors
            warnings.simplefilter("ignore")
            compile(code, what, mode)
    except SyntaxError as exc:
        loc = ctx.loc(node)
        literal = isinstance(node, ScalarNode) and node.style == "|"
        last = source.rstrip("\n").count("\n") + 1

        def file_line(lineno: int) -> int:  # a line of the Python source -> its line in the YAML file
            lineno = min(lineno - body, last)
            return loc.line + lineno if literal and lineno > 0 else loc.line  # '|' content starts a line below

        message = re.sub(r"on line (\d+)", lambda m: f"on line {file_line(int(m.group(1)))}", exc.msg)
        line, col, offset = file_line(exc.lineno or 0), loc.col, (exc.offset or 1) - body
        if literal and loc.line < line <= len(ctx.lines):  # the block's indentation + the offset
            first = next((ln for ln in ctx.lines[loc.line:line] if ln.strip()), ctx.lines[line - 1])
            col = len(first) - len(first.lstrip(" ")) + max(offset, 1)
        elif isinstance(node, ScalarNode) and node.start_mark.line == node.end_mark.line and offset > 0:
            col = loc.col + offset - (0 if node.style in ("'", '"') else 1)
        ctx.error(Location(ctx.path, line, max(col, 1)), f"Python syntax error in {what}: {message}")
    except (ValueError, RecursionError, MemoryError) as exc:  # e.g. a NUL character, deep nesting
        ctx.error(node, f"invalid Python in {what}: {exc}")
    else:
        return False
    return True


def _check_same_as(ctx: _Ctx, versions: list[OpVersion]) -> None:
    """A kernel reused with ``same_as`` must exist (no dangling link, no cycle), and a reused body
    must only use names the reusing version has: Tile-1 reused Tile-13's body, which reads
    ``repeats``, an input Tile-1 does not have (a NameError whenever Tile-1's kernel ran)."""
    by_since = {v.since: v for v in versions}
    for version in versions:
        kernel = version.kernel
        if kernel is None or kernel.same_as is None or kernel.location is None:
            continue
        holder, seen = version, {version.since}
        while holder.kernel is not None and holder.kernel.same_as is not None:
            target = by_since.get(holder.kernel.same_as)
            if target is None or target.kernel is None or target.since in seen:
                ctx.error(kernel.location, f"kernel same_as {kernel.same_as}: no version {holder.kernel.same_as} with "
                                           f"a kernel (or a cycle); versions: {', '.join(str(s) for s in by_since)}")
                holder = None
                break
            seen.add(target.since)
            holder = target
        if holder is None or not holder.kernel.python:
            continue
        try:
            missing = scopes.undefined_names(holder.kernel.python, "exec", scopes.names("kernel", version))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for name in sorted({m[0] for m in missing}):
            ctx.error(kernel.location, f"kernel same_as {kernel.same_as}: the body of version {holder.since} uses "
                                       f"{name!r}, which version {version.since} does not have (hint: give this "
                                       "version a kernel of its own)")


def _check_names(ctx: _Ctx, version: OpVersion) -> None:
    """Report names the version's embedded Python loads that nothing binds: a NameError at test
    time otherwise (or, for a rule, whenever the kernel runs)."""
    for kind, node, source, what in ctx.code:
        known = scopes.names(kind, version)
        try:
            missing = scopes.undefined_names(source, _mode(kind), known)
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # compile() took it; ast may not
            continue
        for name, line, col in missing:
            ctx.error(_code_location(ctx, node, source, line, col),
                      f"undefined name {name!r} in {what}" + _name_hint(name, kind, version, known))
    ctx.code.clear()


_OUTPUT_HINTS = {"rule": "rules check the inputs before the kernel runs", "property": "compute it with op(...)",
                 "kernel": "the kernel returns the outputs", "lowering": "the lowering returns the outputs"}


def _name_hint(name: str, kind: str, version: OpVersion, known: frozenset[str]) -> str:
    if any(p.name == name for p in version.outputs):
        return f" (hint: {name!r} is an output, which a {kind} does not see; {_OUTPUT_HINTS[kind]})"
    hint = T.suggest(name, sorted(known - scopes.BUILTINS)) or T.suggest(name, sorted(scopes.BUILTINS))
    if hint:
        return hint
    sees = ", ".join(n for n in scopes.GLOBALS[kind] if not n.startswith("_"))
    helpers = ", the helpers of opkit.kernels.lib and .runtime" if kind in ("rule", "kernel") else ""
    return f" (hint: a {kind} sees the inputs, the attributes, {sees}{helpers} and Python's builtins)"


def _code_location(ctx: _Ctx, node: Node, source: str, lineno: int, col: int) -> Location:
    """Where column ``col`` (0-based) of line ``lineno`` of embedded Python is in the YAML file:
    exact for '|' blocks, plain scalars (one line or folded over several) and one-line quoted
    ones; the value's start for the rest, whose text differs from the file's."""
    loc = ctx.loc(node)
    start, end = node.start_mark, node.end_mark
    if node.style == "|":
        text = source.split("\n")[lineno - 1]
        line = loc.line + lineno  # the content starts on the line after the '|'
        if line <= len(ctx.lines) and text and ctx.lines[line - 1].endswith(text):
            return Location(ctx.path, line, len(ctx.lines[line - 1]) - len(text) + col + 1)
    elif node.style in ("'", '"') and start.line == end.line:
        return Location(ctx.path, loc.line, loc.col + 1 + col)
    elif not node.style and start.line == end.line:  # one line of plain text is the source as written
        return Location(ctx.path, loc.line, loc.col + col)
    elif not node.style and lineno == 1 and end.line < len(ctx.lines):  # plain: "" (libyaml) or None
        # a plain scalar's lines are joined with one space, each without its indentation
        rows = [(start.line, start.column)] + [
            (i, len(ctx.lines[i]) - len(ctx.lines[i].lstrip(" "))) for i in range(start.line + 1, end.line + 1)]
        pieces = [ctx.lines[i][c:].rstrip() for i, c in rows]
        if " ".join(pieces) == source:
            for (i, c), piece in zip(rows, pieces):
                if col < len(piece):
                    return Location(ctx.path, i + 1, c + col + 1)
                col -= len(piece) + 1
    return loc


def load_spec_file(path: str, data: bytes | None = None) -> tuple[OpSpec | None, list[Diagnostic]]:
    """Load one spec file. Returns (model or None, diagnostics)."""
    if data is None:
        try:
            data = read_spec_bytes(path)
        except OSError:
            pass  # read_yaml reports it
    node, diags = read_yaml(path, data)
    if node is None:
        return None, diags
    ctx = _Ctx(path, diags, lines=data.decode("utf-8", "replace").split("\n") if data is not None else [])
    spec = _build_spec(ctx, node)
    if ctx.diags:
        return (spec if spec is not None else None), ctx.diags
    return spec, []


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
    if atype == "tensor":
        if isinstance(value, dict) and "value" in value:
            return None
        return "expected a tensor literal {dtype: ..., value: ...}"
    return f"values of {atype} attributes cannot be written in a spec"


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


def _rules(ctx: _Ctx, obj: _Obj) -> list[Rule]:
    def build(c: _Ctx, r: _Obj, node: Node) -> Rule | None:
        label, holds = _get(c, r, "label"), _get(c, r, "holds")
        if not isinstance(label, str) or not isinstance(holds, str):
            return None
        _python(c, r.value_node("holds"), holds, "rule", f"rule {label}")
        return Rule(label, holds, _doc(c, r), location=c.loc(node))

    rules = list(_items(ctx, obj, "rules", "Rule", build))
    _check_unique(ctx, [(r.label, r.location) for r in rules], "rule label")
    return rules


def _kernel(ctx: _Ctx, node: Node | None) -> Kernel | None:
    if node is None:
        return None
    k = _object(ctx, node, "Kernel", "'kernel'")
    if k is None:
        return None
    template, params, python, same_as = (_get(ctx, k, key) for key in ("template", "params", "python", "same_as"))
    if _MISSING in (template, params, python, same_as):
        return None
    given = [key for key in ("template", "python", "same_as") if k.has(key)]
    if len(given) != 1:
        ctx.error(node, "a kernel needs exactly one of 'template', 'python' or 'same_as'"
                  + (f"; got {', '.join(given)}" if given else ""))
    if python is not None:
        _python(ctx, k.value_node("python"), python, "kernel", "kernel")
    if template is not None:
        _template(ctx, k, template)
    return Kernel(template, tuple((key, value) for key, _, value in (params or [])), python, same_as,
                  location=ctx.loc(node))


# Every kernel template (templates/kernels/<name>.py.j2) with its params that are Python
# expressions pasted into the kernel function; 'out' is a NumPy dtype expression unless 'same' or
# 'bool'. The other params (accumulate, mean, outputs) steer the template. Kept here, not read from
# the templates, so validating needs no Jinja; tests/test_hostile_specs.py checks it against them.
TEMPLATE_CODE_PARAMS = {
    "unary": ("expr", "out"), "binary": ("expr", "out"), "compare": ("expr",), "arg_reduce": ("fn",),
    "reduce": ("fn", "pre", "post", "empty"), "call": ("fn",), "variadic": ("fold",), "cast": (),
}
_NOT_CODE = {"out": ("same", "bool")}


def _template(ctx: _Ctx, k: _Obj, template: str) -> None:
    """Check the template's params that are code like a kernel body (syntax now, names with the
    version): otherwise the generated module does not import (a SyntaxError), or the kernel raises
    a NameError when it first runs. An unknown template would crash `opkit gen`."""
    if template not in TEMPLATE_CODE_PARAMS:
        ctx.error(k.value_node("template"), f"unknown kernel template {template!r}"
                  + (T.suggest(template, sorted(TEMPLATE_CODE_PARAMS)) or
                     f" (templates: {', '.join(sorted(TEMPLATE_CODE_PARAMS))})"))
        return
    code = TEMPLATE_CODE_PARAMS.get(template, ())
    params = k.value_node("params")
    for key_node, value_node in params.value if params is not None else ():
        key = key_node.value
        if (key in code and isinstance(value_node, ScalarNode) and value_node.tag == "tag:yaml.org,2002:str"
                and value_node.value not in _NOT_CODE.get(key, ())):
            _python(ctx, value_node, value_node.value, "kernel", f"kernel param {key!r}", mode="eval")


def _property(ctx: _Ctx, p: _Obj, node: Node) -> Property | None:
    name, holds, types = _get(ctx, p, "name"), _get(ctx, p, "holds"), _get(ctx, p, "types")
    if not isinstance(name, str) or not isinstance(holds, str) or types is _MISSING:
        return None
    _python(ctx, p.value_node("holds"), holds, "property", f"property {name}")
    return Property(name, holds, types, _doc(ctx, p), location=ctx.loc(node))


def _lowering(ctx: _Ctx, lo: _Obj, node: Node) -> Lowering | None:
    name, to, python = _get(ctx, lo, "name"), _get(ctx, lo, "to"), _get(ctx, lo, "python")
    if not all(isinstance(v, str) for v in (name, to, python)):
        return None
    domain, _, rest = to.partition("::")
    op, _, ver = rest.rpartition("-")
    if not domain or not op or not ver.isdigit():
        ctx.error(lo.value_node("to"), f"'to' must look like 'domain::Op-version', got {to!r}")
    _python(ctx, lo.value_node("python"), python, "lowering", f"lowering {name}")
    return Lowering(name, to, python, _doc(ctx, lo), location=ctx.loc(node))


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


# ---------------------------------------------------------------------------------------------
# examples: literal tensors checked against the version's declared types, ranks and attributes


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
    """One argument: a container (a mapping with ``type``) or a tensor."""
    if isinstance(node, MappingNode) and any(isinstance(k, ScalarNode) and k.value == "type" for k, _ in node.value):
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


# ---------------------------------------------------------------------------------------------
# trees of spec files


def spec_files(paths: Iterable[str]) -> list[str]:
    """Expand directories into their *.yaml files, sorted; files are kept as given."""
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                out.extend(os.path.join(root, f) for f in sorted(files) if f.endswith((".yaml", ".yml")))
        else:
            out.append(path)
    return out


def _file_keys(spec: OpSpec) -> tuple[tuple[str, ...], ...]:
    """What two ops of one project must not share: their spec file names ignoring case (macOS and
    Windows file systems ignore it), and the snake_case name of their generated modules
    (generated/kernels/<domain>/<snake>.py, generated/tests/...: 'GatherND' and 'Gather_ND' meet)."""
    from ..core.naming import snake  # the emitters' own rule

    domain = spec.domain.lower()
    return ("file", domain, spec.name.lower()), ("module", domain, snake(spec.name))


def load_specs(paths: Iterable[str]) -> tuple[list[OpSpec], list[Diagnostic]]:
    """Load many files; check that each (domain, op) is defined once, sits in its domain folder,
    and shares no file name with another op (see _file_keys)."""
    specs: list[OpSpec] = []
    diags: list[Diagnostic] = []
    seen: dict[tuple[str, str], OpSpec] = {}
    files: dict[tuple[str, ...], OpSpec] = {}
    paths = list(paths)
    roots = tuple(os.path.abspath(p) + os.sep for p in paths if os.path.isdir(p))
    for path in spec_files(paths):
        spec, file_diags = load_spec_file(path)
        diags.extend(file_diags)
        if spec is None or file_diags:
            continue
        parent = os.path.dirname(os.path.abspath(path))
        folder = os.path.basename(parent)
        key = (spec.domain, spec.name)
        # the layout is <spec folder>/<domain>/<Op>.yaml: checked below any folder given (whatever
        # its name), and for a file given on its own when its spec folder is called specs/
        in_domain_folder = (parent + os.sep).startswith(roots) and parent + os.sep not in roots
        if folder != spec.domain and (in_domain_folder or os.path.basename(os.path.dirname(parent)) == "specs"):
            diags.append(Diagnostic(spec.location, f"op {spec.name!r} of domain {spec.domain!r} is in folder "
                                                   f"{folder!r}; move it to "
                                                   f"{os.path.basename(os.path.dirname(parent))}/{spec.domain}/"))
        if key in seen:
            diags.append(Diagnostic(spec.location, f"{spec.domain}::{spec.name} is already defined in "
                                                   f"{seen[key].path}"))
            continue
        clash = next(((k, files[k]) for k in _file_keys(spec) if k in files), None)
        if clash is not None:
            (kind, _, shared), other = clash
            why = ("names that differ only in case are one file on case-insensitive file systems"
                   if kind == "file" else f"both generate the module {shared}.py")
            diags.append(Diagnostic(spec.location, f"{spec.domain}::{spec.name} clashes with "
                                                   f"{other.domain}::{other.name} ({other.path}): {why}; "
                                                   "rename one of them"))
            continue
        seen[key] = spec
        files.update(dict.fromkeys(_file_keys(spec), spec))
        specs.append(spec)
    return specs, diags


def load_specs_or_raise(paths: Iterable[str]) -> list[OpSpec]:
    specs, diags = load_specs(paths)
    if diags:
        raise SpecError(diags)
    return specs
