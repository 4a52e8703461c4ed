"""Read a YAML file into a node tree that remembers where every value came from.

We compose (not construct) with libyaml's C parser when it is available: the nodes keep their
start marks, so every diagnostic can point at a line and column, and composing in C keeps loading
the whole specs/ tree well under a second. Values are constructed from the nodes by the loader,
which is where duplicate and unknown keys are caught.

Spec files come from anywhere (a pull request, a download), so nothing in one may crash or stall
the loader: before composing, the parser's event stream is checked for what specs never need and
the composer cannot take (deep nesting, explicit tags, anchors and aliases); see _event_problem.
"""

from __future__ import annotations

import re

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import (
    AliasEvent, CollectionEndEvent, CollectionStartEvent, DocumentEndEvent, NodeEvent, StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .diagnostics import Diagnostic
from .model import Location

try:  # libyaml: ~10x faster; the pure-Python loader gives the same marks
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

__all__ = ["MappingNode", "ScalarNode", "SequenceNode", "Node", "read_yaml", "node_location",
           "scalar_value", "plain_value", "shorten", "read_spec_bytes", "ConstructorError", "TAG_NAMES"]

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


MAX_BYTES = 8 << 20  # a hundred times the largest spec; bigger is a mistake, or meant to exhaust memory


def read_spec_bytes(path: str) -> bytes:
    """The file's bytes, but no more than one past MAX_BYTES (read_yaml reports such a file)."""
    with open(path, "rb") as f:
        return f.read(MAX_BYTES + 1)


def read_yaml(path: str, data: bytes | None = None) -> tuple[Node | None, list[Diagnostic]]:
    """Compose one YAML document. Never raises for bad content: returns diagnostics instead."""
    if data is None:
        try:
            data = read_spec_bytes(path)
        except OSError as exc:
            return None, [Diagnostic(Location(path, 1, 1), f"cannot read file: {exc.strerror or exc}")]
    if len(data) > MAX_BYTES:
        return None, [Diagnostic(Location(path, 1, 1), f"file is larger than {MAX_BYTES >> 20} MB; "
                                                       "a spec file must be smaller")]
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
    lines = _LINE_BREAK.split(text)
    try:
        problem = _event_problem(path, text, lines)
        if problem:
            return None, [problem]
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
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
        return None, [Diagnostic(_mark_location(path, mark, lines),
                                 f"invalid YAML: {str(exc).splitlines()[0]}")]
    if node is None:
        return None, [Diagnostic(Location(path, 1, 1),
                                 "file is empty; a spec is a mapping with keys 'op', 'domain' and 'versions'")]
    _clamp_marks(node, lines)
    return node, []


# Spec values nest about 10 deep. The C composer recurses once per level: some tens of thousands of levels
# (fewer in a thread) overflow the C stack and kill the interpreter, which no except clause catches.
MAX_DEPTH = 100
ANCHORS = "YAML anchors and aliases (&name, *name) are not supported in spec files; write the value out"


def _event_problem(path: str, text: str, lines: list[str]) -> Diagnostic | None:
    """The first thing in the first document that a spec may not hold, found in the parser's
    events (libyaml's parser keeps its own stack, so it takes any depth) before anything is composed:

    * nesting deeper than MAX_DEPTH (keys and scalars count as a level below their collection);
    * explicit tags (``!!binary``, ``!!python/object``, ``!custom``, ``!``): spec values are plain
      YAML, and constructing tagged values is where PyYAML runs arbitrary constructors;
    * anchors and aliases: a node reached twice breaks the recursive walks of the loader, and
      aliases of aliases expand exponentially (the "billion laughs").
    Reports the anchor rather than its alias, so the position does not depend on whether (or where)
    the anchor is used. Raises the parser's YAMLErrors like composing would."""
    loader = _Loader(text)
    try:
        depth = 0  # of the collection the next event is in (the document itself: 0)
        while True:
            event = loader.get_event()
            if event is None or isinstance(event, (DocumentEndEvent, StreamEndEvent)):
                return None  # a second document is the composer's to report
            if isinstance(event, CollectionEndEvent):
                depth -= 1
                continue
            if not isinstance(event, NodeEvent):  # the stream's and the document's start
                continue
            where = _mark_location(path, event.start_mark, lines)
            if isinstance(event, AliasEvent) or event.anchor is not None:
                return Diagnostic(where, ANCHORS)
            if event.tag is not None:
                return Diagnostic(where, f"tags are not allowed in specs ({shorten(_short_tag(event.tag))}); "
                                         "write the plain value (hint: quote it to make it a string)")
            if depth + 1 > MAX_DEPTH:
                return Diagnostic(where, f"values nest more than {MAX_DEPTH} levels deep")
            if isinstance(event, CollectionStartEvent):
                depth += 1
    finally:
        loader.dispose()


def _short_tag(tag: str) -> str:
    """'tag:yaml.org,2002:binary' -> '!!binary', as it was (most likely) written."""
    return "!!" + tag[len("tag:yaml.org,2002:"):] if tag.startswith("tag:yaml.org,2002:") else tag


def shorten(text: str, limit: int = 60) -> str:
    """``text`` cut to about ``limit`` characters, for quoting a value in a one-line message."""
    return text if len(text) <= limit else f"{text[:limit - 20]}...({len(text)} characters)"


def _clamp_marks(root: Node, lines: list[str]) -> None:
    """Move marks past the end of the file (see _clamp) back into it. Iterative: the tree is at
    most MAX_DEPTH deep here, but wide."""
    stack = [root]
    while stack:
        node = stack.pop()
        mark = node.start_mark
        if mark.line > len(lines) - 1:
            line, col = _clamp(mark.line, mark.column, lines)
            node.start_mark = yaml.Mark(mark.name, mark.index, line, col, None, None)
        if isinstance(node, SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, MappingNode):
            stack.extend(item for pair in node.value for item in pair)


MAX_INT_BITS = 1024  # far past int64/uint64; a bigger integer is a mistake, and Python will not
# even print one of more than 4300 digits


def scalar_value(node: ScalarNode):
    """Construct a scalar the way PyYAML's safe loader would (int, float, bool, None, str).
    Raises ConstructorError (with a one-line ``problem``) for what a spec cannot hold: dates
    (YAML reads an unquoted 2001-01-01 as one), integers that are too large or have no digits."""
    tag = node.tag
    if tag == "tag:yaml.org,2002:str":
        return node.value
    if tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float"):
        construct = _constructor.construct_yaml_int if tag.endswith("int") else _constructor.construct_yaml_float
        try:  # YAML's number patterns admit '0b_' (no digits); Python refuses > 4300 decimal digits
            value = construct(node)
        except ValueError:
            value = None
        if value is None or (isinstance(value, int) and value.bit_length() > MAX_INT_BITS):
            problem = (f"number {shorten(node.value)!r} is too large" if len(node.value) > 100 else
                       f"{node.value!r} is not a valid number (hint: quote it to make it a string)")
            raise ConstructorError(None, None, problem, node.start_mark)
        return value
    if tag == "tag:yaml.org,2002:bool":
        return _constructor.construct_yaml_bool(node)
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:timestamp":
        raise ConstructorError(None, None, f"{node.value!r} reads as a date, which a spec cannot hold "
                                           "(hint: quote it to make it a string)", node.start_mark)
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
