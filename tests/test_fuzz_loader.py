"""Fuzz the spec loader: whatever the bytes, ``load_spec_file`` returns diagnostics, never raises.

Inputs: random bytes, YAML-ish token soup, random YAML documents built from the spec's own keys,
and mutations of a real spec (deleted, swapped and duplicated lines, altered indentation, renamed
keys, truncation). Every diagnostic must point at a real position (line >= 1, col >= 1).
"""

from __future__ import annotations

import os
import re

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opkit.spec.diagnostics import Diagnostic
from opkit.spec.fields import OBJECTS
from opkit.spec.load import load_spec_file
from opkit.spec.model import OpSpec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRILU = os.path.join(ROOT, "specs", "ai.onnx", "Trilu.yaml")
with open(TRILU, "rb") as _f:
    TRILU_BYTES = _f.read()
TRILU_LINES = TRILU_BYTES.decode("utf-8", "replace").split("\n")

FUZZ = settings(max_examples=200, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
ALL_KEYS = sorted({k for fields in OBJECTS.values() for k in fields})


def check(data: bytes, path: str = "specs/ai.onnx/Trilu.yaml",
          loader=load_spec_file) -> tuple[OpSpec | None, list[Diagnostic]]:
    spec, diags = loader(path, data)  # must not raise
    assert isinstance(diags, list)
    # YAML's line breaks; the position just past the last one is still a place to point at
    lines = re.split(r"\r\n|[\n\r\x85\u2028\u2029]", data.decode("utf-8", "replace"))
    for d in diags:
        assert isinstance(d, Diagnostic)
        assert d.location.file == path
        assert isinstance(d.location.line, int) and 1 <= d.location.line <= len(lines), (d, len(lines))
        assert isinstance(d.location.col, int) and 1 <= d.location.col <= len(lines[d.location.line - 1]) + 1, d
        assert d.message and "\n" not in d.message, d
    if not diags:
        assert isinstance(spec, OpSpec)
    return spec, diags


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(data):
    check(data)


_TOKENS = (
    [f"{k}:" for k in ALL_KEYS] + ["\n", "\n  ", "\n    ", "\n- ", "  - ", "\t", " ", ": ", "- ", "[", "]",
                                   "{", "}", ",", "'", '"', "|", ">", "|2", "&a", "*a", "!!str", "!!binary",
                                   "!foo", "#", "---", "...", "?", "%YAML 1.2", "null", "~", "true", "no",
                                   "1", "-1", "0x1F", "1e3", ".inf", ".nan", "2001-01-01", "T", "tensor(float)",
                                   "tensor(flaot)", "seq(", "Trilu", "ai.onnx", "\\0", "\u00e9", "\ufeff",
                                   "\x85", "\u2028", "\x07", "\r"]
)


@FUZZ
@given(st.lists(st.sampled_from(_TOKENS) | st.text(max_size=5), max_size=60))
def test_yamlish_text(tokens):
    check("".join(tokens).encode("utf-8", "surrogatepass"))


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=12),
    st.sampled_from(["T", "tensor(float)", "tensor(int64)", "seq(tensor(float))", "float", "int", "ints",
                     "variadic", "optional", "single", "common", "return x", "x +", "1 +* 2", "ai.onnx::Abs-13",
                     "int64", "bool", "string", "inf", "Trilu", "\0"]),
)


def _documents():
    def mapping(children):
        keys = st.sampled_from(ALL_KEYS) | st.text(max_size=6) | st.integers(-2, 30)
        return st.dictionaries(keys, children, max_size=6)

    return st.recursive(_scalars, lambda children: st.lists(children, max_size=4) | mapping(children),
                        max_leaves=40)


@st.composite
def _spec_like(draw):
    """A mapping shaped like a spec, so the fuzz reaches the semantic checks and the examples."""
    doc = _documents()
    version = draw(st.dictionaries(st.sampled_from(list(OBJECTS["Version"])), doc, max_size=8))
    version.setdefault("since", draw(st.integers(-1, 30) | doc))
    if draw(st.booleans()):
        version["inputs"] = draw(st.lists(st.dictionaries(st.sampled_from(list(OBJECTS["Parameter"])), doc,
                                                          max_size=4), max_size=3))
    if draw(st.booleans()):
        version["examples"] = draw(st.lists(st.dictionaries(st.sampled_from(list(OBJECTS["Example"])), doc,
                                                            max_size=4), max_size=2))
    return {"op": "Trilu", "domain": draw(st.sampled_from(["ai.onnx", 3, None])), "versions": [version]}


@FUZZ
@given(_documents() | _spec_like())
def test_random_documents(document):
    text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False)
    check(text.encode("utf-8", "surrogatepass"))


