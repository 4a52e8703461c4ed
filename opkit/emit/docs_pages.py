"""Operator pages: one MyST page per op (``generated/docs/operators/<domain>/<Op>.md``).

The page follows the layout of ONNX's operator pages (labels ``(l-onnx-doc-Trilu)=`` and
``(l-onnx-op-trilu-14)=``, sections Version, Summary, Attributes, Inputs, Outputs, Type
Constraints, Examples, newest version first) and adds what that site lacks: differentiability and
homogeneity of every input and output, attribute defaults and value domains, rank rules, links
between the versions of an op, each version's change note and its diff against the previous
version (old -> new), the semantics formula, labelled rules, properties, lowerings, function bodies,
kernels, tolerances, examples as data plus a runnable snippet, and per-backend conformance status
when reports exist.

The emitter also writes ``generated/docs/operators/index.md`` (the toctree of every page, per
domain) and ``generated/docs/spec-fields.md`` (the spec field reference, rendered from the
published JSON Schema).

Everything here is a pure function of the loaded specs, plus the committed conformance reports
the scoreboard reads (``conformance/reports/*.json``, in file-name order; absent reports render
nothing): each version's Conformance section (opkit/emit/op_conformance.py) sums them up and links
the scoreboard's page of the op and the runtimes' findings pages.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import math
import os
import textwrap
from typing import Any

import jinja2

from ..spec.model import Attribute, ContainerValue, Example, FormalParameter, OpSpec, OpVersion, TensorValue
from ..core.onnx_types import INFINITE_ARITY
from ..core.markdown import fence, fence_ticks, longest_backtick_run, safe_inline, safe_markdown, safe_plain
from ..cases.onnx_model import DEFAULT_AI_ONNX_OPSET as COMPANION_OPSET
from ..cases.edges import EDGE_SHARE
from ..cases.edges import applicable as applicable_edges
from . import GenContext, header
from ..core.templating import environment

NAME = "docs_pages"
OWNED_DIRS = ("generated/docs/operators",)

PAGES_DIR = "generated/docs/operators"
SPEC_FIELDS_PATH = "generated/docs/spec-fields.md"
REPORTS_GLOB = "conformance/reports/*.json"  # the scoreboard's inputs (opkit test --report), not under generated/

def _env() -> jinja2.Environment:
    """The templates' environment (built once: compiling the page template dominates a page)."""
    return environment("docs")


# ---------------------------------------------------------------------------------------------
# labels and links


def doc_label(spec: OpSpec) -> str:
    """The page label: ONNX's ``l-onnx-doc-Trilu``; other domains add theirs for uniqueness."""
    if spec.domain == "ai.onnx":
        return f"l-onnx-doc-{spec.name}"
    return f"l-onnx-doc-{spec.domain}-{spec.name}"


def version_label(spec: OpSpec, since: int) -> str:
    """The label of one version: ONNX's ``l-onnx-op-trilu-14`` (lower case, as Sphinx stores it)."""
    if spec.domain == "ai.onnx":
        return f"l-onnx-op-{spec.name.lower()}-{since}"
    return f"l-onnx-op-{spec.domain.lower()}-{spec.name.lower()}-{since}"


def page_path(domain: str, name: str) -> str:
    return f"{PAGES_DIR}/{domain}/{name}.md"


def spec_path(ctx: GenContext, spec: OpSpec) -> str:
    if spec.path:
        rel = os.path.relpath(spec.path, ctx.root) if os.path.isabs(spec.path) else spec.path
        return rel.replace(os.sep, "/")
    return f"specs/{spec.domain}/{spec.name}.yaml"


def _upstream_link(spec: OpSpec) -> str:
    """Where the op's upstream documentation lives (ONNX, ORT contrib); the spec file otherwise."""
    return upstream_url(spec.domain, spec.name)


def upstream_url(domain: str, name: str) -> str:
    """The public page of a built-in op of ONNX's or onnxruntime's domains ("" for other domains)."""
    if domain == "ai.onnx":
        return f"https://github.com/onnx/onnx/blob/main/docs/Operators.md#{name}"
    if domain.startswith("ai.onnx."):
        return f"https://github.com/onnx/onnx/blob/main/docs/Operators-ml.md#{domain}.{name}"
    if domain == "com.microsoft":
        return f"https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md#{domain}.{name}"
    return ""


# ---------------------------------------------------------------------------------------------
# small text helpers


def _dedent(text: str) -> str:
    """Doc strings as ONNX's gen_doc prints them: dedented, blank edges dropped."""
    if not text:
        return ""
    lines = textwrap.dedent(text).strip("\n").splitlines()
    return "\n".join(line.rstrip() for line in lines).strip()


_RELATIVE_LINK = re.compile(r"\]\((?![a-zA-Z][a-zA-Z0-9+.-]*:|#|/)([^)\s]+?\.md)(#[^)\s]*)?\)")
_UPSTREAM_DOCS = {
    "onnx": "https://github.com/onnx/onnx/blob/main/docs/",
    "onnxruntime": "https://github.com/microsoft/onnxruntime/blob/main/docs/",
}


