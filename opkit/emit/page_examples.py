"""A version's examples on its operator page: inputs and outputs as data, and a runnable snippet
that builds a one-node model, runs it and compares with the expected outputs."""

from __future__ import annotations

from typing import Any

from ..cases.onnx_model import DEFAULT_AI_ONNX_OPSET as COMPANION_OPSET
from ..core.markdown import fence
from ..spec.model import ContainerValue, Example, OpSpec, OpVersion, TensorValue
from .page_text import _code, _dedent, _span, _text, plain
from .page_values import _attr_value, _flat, _py_value, _tensor_literal, format_tensor


def _examples(spec: OpSpec, v: OpVersion) -> list[dict[str, Any]]:
    out = []
    for e in v.examples:
        out.append({
            "name": _text(e.name),
            "doc": plain(_dedent(e.doc)) + _graph_blocks(v, e),
            "attributes": [_span(f"{k} = graph (below)" if _is_graph(v, k) else f"{k} = {_attr_value(val)}")
                           for k, val in e.attributes],
            "defaults": [_span(f"{a.name} = {_attr_value(a.default)}") for a in v.attributes
                         if a.has_default and a.name not in dict(e.attributes)],
            "inputs": [_tensor_view(name, t) for name, t in _labelled(e.inputs)],
            "outputs": [_tensor_view(name, t) for name, t in _labelled(e.outputs)],
            "snippet": _snippet_fence(snippet(spec, v, e)),
        })
    return out


def _is_graph(v: OpVersion, name: str) -> bool:
    attr = v.attribute(name)
    return attr is not None and attr.type == "graph"


def _graph_text(text: str) -> str:
    """A graph attribute's ONNX text laid out one node a line (onnx.printer), as written if it does not parse."""
    import onnx.parser
    import onnx.printer

    try:
        return onnx.printer.to_text(onnx.parser.parse_graph(text))
    except Exception:  # noqa: BLE001 - shown as written
        return text


def _graph_blocks(v: OpVersion, e: Example) -> str:
    """The example's graph attributes as code blocks (data, never markup), after its doc."""
    blocks = [f"{_span(k)}:\n\n{fence(_graph_text(val))}" for k, val in e.attributes if _is_graph(v, k)]
    return "".join("\n\n" + b for b in blocks)


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
    """A sequence (its elements, one block each), an optional (empty, or its element) or a map
    (its entries, one line each)."""
    if c.type.startswith("map("):
        lines = [f"{format_tensor(k)}: {format_tensor(v)}" for k, v in c.items]
        return {"name": _text(name), "meta": f"{_span(c.type)}, {len(c.items)} entr{'ies' if len(c.items) != 1 else 'y'}",
                "text": fence("\n".join(lines)) if lines else "", "tail": ":" if lines else ""}
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
    attrs = "".join(f", {k}=onnx.parser.parse_graph({val!r})" if _is_graph(v, k) else f", {k}={_py_attribute(val)}"
                    for k, val in e.attributes)
    if any(_is_graph(v, k) for k, _ in e.attributes):
        lines.insert(2, "import onnx.parser")
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
    if type_str.startswith("map("):
        key, _, value = (part.strip() for part in type_str[4:-1].partition(","))
        value = value if value.startswith("tensor(") else f"tensor({value})"
        return f"helper.make_map_type_proto(TensorProto.{key.upper()}, {_type_proto(value)})"
    return f"helper.make_tensor_type_proto(TensorProto.{type_str[7:-1].upper()}, None)"


def _py_feed(t: TensorValue | ContainerValue) -> str:
    """A value as Python: an array, a list of them (a sequence), or an optional's element or None."""
    if isinstance(t, ContainerValue):
        if t.type.startswith("map("):  # a dict, as onnxruntime takes and returns maps
            return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in t.items) + "}"
        if t.type.startswith("seq("):
            return "[" + ", ".join(_py_feed(item) for item in t.items) + "]"
        return _py_feed(t.items[0]) if t.items else "None"
    return _np_array(t)


def _comparisons(v: OpVersion, e: Example, actual: str, expected: str,
                 t: TensorValue | ContainerValue) -> list[str]:
    if isinstance(t, ContainerValue):
        if t.type.startswith("map("):  # the same keys, values within the value type's tolerance
            value = t.type[4:-1].partition(",")[2].strip()
            value = value[7:-1] if value.startswith("tensor(") else value
            tol = SNIPPET_TOLERANCE.get(value)
            check = (f"np.isclose({actual}[k], v, rtol={tol}, atol={tol})" if tol else f"{actual}[k] == v")
            return [f"assert set({actual}) == set({expected})",
                    f"assert all({check} for k, v in {expected}.items())"]
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
