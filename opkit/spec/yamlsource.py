"""Read a YAML file into a node tree that remembers where every value came from.

We compose (not construct) with libyaml's C parser when it is available: the nodes keep their
start marks, so every diagnostic can point at a line and column, and composing in C keeps loading
the whole specs/ tree well under a second. Values are constructed from the nodes by the loader,
which is where duplicate and unknown keys are caught.
"""

from __future__ import annotations

import re

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .diagnostics import Diagnostic
from .model import Location

try:  # libyaml: ~10x faster; the pure-Python loader gives the same marks
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

__all__ = ["MappingNode", "ScalarNode", "SequenceNode", "Node", "read_yaml", "node_location",
           "scalar_value", "plain_value", "TAG_NAMES"]

_constructor = SafeConstructor()

TAG_NAMES = {
    "tag:yaml.org,2002:str": "a string",
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:bool": "a boolean",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "a date",
    "tag:yaml.org,2002:binary": "binary data",
}


def node_location(path: str, node: Node) -> Location:
    mark = node.start_mark
    return Location(path, mark.line + 1, mark.column + 1)


def _mark_location(path: str, mark, lines: list[str] | None = None) -> Location:
    if mark is None:
        return Location(path, 1, 1)
    line, col = _clamp(mark.line, mark.column, lines)
    return Location(path, line + 1, col + 1)


_LINE_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")  # what YAML counts as a line break


def _clamp(line: int, col: int, lines: list[str] | None) -> tuple[int, int]:
    """libyaml puts end-of-stream marks on the line after the last; when the file does not end
    with a line break, that line does not exist, so point just after the file's last character."""
    if lines is not None and line > len(lines) - 1:
        return len(lines) - 1, len(lines[-1])
    return line, col


def _offset_location(path: str, data: bytes, offset: int) -> Location:
    """The line and column (in characters, lines split as YAML does) of a byte offset."""
    lines = _LINE_BREAK.split(data[:offset].decode("utf-8", "replace"))
    return Location(path, len(lines), len(lines[-1]) + 1)


def _char_at(text: str, line: int, column: int) -> str:
    lines = text.split("\n")
    return lines[line][column:column + 1] if 0 <= line < len(lines) else ""


def read_yaml(path: str, data: bytes | None = None) -> tuple[Node | None, list[Diagnostic]]:
    """Compose one YAML document. Never raises for bad content: returns diagnostics instead."""
    if data is None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            return None, [Diagnostic(Location(path, 1, 1), f"cannot read file: {exc.strerror or exc}")]
    if b"\x00" in data:
        where = _offset_location(path, data, data.index(b"\x00"))
        return None, [Diagnostic(where, "file contains NUL bytes; a spec must be a UTF-8 YAML text file")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = _offset_location(path, data, exc.start)
        return None, [Diagnostic(where, f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x}); "
                                        "save it as UTF-8")]
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        lines = _LINE_BREAK.split(text)
        mark = exc.problem_mark or exc.context_mark
        message = str(exc.problem or exc.context or "invalid YAML").strip()
        if exc.context and exc.problem:
            started = exc.context_mark
            where = f" at line {started.line + 1}" if started and mark and started.line != mark.line else ""
            message = f"{exc.problem} ({exc.context}{where})"
        if mark is not None and _char_at(text, mark.line, mark.column) == "\t":
            message = "tab character; YAML indents with spaces only"
        elif "another document" in str(exc.problem):
            message = "a second YAML document ('---'); a spec file holds exactly one"
        return None, [Diagnostic(_mark_location(path, mark, lines), f"YAML syntax error: {message}")]
    except yaml.YAMLError as exc:  # e.g. reader errors for control characters
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "mark", None)
        if mark is None and hasattr(exc, "position"):
            # libyaml counts UTF-8 bytes of the text it was given (BOM removed); PyYAML characters
            encoded = text.encode("utf-8")
            prefix = encoded[:exc.position] if _Loader.__name__.startswith("C") else text[:exc.position].encode()
            return None, [Diagnostic(_offset_location(path, prefix, len(prefix)) if prefix else Location(path, 1, 1),
                                     f"invalid YAML: {exc}".split("\n")[0])]
        return None, [Diagnostic(_mark_location(path, mark, _LINE_BREAK.split(text)),
                                 f"invalid YAML: {str(exc).splitlines()[0]}")]
    if node is None:
        return None, [Diagnostic(Location(path, 1, 1),
                                 "file is empty; a spec is a mapping with keys 'op', 'domain' and 'versions'")]
    problem = _tree_problem(path, node, _LINE_BREAK.split(text))
    return (None, [problem]) if problem else (node, [])


MAX_DEPTH = 100


def _tree_problem(path: str, root: Node, lines: list[str]) -> Diagnostic | None:
    """Reject what the loader's recursive walks cannot take: aliases (a node reached twice, which
    also covers self-referencing and exponentially expanding ones) and absurdly deep nesting.
    Moves marks past the end of the file (see _clamp) back into it."""
    seen: set[int] = set()
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        mark = node.start_mark
        if mark.line > len(lines) - 1:
            line, col = _clamp(mark.line, mark.column, lines)
            node.start_mark = yaml.Mark(mark.name, mark.index, line, col, None, None)
        if id(node) in seen:
            return Diagnostic(node_location(path, node), "YAML anchors and aliases (&name, *name) are not "
                                                         "supported in spec files; write the value out")
        seen.add(id(node))
        if depth > MAX_DEPTH:
            return Diagnostic(node_location(path, node), f"values nest more than {MAX_DEPTH} levels deep")
        if isinstance(node, SequenceNode):
            stack.extend((child, depth + 1) for child in reversed(node.value))
        elif isinstance(node, MappingNode):
            for key, value in reversed(node.value):
                stack.extend(((value, depth + 1), (key, depth + 1)))
    return None


def scalar_value(node: ScalarNode):
    """Construct a scalar the way PyYAML's safe loader would (int, float, bool, None, str)."""
    tag = node.tag
    if tag == "tag:yaml.org,2002:str":
        return node.value
    if tag == "tag:yaml.org,2002:int":
        return _constructor.construct_yaml_int(node)
    if tag == "tag:yaml.org,2002:float":
        return _constructor.construct_yaml_float(node)
    if tag == "tag:yaml.org,2002:bool":
        return _constructor.construct_yaml_bool(node)
    if tag == "tag:yaml.org,2002:null":
        return None
    raise ConstructorError(None, None, f"unsupported YAML tag {tag!r}", node.start_mark)


def plain_value(node: Node, path: str, diags: list[Diagnostic]):
    """Construct lists/dicts/scalars from a node, reporting duplicate keys and odd tags."""
    if isinstance(node, ScalarNode):
        try:
            return scalar_value(node)
        except ConstructorError as exc:
            diags.append(Diagnostic(node_location(path, node), str(exc.problem)))
            return None
    if isinstance(node, SequenceNode):
        return [plain_value(item, path, diags) for item in node.value]
    result = {}
    for key_node, value_node in node.value:
        key = plain_value(key_node, path, diags)
        if isinstance(key, (list, dict)):
            diags.append(Diagnostic(node_location(path, key_node), "mapping keys must be scalars"))
            continue
        if key in result:
            diags.append(Diagnostic(node_location(path, key_node), f"duplicate key {key!r}"))
            continue
        result[key] = plain_value(value_node, path, diags)
    return result