def absolute_links(text: str, source: tuple[tuple[str, str], ...]) -> str:
    """Imported docs link to pages of their own repository (``[broadcasting](Broadcasting.md)``);
    on our site those links would dangle, so they point at the upstream repository instead."""
    base = next((_UPSTREAM_DOCS[k] for k, _ in source if k in _UPSTREAM_DOCS), None)
    if base is None or "](" not in text:
        return text
    return _RELATIVE_LINK.sub(lambda m: f"]({base}{m.group(1)}{m.group(2) or ''})", text)


def _indent(text: str, prefix: str = "  ") -> str:
    """Indent continuation lines so a multi-line text stays inside its list item."""
    lines = text.splitlines()
    if not lines:
        return ""
    return "\n".join([lines[0]] + [(prefix + line) if line.strip() else "" for line in lines[1:]])


def _block(text: str) -> str:
    """A block text (code), trailing blank lines dropped."""
    return "\n".join(line.rstrip() for line in textwrap.dedent(text).strip("\n").splitlines())


def _wrapped_fence(text: str, lang: str) -> str:
    """A code block whose long lines wrap instead of scrolling (formulas, one-line properties):
    MyST's code-block directive with the class styled in docs/_static/opkit.css."""
    ticks = fence_ticks(text)
    return f"{ticks}{{code-block}} {lang}\n:class: opkit-wrap\n\n{text}\n{ticks}"


def plain(text: str, inline: bool = False, continues: bool = False) -> str:
    """Prose from opkit's extension fields (change notes, rule, property, lowering and example
    docs) is text that quotes Python (``2**31``, ``x_i``, ``a < b``): escape what markdown would
    read as emphasis, HTML or links, outside backtick code spans and fenced code blocks; MyST
    directives, roles, targets ... are shown as text too (:func:`opkit.core.markdown.safe_plain`).

    ``inline``: the text goes on one line of the page (a table cell, a list item's line): its
    lines are joined and nothing in it starts a block. ``continues``: its first line goes on after
    other text, the others follow (indented) as lines of the same list item."""
    return safe_plain(text, inline=inline, continues=continues)


def doc_markdown(text: str) -> str:
    """A spec's ``doc`` (ONNX's markdown, or whatever a project's specs hold) as it goes on a
    page: the markdown ONNX's docs use is kept, MyST directives, raw HTML, file-reading roles and
    links to local files are shown as text (:func:`opkit.core.markdown.safe_markdown`)."""
    return safe_markdown(text)


def _text(text: Any) -> str:
    """A name or short value from a spec (an attribute, example, rule, property name, a value
    domain) in running text: one line, MyST markup that could embed or run something made text."""
    return safe_markdown(" ".join(str(text).split()), inline=True)


def _span(text: Any) -> str:
    """Text from a spec as inline code, as it is (newlines made spaces), whatever backticks it
    holds (the span's fence is longer than any backtick run inside)."""
    text = " ".join(str(text).splitlines())
    if "`" not in text:
        return f"`{text}`"
    ticks = "`" * (longest_backtick_run(text) + 1)
    return f"{ticks} {text} {ticks}"


def _code(text: str) -> str:
    """Inline code that survives backticks inside."""
    text = " ".join(str(text).split())
    if "`" not in text:
        return f"`{text}`"
    ticks = "`" * (longest_backtick_run(text) + 1)
    return f"{ticks} {text} {ticks}"


def _cell(text: str) -> str:
    """Foreign text (a report's backend, case, message) for a markdown table cell: one line, as
    literal text (pipes, backticks, HTML, roles ... escaped)."""
    return safe_inline(text)


# ---------------------------------------------------------------------------------------------
# values