@st.composite
def _mutated_trilu(draw) -> bytes:
    lines = list(TRILU_LINES)
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "swap", "indent", "dedent", "duplicate", "rename", "insert",
                                   "tab", "truncate"]))
        if op == "delete":
            del lines[i]
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "indent":
            lines[i] = " " * draw(st.integers(1, 4)) + lines[i]
        elif op == "dedent":
            lines[i] = lines[i][draw(st.integers(1, 4)):]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "rename":
            stripped = lines[i].lstrip(" -")
            key = stripped.split(":", 1)[0] if ":" in stripped else ""
            if key:
                lines[i] = lines[i].replace(key + ":", draw(st.sampled_from(ALL_KEYS)) + ":", 1)
        elif op == "insert":
            lines.insert(i, draw(st.sampled_from(_TOKENS)) + draw(st.text(max_size=8)))
        elif op == "tab":
            lines[i] = "\t" + lines[i].lstrip(" ")
        elif op == "truncate":
            lines = lines[:i] + [lines[i][: draw(st.integers(0, max(0, len(lines[i]) - 1)))]]
    return "\n".join(lines).encode("utf-8")


@FUZZ
@given(_mutated_trilu())
def test_mutated_spec(data):
    check(data)


@st.composite
def _python_blocks(draw) -> bytes:
    """Random Python in kernel/lowering bodies and rule/property expressions, in every scalar style."""
    src = draw(st.text(alphabet="()[]{}:=+-*/<> abcxyz\n\t'\"#\u00e9,.0123456789\\", max_size=40))
    indent = " " * draw(st.integers(4, 8))
    style = draw(st.sampled_from(["literal", "plain", "double", "single", "folded"]))
    if style == "literal":
        value = "|\n" + "".join(indent + line + "\n" for line in src.split("\n"))
    elif style == "folded":
        value = ">\n" + "".join(indent + line + "\n" for line in src.split("\n"))
    elif style == "double":
        value = '"' + src.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    elif style == "single":
        value = "'" + src.replace("'", "''").replace("\n", " ") + "'"
    else:
        value = src.replace("\n", " ")
    key = draw(st.sampled_from(["kernel:\n    python: ", "rules:\n  - label: C1\n    holds: ",
                                "properties:\n  - name: p\n    holds: ",
                                "lowerings:\n  - name: l\n    to: 'a::B-1'\n    python: "]))
    return ("op: Trilu\ndomain: ai.onnx\nversions:\n- since: 1\n  outputs: [{name: Y, type: tensor(float)}]\n  "
            + key + value + "\n").encode()


@FUZZ
@given(_python_blocks())
def test_python_blocks(data):
    check(data)


def test_unmutated_spec_loads():
    """The fuzz base is a valid spec, so mutations start from a spec that exercises every check."""
    spec, diags = check(TRILU_BYTES)
    assert spec is not None and spec.name == "Trilu"


def test_check_notices_bad_locations():
    """Guard against a vacuous fuzz: ``check`` rejects diagnostics without a real position."""
    import pytest

    from opkit.spec.model import Location

    for line, col in ((0, 1), (1, 0)):
        def fake(path, data, line=line, col=col):
            return None, [Diagnostic(Location(path, line, col), "bad")]

        with pytest.raises(AssertionError):
            check(b"", loader=fake)
    with pytest.raises(AssertionError):  # a clean result must come with a model
        check(b"", loader=lambda path, data: (None, []))


def _laughs(levels: int) -> bytes:
    """A 'billion laughs' document: each level aliases the previous one ten times."""
    lines = ["op: Trilu", "domain: ai.onnx", "doc: &l0 lol"]
    for i in range(1, levels + 1):
        lines.append(f"x{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]")
    lines.append(f"versions: [{{since: 1, outputs: [{{name: Y, type: tensor(float)}}], examples: [{{name: e, "
                 f"outputs: {{Y: {{dtype: float, value: *l{levels}}}}}}}]}}]")
    return "\n".join(lines).encode()


HOSTILE = {
    "self_alias": b"op: &a [*a]\n",
    "self_alias_in_example": b"op: Trilu\ndomain: ai.onnx\nversions:\n- since: 1\n  outputs: [{name: Y, type: "
                             b"tensor(float)}]\n  examples:\n  - name: e\n    outputs: {Y: &x [*x]}\n",
    "billion_laughs": _laughs(9),
    "deep_lists": b"op: Trilu\ndomain: ai.onnx\nversions:\n- since: 1\n  attributes:\n    a: {type: ints, default: "
                  + b"[" * 5000 + b"]" * 5000 + b"}\n",
    "deep_mappings": b"op: " + b"{a: " * 3000 + b"1" + b"}" * 3000 + b"\n",
    "nul_in_python": b'op: Trilu\ndomain: ai.onnx\nversions:\n- since: 1\n  kernel: {python: "return \\0"}\n',
    "many_docs": b"op: Trilu\n---\nop: Trilu\n",
    "bom_then_garbage": b"\xef\xbb\xbf\xff\xfe",
    "lone_surrogate_escape": b'op: "\\ud800"\n',
    "control_char": b"op: Tri\x07lu\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input(name):
    import time

    start = time.perf_counter()
    spec, diags = check(HOSTILE[name])
    assert diags, name
    assert time.perf_counter() - start < 2.0, "the loader must not expand aliases or recurse without bound"
