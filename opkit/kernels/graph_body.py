"""A graph attribute given as ONNX text or a GraphProto, evaluated with opkit's kernels.

Spec examples and generated cases carry a control-flow op's graph attributes as ONNX text (what
``onnx.parser.parse_graph`` reads); the kernel asks ``body_from_graph`` for a
``opkit.kernels.lib._control_flow.Body`` that runs the graph node by node, in graph order, through
the kernels of the ai.onnx op versions in force at the control-flow op's own opset. A nested graph
attribute becomes a Body too, and sees the names of the graph around it (ONNX's outer scope).
The reference backend builds its Bodies itself (functions, other domains, the model's scope).
"""

from __future__ import annotations

import functools

import numpy as np
import onnx
from onnx import helper, numpy_helper

from . import registry
from .lib._control_flow import Body


def type_string(tp: onnx.TypeProto) -> str | None:
    """``tensor(float)``, ``seq(tensor(int64))``, ``optional(...)`` of a TypeProto (None if unset)."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        code = tp.tensor_type.elem_type
        return f"tensor({helper.tensor_dtype_to_string(code)[len('TensorProto.'):].lower()})" if code else None
    if kind == "sequence_type":
        inner = type_string(tp.sequence_type.elem_type)
        return f"seq({inner})" if inner else None
    if kind == "optional_type":
        inner = type_string(tp.optional_type.elem_type)
        return f"optional({inner})" if inner else None
    return None


def shape_of(tp: onnx.TypeProto):
    """The declared shape of a tensor type: ints, None for a symbolic or unknown dim; None if unranked."""
    if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in tp.tensor_type.shape.dim)


@functools.lru_cache(maxsize=512)
def _parse(text: str) -> onnx.GraphProto:
    return onnx.parser.parse_graph(text)


def _attribute(attr: onnx.AttributeProto, opset: int, scope: dict):
    if attr.type == onnx.AttributeProto.GRAPH:
        return _body(attr.g, opset, scope, onnx.printer.to_text(attr.g))
    return attribute_value(attr)


def attribute_value(attr: onnx.AttributeProto):
    """A node attribute as kernels take it: strings decoded, tensors as arrays, the rest as onnx
    gives it (a graph stays a GraphProto here; ``_attribute`` makes it a Body)."""
    value = helper.get_attribute_value(attr)
    if attr.type == onnx.AttributeProto.STRING:
        return value.decode("utf-8")
    if attr.type == onnx.AttributeProto.STRINGS:
        return [v.decode("utf-8") for v in value]
    if attr.type == onnx.AttributeProto.TENSOR:
        return numpy_helper.to_array(value)
    if attr.type == onnx.AttributeProto.TENSORS:
        return [numpy_helper.to_array(v) for v in value]
    return value


def _run(graph: onnx.GraphProto, opset: int, outer: dict, values) -> tuple:
    env = dict(outer)
    env.update({t.name: numpy_helper.to_array(t) for t in graph.initializer})
    env.update(zip((i.name for i in graph.input), values))
    for node in graph.node:
        if node.domain not in ("", "ai.onnx"):
            raise NotImplementedError(f"{node.domain}::{node.op_type}: only ai.onnx ops run in a body")
        kernel = registry.kernel_for_opset("ai.onnx", node.op_type, opset)
        if kernel is None:
            raise NotImplementedError(f"{node.op_type} at opset {opset} has no reference kernel")
        attrs = {a.name: _attribute(a, opset, env) for a in node.attribute}
        args = [env[name] if name else None for name in node.input]
        results = kernel(*args, _n_outputs=len(node.output), **attrs)
        env.update((name, value) for name, value in zip(node.output, results) if name)
    return tuple(env[o.name] for o in graph.output)


def _body(graph: onnx.GraphProto, opset: int, outer: dict, text: str) -> Body:
    return Body(functools.partial(lambda *values: _run(graph, opset, outer, values)),
                len(graph.input), len(graph.output),
                tuple(type_string(o.type) for o in graph.output), tuple(shape_of(o.type) for o in graph.output),
                text)


def body_from_graph(graph, opset: int) -> Body:
    """A Body running ``graph`` (ONNX text or a GraphProto) with the kernels in force at ``opset``."""
    if isinstance(graph, str):
        return _body(_parse(graph), opset, {}, graph.strip())
    return _body(graph, opset, {}, onnx.printer.to_text(graph))


__all__ = ["body_from_graph", "type_string", "shape_of", "np"]