def _scalar(value: Any) -> str:
    """One element as the docs print it (numpy-like, but deterministic across numpy versions)."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    return str(value)


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _flat(item)]
    return [value]


# A tensor of more elements than this is shown summarised, as NumPy prints one: the first and last
# EDGE_ITEMS along each axis and "..." between (the page's snippet still carries every value).
SUMMARY_THRESHOLD = 200
EDGE_ITEMS = 3


def format_tensor(value: Any) -> str:
    """A nested value as aligned, bracketed text, e.g. ``[[4, 7],\\n [1, 2]]``."""
    if not isinstance(value, (list, tuple)):
        return _scalar(value)
    summarise = len(_flat(value)) > SUMMARY_THRESHOLD

    def shown(v: Any) -> list:
        return list(v[:EDGE_ITEMS]) + [...] + list(v[-EDGE_ITEMS:]) if summarise and len(v) > 2 * EDGE_ITEMS \
            else list(v)

    def leaves(v: Any) -> list:
        if not isinstance(v, (list, tuple)):
            return [v]
        return [x for item in shown(v) if item is not ... for x in leaves(item)]

    width = max((len(_scalar(x)) for x in leaves(value)), default=0)

    def render(v: Any, depth: int) -> str:
        if v is ...:
            return "...".rjust(width)
        if not isinstance(v, (list, tuple)):
            return _scalar(v).rjust(width)
        if not v:
            return "[]"
        if not isinstance(v[0], (list, tuple)):
            return "[" + ", ".join(render(x, depth + 1) for x in shown(v)) + "]"
        sep = ",\n" + "\n" * (_depth(v) - 2) + " " * (depth + 1)
        return "[" + sep.join(render(x, depth + 1) for x in shown(v)) + "]"

    return render(value, 0)


def _depth(v: Any) -> int:
    d = 0
    while isinstance(v, (list, tuple)) and v:
        d += 1
        v = v[0]
    return d


def _tensor_literal(value: Any) -> tuple[str, Any, tuple[int, ...] | None] | None:
    """(dtype, value, shape) of a tensor-valued attribute in an example ({dtype, value[, shape]})."""
    if isinstance(value, TensorValue):
        return value.dtype, value.value, value.shape
    if isinstance(value, dict) and "value" in value and "dtype" in value:
        shape = value.get("shape")
        return str(value["dtype"]), value["value"], tuple(shape) if shape is not None else None
    return None


def _attr_value(value: Any) -> str:
    literal = _tensor_literal(value)
    if literal is not None:
        dtype, val, _ = literal
        return f"{format_tensor(val)} ({dtype} tensor)".replace("\n", " ")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_attr_value(v) for v in value) + "]"
    if isinstance(value, float):
        return _scalar(value)
    return repr(value) if isinstance(value, str) else _scalar(value)


def _py_scalar(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "np.nan"
        if math.isinf(value):
            return "np.inf" if value > 0 else "-np.inf"
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    return repr(value)


def _py_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_py_value(v) for v in value) + "]"
    return _py_scalar(value)


# ---------------------------------------------------------------------------------------------
# fragments of a version


def _default_text(a: Attribute) -> str:
    if a.required:
        return "required"
    if a.has_default:
        return f"default is {_code(_attr_value(a.default))}"
    return "optional, no default"


def _attribute(a: Attribute, prose=None) -> dict[str, Any]:
    notes = []
    if a.domain is not None:
        notes.append("Allowed values: " + _text(a.domain.describe()) + ".")
    return {
        "name": _text(a.name),
        "type": a.type.upper(),
        "default": _default_text(a),
        "doc": _indent((prose or doc_markdown)(_dedent(a.doc))),
        "notes": notes,
    }


def _differentiability(p: FormalParameter) -> str:
    if p.differentiable is None:
        return "undefined differentiability"
    return "differentiable" if p.differentiable else "non-differentiable"


def _param(p: FormalParameter, prose=None) -> dict[str, Any]:
    flags = []
    if p.option == "optional":
        flags.append("optional")
    elif p.option == "variadic":
        flags.append(f"variadic, at least {p.min_arity}")
    else:
        flags.append("single")
    flags.append("homogeneous" if p.homogeneous else "heterogeneous")
    flags.append(_differentiability(p))
    if p.rank is not None:
        flags.append(p.rank.describe())
    return {"name": _text(p.name), "type": _text(p.type), "flags": ", ".join(flags),
            "doc": _indent((prose or doc_markdown)(_dedent(p.doc)))}


def _count(low: int, high: int, what: str) -> str:
    """ONNX's arity sentence: 'Between 1 and 2 inputs.'"""
    if high == INFINITE_ARITY:
        return f"Between {low} and {INFINITE_ARITY} {what}."
    if low == high:
        return ""
    return f"Between {low} and {high} {what}."


def _examples(spec: OpSpec, v: OpVersion) -> list[dict[str, Any]]:
    out = []
    for e in v.examples:
        out.append({
            "name": _text(e.name),
            "doc": plain(_dedent(e.doc)),
            "attributes": [_span(f"{k} = {_attr_value(val)}") for k, val in e.attributes],
            "defaults": [_span(f"{a.name} = {_attr_value(a.default)}") for a in v.attributes
                         if a.has_default and a.name not in dict(e.attributes)],
            "inputs": [_tensor_view(name, t) for name, t in _labelled(e.inputs)],
            "outputs": [_tensor_view(name, t) for name, t in _labelled(e.outputs)],
            "snippet": _snippet_fence(snippet(spec, v, e)),
        })
    return out


# A snippet longer than this is shown as plain text: highlighting gives every number of a large
# example its own <span>, which tripled the op pages' size (51 MB of site) and their build time.
HIGHLIGHT_LIMIT = 3000


def _snippet_fence(code: str) -> str:
    return fence(code, "python" if len(code) <= HIGHLIGHT_LIMIT else "text")


def _labelled(arguments) -> list[tuple[str, TensorValue | None]]:
    """Example arguments by label, a variadic parameter's as name[0], name[1], ..."""
    out: list[tuple[str, TensorValue | None]] = []
    for name, value in arguments:
        if isinstance(value, tuple):
            out.extend((f"{name}[{i}]", t) for i, t in enumerate(value))
        else:
            out.append((name, value))
    return out


