"""The version fields that hold embedded Python, and the checks of that Python.

Rules, kernels (a body, or a template whose params are code), properties and lowerings: their
Python is checked for syntax when read (reported at its line in the YAML file) and for undefined
names once the whole version is known (``_check_names``); a kernel reused with ``same_as`` must
exist and fit the reusing version (``_check_same_as``).
"""

from __future__ import annotations

import re
import warnings

from . import scopes
from ..core import onnx_types as T
from .model import Kernel, Location, Lowering, OpVersion, Property, Rule
from .located_values import _MISSING, _Ctx, _Obj, _check_unique, _doc, _get, _items, _object
from .yamlsource import Node, ScalarNode


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