def _tensor_view(name: str, t: TensorValue | ContainerValue | None) -> dict[str, Any]:
    if isinstance(t, ContainerValue):
        return _container_view(name, t)
    if t is None:
        return {"name": _text(name), "meta": "left empty: the optional input is omitted", "text": "", "tail": ""}
    if not t.shape:
        return {"name": _text(name), "meta": f"{_span(t.dtype)}, scalar", "text": "",
                "tail": ": " + _code(format_tensor(t.value))}
    shape = "shape `[" + ", ".join(str(d) for d in t.shape) + "]`"
    return {"name": _text(name), "meta": f"{_span(t.dtype)}, {shape}", "text": fence(format_tensor(t.value)), "tail": ":"}


def _container_view(name: str, c: ContainerValue) -> dict[str, Any]:
    """A sequence (its elements, one block each) or an optional (empty, or its element)."""
    if c.type.startswith("optional(") and not c.items:
        return {"name": _text(name), "meta": f"{_span(c.type)}, empty", "text": "", "tail": ""}
    blocks = []
    for i, item in enumerate(c.items):
        inner = _tensor_view(f"{i}", item)
        label = f"element {i}: " if c.type.startswith("seq(") else ""
        blocks.append(f"{label}{inner['meta']}" + (":\n\n" + inner["text"] if inner["text"] else inner["tail"]))
    count = f"{len(c.items)} element{'s' if len(c.items) != 1 else ''}" if c.type.startswith("seq(") else "holding"
    return {"name": _text(name), "meta": f"{_span(c.type)}, {count}", "text": "\n\n".join(blocks),
            "tail": ":" if blocks else ""}


# ---------------------------------------------------------------------------------------------
# runnable snippets


_NUMPY_TYPES = {
    "float": "np.float32", "double": "np.float64", "float16": "np.float16",
    "int8": "np.int8", "int16": "np.int16", "int32": "np.int32", "int64": "np.int64",
    "uint8": "np.uint8", "uint16": "np.uint16", "uint32": "np.uint32", "uint64": "np.uint64",
    "bool": "np.bool_", "string": "object", "complex64": "np.complex64", "complex128": "np.complex128",
}


def _np_dtype(dtype: str) -> str:
    return _NUMPY_TYPES.get(dtype) or f"helper.tensor_dtype_to_np_dtype(TensorProto.{dtype.upper()})"


def _np_array(t: TensorValue) -> str:
    if isinstance(t.value, (list, tuple)) and not _flat(t.value):
        dims = ", ".join(str(d) for d in t.shape)
        return f"np.zeros(({dims}{',' if len(t.shape) == 1 else ''}), dtype={_np_dtype(t.dtype)})"
    value = _py_value(t.value)
    if t.dtype in ("complex64", "complex128"):
        value = _py_value(_map(t.value, lambda x: complex(str(x).replace(" ", "")) if isinstance(x, str) else x))
    return f"np.array({value}, dtype={_np_dtype(t.dtype)})"


def _map(value: Any, fn) -> Any:
    if isinstance(value, (list, tuple)):
        return [_map(v, fn) for v in value]
    return fn(value)


def runner(v: OpVersion) -> str:
    """Which runtime a page's snippets use: opkit's reference backend wherever it can run the
    version (a kernel, or a function body to expand), else onnx's ReferenceEvaluator (the
    ai.onnx.ml and training ops opkit has no kernel for). onnx's evaluator is the second choice: it
    knows only ONNX's domains and gets some examples wrong (Trilu with k = int64 max overflows, and
    it zeroes strings to 0 instead of '')."""
    return "opkit reference backend" if v.kernel is not None or v.function else "onnx.reference"


def node_arguments(params, given: dict) -> list[tuple[str, TensorValue | None]]:
    """(node argument name, tensor) in formal order: '' with None for an argument left out
    (trailing ones dropped), a variadic parameter's arguments as name_0, name_1, ..."""
    out: list[tuple[str, TensorValue | None]] = []
    for p in params:
        value = given.get(p.name)
        if isinstance(value, tuple):
            out.extend((f"{p.name}_{i}", t) for i, t in enumerate(value))
        else:
            out.append((p.name if value is not None else "", value))
    while out and out[-1][1] is None:
        out.pop()
    return out


def snippet(spec: OpSpec, v: OpVersion, e: Example) -> str:
    """A standalone script that builds a one-node model for the example, runs it and compares."""
    inputs = node_arguments(v.inputs, dict(e.inputs))
    outputs = node_arguments(v.outputs, dict(e.outputs))
    in_names = [name for name, _ in inputs]
    out_names = [name for name, _ in outputs]
    feeds = [(name, t) for name, t in inputs if t is not None]
    produced = [(i, name, t) for i, (name, t) in enumerate(outputs) if t is not None]
    lines = ["import numpy as np", "from onnx import TensorProto, helper"]
    kind = runner(v)
    if kind == "onnx.reference":
        lines.append("from onnx.reference import ReferenceEvaluator")
    else:
        lines.append("from opkit.backends.reference import ReferenceBackend")
    lines.append("")
    attrs = "".join(f", {k}={_py_attribute(val)}" for k, val in e.attributes)
    if any(_tensor_literal(val) is not None for _, val in e.attributes):
        lines[1] = "from onnx import TensorProto, helper, numpy_helper"
    domain_arg = "" if spec.domain == "ai.onnx" else f", domain={spec.domain!r}"
    lines.append(f"node = helper.make_node({spec.name!r}, {in_names!r}, {out_names!r}{attrs}{domain_arg})")
    lines.append("graph = helper.make_graph(")
    lines.append(f"    [node], {e.name!r},")
    lines.append("    [" + ", ".join(_value_info(n, t, shaped=True) for n, t in feeds) + "],")
    lines.append("    [" + ", ".join(_value_info(n, t, shaped=False) for _, n, t in produced) + "],")
    lines.append(")")
    opsets = []
    if spec.domain == "ai.onnx":
        opsets.append(f"helper.make_opsetid('', {v.since})")
    else:
        opsets.append(f"helper.make_opsetid({spec.domain!r}, {v.since})")
        if v.function:  # its body is made of ai.onnx ops, which need an import of their own
            opsets.append(f"helper.make_opsetid('', {COMPANION_OPSET})")
    lines.append(f"model = helper.make_model(graph, opset_imports=[{', '.join(opsets)}])")
    lines.append("")
    if feeds:
        lines.append("feeds = {")
        for n, t in feeds:
            lines.append(f"    {n!r}: {_py_feed(t)},")
        lines.append("}")
    else:
        lines.append("feeds = {}")
    if kind == "onnx.reference":
        lines.append("results = ReferenceEvaluator(model).run(None, feeds)")
    else:
        lines.append("results = ReferenceBackend.run_model(model, feeds)")
    for i, (_, n, t) in enumerate(produced):  # graph outputs are the produced ones, in order
        lines.append(f"expected_{_ident(n)} = {_py_feed(t)}")
        lines.extend(_comparisons(v, e, f"results[{i}]", f"expected_{_ident(n)}", t))
    return "\n".join(lines)


def _value_info(name: str, t: TensorValue | ContainerValue, *, shaped: bool) -> str:
    if isinstance(t, ContainerValue):
        return f"helper.make_value_info({name!r}, {_type_proto(t.type)})"
    shape = list(t.shape) if shaped else None
    return f"helper.make_tensor_value_info({name!r}, TensorProto.{t.dtype.upper()}, {shape!r})"


def _type_proto(type_str: str) -> str:
    """Python that builds the TypeProto of an ONNX type string with onnx.helper."""
    if type_str.startswith("seq("):
        return f"helper.make_sequence_type_proto({_type_proto(type_str[4:-1])})"
    if type_str.startswith("optional("):
        return f"helper.make_optional_type_proto({_type_proto(type_str[9:-1])})"
    return f"helper.make_tensor_type_proto(TensorProto.{type_str[7:-1].upper()}, None)"


def _py_feed(t: TensorValue | ContainerValue) -> str:
    """A value as Python: an array, a list of them (a sequence), or an optional's element or None."""
    if isinstance(t, ContainerValue):
        if t.type.startswith("seq("):
            return "[" + ", ".join(_py_feed(item) for item in t.items) + "]"
        return _py_feed(t.items[0]) if t.items else "None"
    return _np_array(t)


def _comparisons(v: OpVersion, e: Example, actual: str, expected: str,
                 t: TensorValue | ContainerValue) -> list[str]:
    if isinstance(t, ContainerValue):
        if t.type.startswith("seq("):
            out = [f"assert len({actual}) == len({expected})"]
            for i, item in enumerate(t.items):
                out.extend(_comparisons(v, e, f"{actual}[{i}]", f"{expected}[{i}]", item))
            return out
        if not t.items:
            return [f"assert {actual} is None"]
        return _comparisons(v, e, actual, expected, t.items[0])
    if v.draws:  # the values are the runtime's own draw
        return [f"assert {actual}.dtype == {expected}.dtype and {actual}.shape == {expected}.shape"]
    return [_comparison(v, actual, expected, t.dtype, (e.rtol, e.atol))]


# How closely a snippet's result must match the example's expected output, per element type. Any
# runtime, and the reference kernel on another machine, may round a float differently (and the
# expected values in specs are printed decimals), so floats compare with a tolerance; integers,
# strings and bools are exact. A spec's own ``tolerances`` for the type win. (The full accuracy
# model, opkit/spec/accuracy.py and opkit/conformance/allowance.py, is what conformance runs use;
# one rtol/atol per type keeps the snippet readable.)
SNIPPET_TOLERANCE = {
    "float16": 1e-3, "bfloat16": 1e-2, "float": 1e-5, "complex64": 1e-5, "double": 1e-12, "complex128": 1e-12,
}


def snippet_tolerance(v: OpVersion, dtype: str) -> tuple[float, float] | None:
    """(rtol, atol) for an output of ``dtype``, or None: compared exactly."""
    for t in v.tolerances:
        if t.dtype == dtype and (t.rtol or t.atol):
            return t.rtol, t.atol
    amount = SNIPPET_TOLERANCE.get(dtype)
    if amount is None and dtype.startswith("float8"):
        amount = 1e-1
    return (amount, amount) if amount is not None else None


def _comparison(v: OpVersion, actual: str, expected: str, dtype: str,
                precision: tuple[float, float] = (0.0, 0.0)) -> str:
    tol = snippet_tolerance(v, dtype)
    if tol is not None and any(precision):  # the example's expected values are given only this precisely
        tol = (max(tol[0], precision[0]), max(tol[1], precision[1]))
    if tol is None:
        return f"np.testing.assert_array_equal({actual}, {expected})"
    return f"np.testing.assert_allclose({actual}, {expected}, rtol={tol[0]!r}, atol={tol[1]!r})"


def _py_attribute(value: Any) -> str:
    literal = _tensor_literal(value)
    if literal is None:
        return _py_value(value)
    dtype, val, shape = literal
    return f"numpy_helper.from_array({_np_array(TensorValue(dtype, shape or _shape_of(val), val))})"


def _shape_of(value: Any) -> tuple[int, ...]:
    shape = []
    while isinstance(value, (list, tuple)):
        shape.append(len(value))
        value = value[0] if value else None
    return tuple(shape)


def _ident(name: str) -> str:
    out = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
    return out if out and not out[0].isdigit() else f"_{out}"


# ---------------------------------------------------------------------------------------------
# diffs between consecutive versions (old -> new)


def _version_text(v: OpVersion) -> list[str]:
    """A version as YAML lines, the way its spec file reads (without `since` and `changes`)."""
    import yaml

    from ..spec import dump

    data = dump._version(v)  # noqa: SLF001 - the spec dumper is the one faithful text form
    data = {k: val for k, val in data.items() if k not in ("since", "changes")}
    if not data:
        return []
    text = yaml.dump(data, Dumper=dump._Dumper, sort_keys=False, allow_unicode=True, width=100,
                     default_flow_style=False)
    return text.splitlines()


def render_version_diff(spec: OpSpec, old: OpVersion, new: OpVersion) -> str:
    """The difference between two consecutive versions as markdown, old -> new.

    Uses ``opkit.spec.diff`` when it is there; otherwise a unified diff of the spec text.
    """
    try:
        from ..spec.diff import diff_versions, render_diff_markdown  # type: ignore[attr-defined]
    except ImportError:
        diff_versions = render_diff_markdown = None
    if diff_versions is not None and render_diff_markdown is not None:
        try:
            diff = diff_versions(old, new, op=spec.name, domain=spec.domain)
            doc_lines = tuple(getattr(diff, "doc", ()) or ())
            # the change note is printed by the page itself; the doc diff is fenced here, with a
            # fence longer than any backtick run inside it (ONNX docs hold ``` blocks)
            diff = dataclasses.replace(diff, changes="", doc=())
            text = render_diff_markdown(diff, heading=False).strip()
            if getattr(diff, "empty", False) and doc_lines:
                text = ""
            if doc_lines:
                text = (text + "\n\n" if text else "") + "**Documentation**\n\n" + fence("\n".join(doc_lines), "diff")
            return text
        except (TypeError, AttributeError, ValueError):
            pass
    return _fallback_diff(spec, old, new)


def _fallback_diff(spec: OpSpec, old: OpVersion, new: OpVersion) -> str:
    old_name, new_name = f"{spec.name}-{old.since}", f"{spec.name}-{new.since}"
    lines = list(difflib.unified_diff(_version_text(old), _version_text(new), old_name, new_name,
                                      n=2, lineterm=""))
    if not lines:
        return "No differences in the spec besides the version number."
    return fence("\n".join(lines), "diff")


# ---------------------------------------------------------------------------------------------
# conformance reports


def load_reports(root: str) -> list[dict[str, Any]]:
    """The committed reports, read the way the scoreboard reads them (one loader: a report the
    scoreboard shows is the report the op pages sum up)."""
    from .scoreboard import load

    return load(root)


def _scoreboard_built() -> bool:
    """Whether this ``opkit gen`` writes the scoreboard (opkit's own checkout): a project's site has
    no scoreboard pages for the section to link."""
    from ..core.project import active

    try:
        return active().builtin
    except Exception:  # noqa: BLE001 - no project to speak of: no scoreboard either
        return False


def _conformance(table, spec: OpSpec, since: int):
    """The version's Conformance section (None: no report has a case of it)."""
    if table is None:
        return None
    return table.version((spec.domain, spec.proto_domain or "ai.onnx"), spec.name, since)


# ---------------------------------------------------------------------------------------------
# the page


def _version_view(ctx: GenContext, spec: OpSpec, v: OpVersion, previous: OpVersion | None,
                  newer: OpVersion | None, reports: list[dict[str, Any]]) -> dict[str, Any]:
    domain_text = "`main`" if spec.domain == "ai.onnx" else f"`{spec.domain}`"
    prose = _prose(spec)
    upstream = _upstream_link(spec)
    since_text = (f"**since version {v.since}**" if spec.domain == "ai.onnx"
                  else f"**since version {v.since} of domain {spec.domain}**")
    if v.deprecated:
        since_text = since_text.replace("since", "deprecated since", 1)
    others = [s.since for s in reversed(spec.versions) if s.since != v.since]
    kernel = None
    if v.kernel is not None:
        k = v.kernel
        kernel = {
            "template": _span(k.template) if k.template else "",
            "params": [_span(f"{n} = {_attr_value(p)}") for n, p in k.params],
            "python": fence(_block(k.python), "python") if k.python else "",
            "same_as": k.same_as,
            "same_as_label": version_label(spec, k.same_as) if k.same_as is not None and spec.version(k.same_as) else "",
        }
    lowerings = []
    for lo in v.lowerings:
        target_label = target_url = ""
        if "::" in lo.to:
            tdomain, rest = lo.to.split("::", 1)
            tname, _, tver = rest.rpartition("-")
            target = ctx.spec(tdomain, tname)
            if target is not None and tver.isdigit():
                target_version = target.version_at(int(tver))
                if target_version is not None:
                    target_label = version_label(target, target_version.since)
            elif target is None:
                # a project op lowering to a built-in op: its page is not in this site, link upstream's
                target_url = upstream_url(tdomain, tname)
        lowerings.append({"name": _text(lo.name), "to": lo.to, "to_code": _span(lo.to), "target_label": target_label,
                          "target_url": target_url,
                          "doc": plain(_dedent(lo.doc), continues=True), "python": fence(_block(lo.python), "python")})
    return {
        "since": v.since,
        "label": version_label(spec, v.since),
        "title": f"{spec.name} - {v.since}",
        "upstream": upstream,
        "domain_text": domain_text,
        "function": "True" if v.has_function else "False",
        "support_level": f"SupportType.{v.support_level.upper()}",
        "shape_inference": "True" if v.shape_inference else "False",
        "data_propagation": "True" if v.data_propagation else "False",
        "determinism": v.determinism,
        "deprecated": v.deprecated,
        "since_text": since_text,
        "others": [(f"{spec.name} - {s}", version_label(spec, s)) for s in others],
        "previous": (f"{spec.name} - {previous.since}", version_label(spec, previous.since)) if previous else None,
        "newer": (f"{spec.name} - {newer.since}", version_label(spec, newer.since)) if newer else None,
        "changes": plain(_dedent(v.changes)),
        # the diff quotes names and values from the specs in its markdown: made safe like a doc
        "diff": doc_markdown(render_version_diff(spec, previous, v)) if previous is not None else "",
        "doc": doc_markdown(_dedent(v.doc)),
        "semantics": _wrapped_fence(_block(v.semantics), "text") if v.semantics else "",
        "attributes": [_attribute(a, prose) for a in v.attributes],
        "inputs_count": _count(v.min_input, v.max_input, "inputs"),
        "inputs": [_param(p, prose) for p in v.inputs],
        "outputs_count": _count(v.min_output, v.max_output, "outputs"),
        "outputs": [_param(p, prose) for p in v.outputs],
        "arity": _arity_note(v),
        "type_constraints": [
            {"name": _text(t.name), "types": ", ".join(_span(x) for x in sorted(t.types)),
             "doc": _indent(prose(_dedent(t.doc)))}
            for t in v.type_constraints
        ],
        "rules": [{"label": _text(r.label), "holds": _code(r.holds), "doc": plain(_dedent(r.doc), inline=True)}
                  for r in v.rules],
        "family": v.family,  # a closed vocabulary (spec.types.FAMILIES): safe as text
        # opkit's own text (opkit.cases.edges), chosen by what the version can hold
        "edges": [{"name": e.name, "doc": e.doc} for e in applicable_edges(v, swept=True)],
        "edges_drawn": bool(applicable_edges(v)),  # False: a family version, swept only
        "edge_share": EDGE_SHARE,
        "accuracy": _accuracy_line(spec, v),
        "functions": [{"opset": f.opset, "text": fence(_block(f.text))} for f in v.function],
        "context_dependent": ", ".join(str(o) for o in v.context_dependent_function),
        "properties": [{"name": _text(p.name), "types": _text(p.types or ""), "doc": plain(_dedent(p.doc), inline=True),
                        "holds": _wrapped_fence(_block(p.holds), "python")} for p in v.properties],
        "lowerings": lowerings,
        "kernel": kernel,
        "tolerances": [{"dtype": _span(t.dtype), "rtol": repr(t.rtol), "atol": repr(t.atol)} for t in v.tolerances],
        "examples": _examples(spec, v),
        "runner": runner(v),
        "conformance": _conformance(reports, spec, v.since),
    }


def _accuracy_line(spec: OpSpec, v: OpVersion) -> str:
    """One line: the accuracy class backends are held to, what it allows and where it comes from."""
    from ..spec.accuracy import accuracy_of

    acc = accuracy_of(spec.domain, spec.name, v)
    origin = {"spec": "stated by the spec", "default": "opkit's default for this op",
              "outputs": "no output holds floats", "unclassified": "unclassified, so the widest class"}[acc.source]
    line = f"Accuracy: {_span(acc.name)}, {acc.summary} ({origin})"
    t = v.tolerance
    if t is not None:
        amounts = [f"{t.ulps:g} ulp" if t.ulps else "", f"rtol {t.rtol:g}" if t.rtol else "",
                   f"atol {t.atol:g}" if t.atol else ""]
        line += f"; tolerance {' + '.join(a for a in amounts if a)}: {plain(_dedent(t.doc), inline=True)}"
    return line if line.endswith(".") else line + "."


def _prose(spec: OpSpec):
    """How to print attribute, parameter and type constraint docs: imported ones (onnx,
    onnxruntime) are markdown as upstream writes them (made safe: :func:`doc_markdown`);
    hand-written ones are text (``_Maybenull_`` is a C annotation, not emphasis)."""
    imported = any(k in _UPSTREAM_DOCS for k, _ in spec.source)
    return doc_markdown if imported else plain


def _arity_note(v: OpVersion) -> str:
    notes = []
    if v.input_range is not None:
        notes.append(f"inputs {_range(v.input_range)}")
    if v.output_range is not None:
        notes.append(f"outputs {_range(v.output_range)}")
    return "; ".join(notes)


def _range(r: tuple[int, int]) -> str:
    high = "unbounded" if r[1] == INFINITE_ARITY else str(r[1])
    return f"{r[0]} to {high}"


def render_page(ctx: GenContext, spec: OpSpec, reports=None, env: jinja2.Environment | None = None) -> str:
    """One op page. ``reports``: loaded conformance reports, or the OpConformance built from them
    once for all pages (building it means folding every report)."""
    from .op_conformance import OpConformance

    env = env or _env()
    if reports and not isinstance(reports, OpConformance):
        reports = OpConformance(ctx.root, list(reports))
    reports = reports or None
    versions = list(spec.versions)
    views = []
    for i, v in enumerate(versions):
        previous = versions[i - 1] if i > 0 else None
        newer = versions[i + 1] if i + 1 < len(versions) else None
        views.append(_version_view(ctx, spec, v, previous, newer, reports))
    views.reverse()  # newest first
    path = spec_path(ctx, spec)
    return absolute_links(tidy(env.get_template("page.md.j2").render(
        header=header(path, "<!--") + " -->",
        doc_label=doc_label(spec),
        name=spec.name,
        domain=spec.domain,
        proto_domain=spec.proto_domain,
        spec_path=path,
        source=", ".join(safe_markdown(f"{k} {v}", inline=True) for k, v in spec.source),
        op_doc=doc_markdown(_dedent(spec.doc)),
        scoreboard=reports.has_page((spec.domain, spec.proto_domain or "ai.onnx"), spec.name) if reports else "",
        versions=views,
    )), spec.source)


def tidy(text: str) -> str:
    """Collapse runs of blank lines and strip trailing spaces outside fenced code blocks."""
    out: list[str] = []
    fence = ""
    for line in text.splitlines():
        stripped = line.strip()
        if fence:
            out.append(line)
            if stripped.startswith(fence) and stripped.strip("`") == "":
                fence = ""
            continue
        if stripped.startswith("```"):
            fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
            out.append(line.rstrip())
            continue
        line = line.rstrip()
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"


def render_index(specs: list[OpSpec], env: jinja2.Environment | None = None) -> str:
    env = env or _env()
    domains: dict[str, list[OpSpec]] = {}
    for spec in specs:
        domains.setdefault(spec.domain, []).append(spec)
    groups = [
        {"domain": d, "ops": [{"name": s.name, "versions": ", ".join(str(v.since) for v in s.versions)}
                              for s in sorted(ops, key=lambda s: s.name)]}
        for d, ops in sorted(domains.items(), key=lambda kv: (kv[0] != "ai.onnx", kv[0]))
    ]
    return env.get_template("page_index.md.j2").render(
        header=header(f"{len(specs)} spec files under specs/", "<!--") + " -->", groups=groups)


def emit(ctx: GenContext) -> dict[str, str]:
    env = _env()
    from .op_conformance import OpConformance

    reports = load_reports(ctx.root) if _scoreboard_built() else []
    reports = OpConformance(ctx.root, reports) if reports else None
    specs = sorted(ctx.specs, key=lambda s: (s.domain, s.name))
    out = {page_path(s.domain, s.name): render_page(ctx, s, reports, env) for s in specs}
    out[f"{PAGES_DIR}/index.md"] = render_index(specs, env)
    from .spec_fields import render_spec_fields

    out[SPEC_FIELDS_PATH] = render_spec_fields(env)
    return out
